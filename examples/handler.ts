// A complete jetfan handler in TypeScript: prints each message it is given and acknowledges it.
import { connect } from "@jetfan/client";

const name = process.env.JETFAN_HANDLER ?? "builder";
const socket = process.env.JETFAN_SOCKET ?? "/run/jetfan/builder.sock";
const handler = await connect({ socket, handler: name }); // reconnects by itself
console.log(`[${name}] connected`);
process.once("SIGTERM", () => handler.close());

for await (const msg of handler) { // msg.key, .seq, .deliveries, .headers, .data, .json()
  console.log(`[${name}] got ${msg.key} (seq ${msg.seq}): ${msg.text()}`);
  msg.ack(); // or msg.nak(delayMs, reason), msg.term(reason), msg.working()
}
