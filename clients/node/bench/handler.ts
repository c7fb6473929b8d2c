// The benchmark's handler on @jetfan/client, a stand-in for `jetfan-bench handler` (the C++ client's;
// bench/jetfan_bench.cpp) with the same command line and output. bench/run.sh compiles it (tsc -p
// bench, into bench/dist/) and runs it:
//
//   node clients/node/bench/dist/handler.js SOCKET NAME LATENCY_FILE
//
// Prints ready_ns=<CLOCK_MONOTONIC ns> once connected, acks every message at once, and when jetfan
// closes the connection writes one publish-to-receipt latency in microseconds per line to
// LATENCY_FILE (each payload starts with its publish time in ns). SIGTERM and SIGINT are ignored, as
// the C++ one does, so it writes the file when the harness stops jetfan.
import { writeFileSync } from "node:fs";

import { connect } from "@jetfan/client";

const [socket, name, latencyFile] = process.argv.slice(2);
if (!socket || !name || !latencyFile) {
  process.stderr.write("usage: node handler.js SOCKET NAME LATENCY_FILE\n");
  process.exit(64);
}
for (const stop of ["SIGTERM", "SIGINT"] as const) process.on(stop, () => {});

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
const nowNs = (): number => originNs + performance.now() * 1e6;

const handler = await connect({ socket, handler: name, reconnect: false });
process.stdout.write(`ready_ns=${process.hrtime.bigint()}\n`);
const latencies: number[] = [];
for await (const msg of handler) {
  const data = msg.data;
  let sent = 0;
  for (let i = 0; i < data.length && i < 24 && data[i] >= 0x30 && data[i] <= 0x39; ++i) sent = sent * 10 + (data[i] - 0x30);
  const now = nowNs();
  if (sent > 0 && sent < now) latencies.push(Math.floor((now - sent) / 1000));
  msg.ack();
}
writeFileSync(latencyFile, latencies.length ? latencies.join("\n") + "\n" : "");
