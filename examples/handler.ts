// A complete jetfan handler in TypeScript: prints each build event and acknowledges it.
import { connect } from "@jetfan/client";

const handler = await connect({
  socket: process.env.JETFAN_SOCKET ?? "/run/jetfan/builder.sock",
  handler: process.env.JETFAN_HANDLER ?? "builder",
});
process.once("SIGTERM", () => handler.close());

for await (const msg of handler) {
  const event = msg.json<{ machine: number }>();
  console.log(`${msg.key} #${msg.seq}: machine ${event.machine}`);
  msg.ack();
}
