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

// process.hrtime() is CLOCK_MONOTONIC, the clock jetfan-bench stamps payloads with. As doubles the
// nanosecond values keep a precision of 256 ns, plenty for microseconds.
const nowNs = () => {
  const [s, ns] = process.hrtime();
  return s * 1e9 + ns;
};
const latencies = [];
const handler = await connect({ socket, handler: name, reconnect: false });
process.once("SIGTERM", () => void handler.close());
console.log(`ready_ns=${process.hrtime.bigint()}`);
for await (const msg of handler) {
  const data = msg.data;
  let end = 0;
  while (end < data.length && end < 24 && data[end] >= 0x30 && data[end] <= 0x39) ++end;
  if (end > 0) {
    const sent = Number(data.toString("latin1", 0, end));
    const now = nowNs();
    if (sent > 0 && sent < now) latencies.push(Math.floor((now - sent) / 1000));
  }
  msg.ack();
}
writeFileSync(latencyFile, latencies.length ? latencies.join("\n") + "\n" : "");
