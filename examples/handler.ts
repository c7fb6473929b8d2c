// A complete jetfan handler in TypeScript: prints each message it is given and acknowledges it.
import { connect } from "@jetfan/client";

const name = process.env.JETFAN_HANDLER ?? "builder";
const socket = process.env.JETFAN_SOCKET ?? "/run/jetfan/builder.sock";
const followUps = process.env.FOLLOW_UPS; // e.g. events.built: where follow-ups go, as FOLLOW_UPS.<key>
const handler = await connect({ socket, handler: name }); // reconnects by itself
console.log(`[${name}] connected`);
process.once("SIGTERM", () => handler.close());

for await (const msg of handler) { // msg.key, .seq, .deliveries, .headers, .data, .json()
  console.log(`[${name}] got ${msg.key} (seq ${msg.seq}): ${msg.text()}`);
  if (followUps) void msg.publish(`${followUps}.${msg.key}`, msg.data); // tied to msg: made once
  msg.ack(); // counted once the follow-up is stored; or msg.nak(delayMs, reason), msg.term(reason)
}
