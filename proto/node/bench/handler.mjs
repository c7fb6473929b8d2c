// The benchmark handler on @jetfan/client, with the interface of `jetfan-bench handler`
// (bench/jetfan_bench.cpp): acks every message at once; prints ready_ns=<CLOCK_MONOTONIC ns> once
// connected; when jetfan closes the connection (or on SIGTERM) writes one publish-to-receipt latency
// in microseconds per line to LATENCY_FILE, from the publish time at the start of each payload.
//
//   node proto/node/bench/handler.mjs SOCKET NAME LATENCY_FILE
import { writeFileSync } from "node:fs";

import { connect } from "../dist/index.js";

const [socket, name, latencyFile] = process.argv.slice(2);
if (!latencyFile) {
  process.stderr.write("usage: node handler.mjs SOCKET NAME LATENCY_FILE\n");
  process.exit(64);
}

// process.hrtime() and performance.now() both read CLOCK_MONOTONIC (libuv's hrtime), the clock
// jetfan-bench stamps payloads with; performance.now() is the cheaper call. As doubles the
// nanosecond values keep a precision of 256 ns, plenty for microseconds.
let originNs = 0;
for (let i = 0, best = Infinity; i < 20; ++i) {
  const before = performance.now();
  const hr = Number(process.hrtime.bigint());
  const after = performance.now();
  if (after - before < best) {
    best = after - before;
    originNs = hr - ((before + after) / 2) * 1e6;
  }
}
const nowNs = () => originNs + performance.now() * 1e6;
const latencies = [];
const handler = await connect({ socket, handler: name, reconnect: false });
process.once("SIGTERM", () => void handler.close());
console.log(`ready_ns=${process.hrtime.bigint()}`);
for await (const msg of handler) {
  const data = msg.data;
  let sent = 0;
  for (let i = 0; i < data.length && i < 24 && data[i] >= 0x30 && data[i] <= 0x39; ++i) sent = sent * 10 + (data[i] - 0x30);
  const now = nowNs();
  if (sent > 0 && sent < now) latencies.push(Math.floor((now - sent) / 1000));
  msg.ack();
}
writeFileSync(latencyFile, latencies.length ? latencies.join("\n") + "\n" : "");
