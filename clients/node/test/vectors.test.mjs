// The conformance vectors (proto/vectors/README.md) against this client's codec: every stream fed
// whole, cut in two at every byte boundary, and one byte at a time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import {
  ERROR_CODES, FrameParser, ProtocolError, PING_LINE, PONG_LINE,
  encodeAck, encodeHello, encodeNak, encodePub, encodeTerm, encodeWip,
} from "../dist/codec.js";

const dir = process.env.JETFAN_VECTORS_DIR ?? join(fileURLToPath(import.meta.url), "../../../../proto/vectors");

function filesOfKind(kind) {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")))
    .filter((file) => file.format === "jetfan-protocol-vectors 1" && file.kind === kind);
  assert.ok(files.length > 0, `no vector file of kind ${kind} in ${dir}`);
  return files.flatMap((file) => file.vectors);
}

// A byte string of the vectors: a latin-1 string, or pieces of them and {repeat, count}.
function bytes(value) {
  if (typeof value === "string") return Buffer.from(value, "latin1");
  return Buffer.concat(value.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p.repeat.repeat(p.count), "latin1"))));
}
const latin1 = (value) => bytes(value).toString("latin1");
const utf8Text = (value) => bytes(value).toString("utf8");
const textBytes = (text) => Buffer.from(text, "utf8").toString("latin1");

// The vectors' frame, with every byte string in one form, for comparison.
function expectedFrame(f) {
  switch (f.type) {
    case "READY":
      return { type: "READY", version: f.version, handler: latin1(f.handler), max_unconfirmed: f.max_unconfirmed, patterns: f.patterns.map(latin1) };
    case "MSG":
      // published, subject and server_deliveries are version 2's; a version 1 MSG has none.
      // traceparent is version 3's: null (or absent) for none, which the wire writes "-".
      return {
        type: "MSG", id: f.id, key: latin1(f.key), seq: f.seq, deliveries: f.deliveries, headers: latin1(f.headers), payload: latin1(f.payload),
        published: f.published ?? "0", subject: f.subject === undefined ? "" : latin1(f.subject),
        server_deliveries: f.server_deliveries ?? "0", traceparent: f.traceparent == null ? null : latin1(f.traceparent),
      };
    case "ERR":
      return { type: "ERR", reason: latin1(f.reason) };
    case "PUBOK":
      return { type: "PUBOK", id: f.id, stream: latin1(f.stream), seq: f.seq, duplicate: f.duplicate };
    case "PUBERR":
      return { type: "PUBERR", id: f.id, code: latin1(f.code), reason: latin1(f.reason) };
    default:
      return { type: f.type };
  }
}

// This codec's frame in the same form.
function actualFrame(f) {
  switch (f.type) {
    case "READY":
      return { type: "READY", version: f.version, handler: textBytes(f.handler), max_unconfirmed: f.maxUnconfirmed, patterns: f.patterns.map(textBytes) };
    case "MSG":
      return {
        type: "MSG", id: String(f.id), key: textBytes(f.key), seq: String(f.seq), deliveries: String(f.deliveries),
        headers: f.headers.toString("latin1"), payload: f.payload.toString("latin1"),
        published: String(f.published), subject: textBytes(f.subject), server_deliveries: String(f.serverDeliveries),
        traceparent: f.traceparent === undefined ? null : f.traceparent,
      };
    case "ERR":
      return { type: "ERR", reason: textBytes(f.reason) };
    case "PUBOK":
      return { type: "PUBOK", id: String(f.id), stream: textBytes(f.stream), seq: String(f.seq), duplicate: f.duplicate };
    case "PUBERR":
      return { type: "PUBERR", id: String(f.id), code: textBytes(f.code), reason: textBytes(f.reason) };
    default:
      return { type: f.type };
  }
}

function feed(stream, cuts) {
  const parser = new FrameParser();
  const frames = [];
  let from = 0;
  for (const end of [...cuts, stream.length]) {
    const chunk = Buffer.from(stream.subarray(from, end)); // a buffer of its own, as a read gives
    from = end;
    try {
      parser.feed(chunk, frames);
    } catch (error) {
      assert.ok(error instanceof ProtocolError, `not a ProtocolError: ${error}`);
      return { frames: frames.map(actualFrame), error: error.code };
    }
  }
  return { frames: frames.map(actualFrame), error: null };
}

test("vectors: what jetfan sends parses as the vectors say, whole, at every split point and byte by byte", () => {
  for (const v of filesOfKind("parse-frames")) {
    const stream = bytes(v.input);
    const expected = { frames: v.frames.map(expectedFrame), error: v.error };
    assert.deepEqual(feed(stream, []), expected, `${v.name}: whole`);
    for (let cut = 0; cut <= stream.length; ++cut) {
      const got = feed(stream, [cut]);
      if (JSON.stringify(got) !== JSON.stringify(expected)) assert.deepEqual(got, expected, `${v.name}: cut at byte ${cut}`);
    }
    const everyByte = Array.from({ length: Math.max(0, stream.length - 1) }, (_, i) => i + 1);
    assert.deepEqual(feed(stream, everyByte), expected, `${v.name}: byte by byte`);
  }
});

test("vectors: the error codes are the ones the vectors use", () => {
  const used = new Set([...filesOfKind("parse-frames"), ...filesOfKind("parse-commands")].map((v) => v.error).filter(Boolean));
  assert.deepEqual([...used].sort(), [...ERROR_CODES].sort());
});

// This client has no parser of what handlers send (jetfan's is C++): of the parse-commands vectors it
// uses only the error codes above. Each encode-commands vector is written as on a connection of its
// "version" (1 when absent): a NAK's "reason" (absent: "") is written from version 3 on. A PUB (version
// 3) is the one command with a body: its encoder gives bytes, not a string.
test("vectors: commands encode to the canonical bytes", () => {
  for (const v of filesOfKind("encode-commands")) {
    const f = v.frame;
    const version = v.version ?? 1;
    const id = f.id === undefined ? undefined : BigInt(f.id);
    let line;
    switch (f.type) {
      case "HELLO": line = encodeHello(utf8Text(f.handler), f.version); break;
      case "ACK": line = encodeAck(id); break;
      case "NAK": line = encodeNak(id, f.delay_ms === null ? undefined : BigInt(f.delay_ms), utf8Text(f.reason ?? ""), version); break;
      case "TERM": line = encodeTerm(id, utf8Text(f.reason)); break;
      case "WIP": line = encodeWip(id); break;
      case "PING": line = PING_LINE; break;
      case "PONG": line = PONG_LINE; break;
      case "PUB":
        line = encodePub(id, utf8Text(f.subject), bytes(f.headers), bytes(f.payload),
          f.tied_to == null ? undefined : BigInt(f.tied_to), f.index == null ? undefined : BigInt(f.index));
        break;
      default: assert.fail(`unknown command type ${f.type}`);
    }
    const written = typeof line === "string" ? Buffer.from(line, "utf8") : line;
    assert.equal(written.toString("latin1"), latin1(v.bytes), v.name);
  }
});

test("vectors: what jetfan writes for each frame reads back as that frame", () => {
  for (const v of filesOfKind("encode-frames")) {
    const expected = expectedFrame(v.frame);
    // jetfan writes each \r or \n of a reason as a space.
    if (expected.type === "ERR" || expected.type === "PUBERR") expected.reason = expected.reason.replace(/[\r\n]/g, " ");
    // Written on a connection of the vector's version: a READY of that version comes first.
    const version = v.version ?? 1;
    const ready = { type: "READY", version, handler: "h", max_unconfirmed: 1, patterns: ["#"] };
    const stream = Buffer.concat([Buffer.from(version === 1 ? "" : `READY ${version} h 1 #\r\n`), bytes(v.bytes)]);
    const frames = version === 1 ? [expected] : [ready, expected];
    assert.deepEqual(feed(stream, []), { frames, error: null }, v.name);
  }
});
