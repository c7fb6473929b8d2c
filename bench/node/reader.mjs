// Benchmark B, the alternative: one reader of the durable with consumer.consume(), dispatching in
// process to registered handlers and acking once each matching handler has returned: the
// in-process single reader in nats.js, the design jetfan replaces.
//
//   node reader.mjs URL STREAM DURABLE PREFIX LATENCY_FILE PATTERN[,PATTERN...] [PATTERN...]
//   (one argument per handler; each a comma list of its patterns)
import { connect } from "nats";
import { writeFileSync } from "node:fs";

const [url, stream, durable, prefix, latencyFile, ...handlerPatterns] = process.argv.slice(2);

// '*' one token, '#' zero or more anywhere, '>' one or more at the end.
function topicMatches(pattern, key) {
  const p = pattern.split("."), k = key.split(".");
  const match = (i, j) => {
    if (i === p.length) return j === k.length;
    if (p[i] === "#") return match(i + 1, j) || (j < k.length && match(i, j + 1));
    if (p[i] === ">") return j < k.length;
    return j < k.length && (p[i] === "*" || p[i] === k[j]) && match(i + 1, j + 1);
  };
  return match(0, 0);
}

const latencies = [];
const listeners = handlerPatterns.map((list) => ({
  patterns: list.split(","),
  handler: async (msg) => {
    const now = process.hrtime.bigint();
    const text = new TextDecoder().decode(msg.data.subarray(0, 24));
    const sent = BigInt(text.split(" ")[0] || "0");
    if (sent > 0n && sent < now) latencies.push(Number((now - sent) / 1000n));
  },
}));

const nc = await connect({ servers: url });
const js = nc.jetstream();
const consumer = await js.consumers.get(stream, durable);
const messages = await consumer.consume({ max_messages: 256 });
console.log(`ready_ns=${process.hrtime.bigint()}`);

let stopping = false;
process.on("SIGTERM", async () => {
  if (stopping) return;
  stopping = true;
  writeFileSync(latencyFile, latencies.join("\n") + (latencies.length ? "\n" : ""));
  await messages.close();
  await nc.drain();
  process.exit(0);
});

for await (const msg of messages) {
  const key = msg.subject.slice(prefix.length);
  const forThis = listeners.filter((l) => l.patterns.some((p) => topicMatches(p, key)));
  try {
    for (const l of forThis) await l.handler(msg);
    msg.ack();
  } catch {
    msg.nak(1000);
  }
}
