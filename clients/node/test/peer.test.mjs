// The client against a scripted jetfan on a real Unix socket, for what the daemon does not do on
// demand: PING a busy handler, send bytes that break the protocol, send ERR after READY, and show
// how the client's confirmations arrive on the wire. Everything else is tested against the real
// daemon (client.test.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { connect, JetfanError, Nak, ProtocolError, PublishError, Term } from "../dist/index.js";
import { waitFor } from "./mesh.mjs";

const quiet = () => {};
const it = (name, fn) => test(name, { timeout: 30_000 }, fn);

// A Unix socket server; each connection records the chunks it reads.
async function scriptedJetfan(t) {
  const dir = mkdtempSync(join(tmpdir(), "jetfan-peer-"));
  const path = join(dir, "jetfan.sock");
  const connections = [];
  const server = createServer((socket) => {
    const peer = { socket, chunks: [], text: () => Buffer.concat(peer.chunks).toString("latin1") };
    socket.on("data", (chunk) => peer.chunks.push(chunk));
    socket.on("error", () => {});
    connections.push(peer);
  });
  await new Promise((resolve) => server.listen(path, resolve));
  t.after(() => {
    for (const c of connections) c.socket.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const helloed = async (n) => {
    await waitFor(() => connections[n]?.text().includes("\n"), `HELLO on connection ${n}`);
    return connections[n];
  };
  return { path, connections, helloed };
}

function msg(id, payload = "x") {
  return `MSG ${id} k ${id} 1 0 ${payload.length}\r\n${payload}\r\n`;
}

// A MSG in protocol version 3's layout.
function msg3(id, payload = "x") {
  return `MSG ${id} k ${id} 1 0 ${payload.length} 0 events.k 1 -\r\n${payload}\r\n`;
}

// A PublishError with `code`, as assert.rejects checks it.
const publishError = (code) => (error) => error instanceof PublishError && error.code === code;

it("PING is answered with PONG while the app is busy with a message", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  assert.equal(peer.text(), "HELLO h 3\r\n");
  peer.socket.write("READY 1 h 8 #\r\n" + msg(1));
  const handler = await connecting;
  let release;
  const done = handler.process(async (m) => {
    await new Promise((resolve) => (release = resolve));
    assert.equal(m.text(), "x");
  });
  await waitFor(() => release, "the callback to start");
  peer.socket.write("PING\r\n");
  await waitFor(() => peer.text().endsWith("PONG\r\n"), "PONG");
  assert.ok(!peer.text().includes("ACK"));
  release();
  await waitFor(() => peer.text().endsWith("ACK 1\r\n"), "ACK 1");
  await handler.close();
  await done;
});

it("confirmations that arrive together go out in one write", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  let burst = "READY 1 h 16 #\r\n";
  for (let id = 1; id <= 10; ++id) burst += msg(id);
  peer.socket.write(burst);
  const handler = await connecting;
  let n = 0;
  for await (const m of handler) {
    m.ack();
    if (++n === 10) break;
  }
  await waitFor(() => peer.text().includes("ACK 10\r\n"), "ACK 10");
  const acks = peer.chunks.slice(1).map((c) => c.toString("latin1"));
  assert.deepEqual(acks, [Array.from({ length: 10 }, (_, i) => `ACK ${i + 1}\r\n`).join("")]);
});

it("bytes that break the protocol end the loop with ProtocolError and its code", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 1 h 8 #\r\n");
  const handler = await connecting;
  const loop = (async () => {
    for await (const m of handler) m.ack();
  })();
  peer.socket.write("MSG 1 k 1 1 0 3\r\nabcd\r\n");
  await assert.rejects(loop, (error) => error instanceof ProtocolError && error.code === "bad-body-end");
  assert.equal(handler.connected, false);
});

it("ERR after READY ends the loop with JetfanError and its reason; no reconnect", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, reconnectDelayMs: 10 });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 1 h 8 #\r\n");
  const handler = await connecting;
  const loop = (async () => {
    for await (const m of handler) m.ack();
  })();
  peer.socket.end("ERR control line longer than 1024 bytes\r\n");
  await assert.rejects(loop, (error) => error instanceof JetfanError && error.reason === "control line longer than 1024 bytes");
  assert.equal(jetfan.connections.length, 1);
});

it("a clean close with reconnect: false ends the loop; messages not handed out are dropped", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, reconnect: false });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 1 h 8 #\r\n" + msg(1) + msg(2));
  const handler = await connecting;
  const seen = [];
  for await (const m of handler) {
    seen.push(m);
    if (seen.length === 1) {
      peer.socket.end();
      await waitFor(() => m.stale, "the close");
    }
  }
  assert.equal(seen.length, 1);
  assert.equal(seen[0].ack(), false);
});

it("a clean close reconnects with HELLO; the new connection never sees the old connection's ack", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, reconnectDelayMs: 10 });
  const first = await jetfan.helloed(0);
  first.socket.write("READY 1 h 8 #\r\n" + msg(1));
  const handler = await connecting;
  const iterator = handler[Symbol.asyncIterator]();
  const old = (await iterator.next()).value;
  first.socket.end();
  const second = await jetfan.helloed(1);
  assert.equal(second.text(), "HELLO h 3\r\n");
  second.socket.write("READY 1 h 8 #\r\n" + msg(1, "y"));
  const fresh = (await iterator.next()).value;
  assert.equal(fresh.text(), "y");
  assert.equal(old.ack(), false);
  assert.equal(fresh.nak(5), true);
  await waitFor(() => second.text().includes("NAK"), "the NAK");
  assert.equal(second.text(), "HELLO h 3\r\nNAK 1 5\r\n");
  await iterator.return();
});

it("close() waits only for messages handed out and unconfirmed: after an ack it closes at once", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, closeTimeoutMs: 60_000 });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 1 h 8 #\r\n" + msg(1) + msg(2));
  const handler = await connecting;
  let closedFromInside = false;
  for await (const m of handler) {
    assert.equal(m.ack(), true);
    await handler.close(); // would wait for closeTimeoutMs (past this test's timeout) if it waited for anything else
    closedFromInside = true;
  }
  assert.ok(closedFromInside);
  await waitFor(() => peer.socket.readableEnded, "the connection to close");
  assert.equal(peer.text(), "HELLO h 3\r\nACK 1\r\n");
});

it("READY and ERR in one write: connect() resolves, then the loop throws JetfanError", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.end("READY 1 h 8 #\r\nERR going away\r\n");
  const handler = await connecting;
  await assert.rejects(
    (async () => {
      for await (const m of handler) m.ack();
    })(),
    (error) => error instanceof JetfanError && error.reason === "going away",
  );
});

it("process() with plain and async callbacks: return ACKs, a throw NAKs, Term TERMs, Nak NAKs with a delay, own confirmations stand", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  const payloads = ["ok", "throw", "term", "nak", "self", "async-ok", "async-throw", "async-term"];
  peer.socket.write("READY 1 h 16 #\r\n" + payloads.map((p, i) => msg(i + 1, p)).join(""));
  const handler = await connecting;
  const done = handler.process(
    (m) => {
      switch (m.text()) {
        case "throw": throw new Error("boom");
        case "term": throw new Term("bad input");
        case "nak": throw new Nak(250);
        case "self": m.nak(7); return;
        case "async-ok": return Promise.resolve();
        case "async-throw": return Promise.reject(new Error("later"));
        case "async-term": return (async () => { throw new Term("later bad"); })();
        default: return;
      }
    },
    { concurrency: 4 },
  );
  // Version 1: the throws' NAKs have no reason (version 3 below has them).
  const expected = ["ACK 1", "NAK 2", "TERM 3 bad input", "NAK 4 250", "NAK 5 7", "ACK 6", "NAK 7", "TERM 8 later bad"];
  await waitFor(() => expected.every((line) => peer.text().includes(`${line}\r\n`)), "every confirmation");
  await handler.close();
  await done;
  const lines = peer.text().split("\r\n").filter(Boolean).slice(1).sort();
  assert.deepEqual(lines, [...expected].sort());
});

it("against a jetfan that speaks only version 1, the client falls back to version 1 at once", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const first = await jetfan.helloed(0);
  assert.equal(first.text(), "HELLO h 3\r\n");
  first.socket.end("ERR protocol version 3 is not supported; this jetfan speaks version 1\r\n");
  const second = await jetfan.helloed(1);
  assert.equal(second.text(), "HELLO h 1\r\n");
  second.socket.write("READY 1 h 8 #\r\n" + msg(1));
  const handler = await connecting;
  assert.equal(handler.ready.version, 1);
  const iterator = handler[Symbol.asyncIterator]();
  const m = (await iterator.next()).value;
  assert.equal(m.text(), "x");
  assert.equal(m.published, undefined);
  assert.equal(m.subject, undefined);
  assert.equal(m.serverDeliveries, undefined);
  m.ack();
  await waitFor(() => second.text().includes("ACK 1"), "the ACK");
  await iterator.return();
});

it("in version 2, a message has its publish time as a Date, its subject and the server's count", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 2 h 8 #\r\nMSG 1 k 1 1 0 1 1700000000123456789 events.k 3\r\nx\r\n");
  const handler = await connecting;
  assert.equal(handler.ready.version, 2);
  const iterator = handler[Symbol.asyncIterator]();
  const m = (await iterator.next()).value;
  assert.ok(m.published instanceof Date);
  assert.equal(m.published.toISOString(), "2023-11-14T22:13:20.123Z");
  assert.equal(m.subject, "events.k");
  assert.equal(m.key, "k");
  assert.equal(m.deliveries, 1);
  assert.equal(m.serverDeliveries, 3);
  assert.equal(m.traceparent, undefined); // version 3's
  m.ack();
  await iterator.return();
});

it("in version 3, a message has the traceparent of jetfan's delivery span, or none for \"-\"", async (t) => {
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write(
    "READY 3 h 8 #\r\n" +
      `MSG 1 k 1 1 0 1 1700000000123456789 events.k 1 ${traceparent}\r\nx\r\n` +
      "MSG 2 k 2 1 0 1 1700000000123456789 events.k 1 -\r\ny\r\n",
  );
  const handler = await connecting;
  assert.equal(handler.ready.version, 3);
  const iterator = handler[Symbol.asyncIterator]();
  const traced = (await iterator.next()).value;
  const untraced = (await iterator.next()).value;
  assert.equal(traced.text(), "x");
  assert.equal(traced.subject, "events.k");
  assert.equal(traced.traceparent, traceparent);
  assert.equal(untraced.text(), "y");
  assert.equal(untraced.traceparent, undefined);
  traced.ack();
  untraced.ack();
  await waitFor(() => peer.text().includes("ACK 2"), "the ACKs");
  await iterator.return();
});

it("in version 3, a traceparent that is not one breaks the protocol (bad-traceparent)", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 3 h 8 #\r\n");
  const handler = await connecting;
  const loop = (async () => {
    for await (const m of handler) m.ack();
  })();
  peer.socket.write("MSG 1 k 1 1 0 1 0 events.k 1 00-zz\r\nx\r\n");
  await assert.rejects(loop, (error) => error instanceof ProtocolError && error.code === "bad-traceparent");
});

it("in version 3, a PUBOK or PUBERR answering no PUB that waits ends the loop with ProtocolError (unexpected-frame)", async (t) => {
  for (const answer of ["PUBOK 1 ORDERS 42 0", "PUBERR 2 not-allowed no publish.subjects"]) {
    const jetfan = await scriptedJetfan(t);
    const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, reconnectDelayMs: 10 });
    const peer = await jetfan.helloed(0);
    peer.socket.write("READY 3 h 8 #\r\n");
    const handler = await connecting;
    const loop = (async () => {
      for await (const m of handler) m.ack();
    })();
    peer.socket.write(`${answer}\r\n`);
    const verb = answer.split(" ")[0];
    await assert.rejects(
      loop,
      (error) => error instanceof ProtocolError && error.code === "unexpected-frame" && error.message.includes(`sent ${verb} for request`),
    );
    assert.equal(handler.connected, false);
    assert.equal(jetfan.connections.length, 1); // not reconnected
  }
});

it("protocolVersion 1 asks for version 1 only", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, protocolVersion: 1 });
  const peer = await jetfan.helloed(0);
  assert.equal(peer.text(), "HELLO h 1\r\n");
  peer.socket.write("READY 1 h 8 #\r\n");
  const handler = await connecting;
  assert.equal(handler.ready.version, 1);
  await handler.close();
});

it("jetfan 0.1.0 answers HELLO h 3 with READY 2: version 2 is spoken, a nak's reason is left out", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  assert.equal(peer.text(), "HELLO h 3\r\n");
  peer.socket.write("READY 2 h 8 #\r\nMSG 1 k 1 1 0 1 1700000000123456789 events.k 1\r\nx\r\nMSG 2 k 2 1 0 1 0 events.k 1\r\ny\r\n");
  const handler = await connecting;
  assert.equal(handler.ready.version, 2);
  const iterator = handler[Symbol.asyncIterator]();
  const first = (await iterator.next()).value;
  const second = (await iterator.next()).value;
  assert.equal(first.subject, "events.k");
  assert.equal(first.nak(100, "database down"), true);
  assert.equal(second.nak(undefined, "database down"), true);
  await waitFor(() => peer.text().includes("NAK 2"), "the NAKs");
  assert.equal(peer.text(), "HELLO h 3\r\nNAK 1 100\r\nNAK 2\r\n");
  await iterator.return();
});

it("in version 3, a nak's reason is written: after its delay, or after \"-\" without one; on one line", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  let burst = "READY 3 h 8 #\r\n";
  for (let id = 1; id <= 5; ++id) burst += `MSG ${id} k ${id} 1 0 1 1700000000123456789 events.k 1 -\r\nx\r\n`;
  peer.socket.write(burst);
  const handler = await connecting;
  assert.equal(handler.ready.version, 3);
  const iterator = handler[Symbol.asyncIterator]();
  const m = [];
  for (let i = 0; i < 5; ++i) m.push((await iterator.next()).value);
  assert.equal(m[0].subject, "events.k"); // MSG in version 3's layout
  assert.equal(m[0].traceparent, undefined); // "-": jetfan does not trace it
  assert.equal(m[0].nak(250, "upstream 503"), true);
  assert.equal(m[1].nak(undefined, "database down"), true);
  assert.equal(m[2].nak(), true);
  assert.equal(m[3].nak(0, "caf\u00e9\r\nferm\u00e9"), true);
  assert.equal(m[4].nak(10), true);
  assert.equal(m[4].nak(10, "again"), false); // confirmed already
  await waitFor(() => peer.text().includes("NAK 5"), "the NAKs");
  assert.equal(
    Buffer.concat(peer.chunks).toString("utf8"),
    "HELLO h 3\r\nNAK 1 250 upstream 503\r\nNAK 2 - database down\r\nNAK 3\r\nNAK 4 0 caf\u00e9  ferm\u00e9\r\nNAK 5 10\r\n",
  );
  await iterator.return();
});

it("in version 3, process() NAKs a throw with the error's message as the reason, and a Nak with its own", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const logged = [];
  const connecting = connect({ socket: jetfan.path, handler: "h", log: (line) => logged.push(line) });
  const peer = await jetfan.helloed(0);
  const payloads = ["throw", "async-throw", "nak", "nak-bare", "string", "empty"];
  let burst = "READY 3 h 16 #\r\n";
  payloads.forEach((p, i) => (burst += `MSG ${i + 1} k ${i + 1} 1 0 ${p.length} 0 events.k 1 -\r\n${p}\r\n`));
  peer.socket.write(burst);
  const handler = await connecting;
  const done = handler.process(
    (m) => {
      switch (m.text()) {
        case "throw": throw new Error("database down\nretry later");
        case "async-throw": return Promise.reject(new TypeError("cannot read x"));
        case "nak": throw new Nak(250, "busy");
        case "nak-bare": throw new Nak();
        case "string": throw "plain string";
        case "empty": throw new Error("");
        default: return;
      }
    },
    { concurrency: 8 },
  );
  const expected = ["NAK 1 - database down retry later", "NAK 2 - cannot read x", "NAK 3 250 busy", "NAK 4", "NAK 5 - plain string", "NAK 6"];
  await waitFor(() => expected.every((line) => peer.text().includes(`${line}\r\n`)), "every NAK");
  await handler.close();
  await done;
  const lines = peer.text().split("\r\n").filter(Boolean).slice(1).sort();
  assert.deepEqual(lines, [...expected].sort());
  assert.equal(logged.filter((line) => line.includes("failed, NAK")).length, 4); // not the Naks
});

it("a protocolVersion this client does not speak (1 to 3) is a RangeError", async () => {
  for (const protocolVersion of [0, 4, 2.5]) {
    await assert.rejects(connect({ socket: "/nonexistent", handler: "h", protocolVersion }), RangeError);
  }
});

it("PUB on the wire: request ids count up, a tied one names its delivery and index (call order, or given), a turn's lines go in one write", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 3 h 8 #\r\n" + msg3(7));
  const handler = await connecting;
  const iterator = handler[Symbol.asyncIterator]();
  const m = (await iterator.next()).value;
  const untied = handler.publish("out.a", "hi", { headers: { "X-A": "1" } });
  const tied = [m.publish("out.b", Buffer.from([0, 13, 10])), m.publish("out.c", new Uint8Array()), m.publish("out.d", "x", { index: 7 })];
  assert.equal(m.ack(), true);
  await waitFor(() => peer.text().includes("ACK 7"), "the ACK");
  const written = peer.chunks.slice(1).map((c) => c.toString("latin1"));
  assert.deepEqual(written, [
    "PUB 1 out.a 20 22\r\nNATS/1.0\r\nX-A: 1\r\n\r\nhi\r\n" +
      "PUB 2 out.b 0 3 7 0\r\n\x00\r\n\r\n" +
      "PUB 3 out.c 0 0 7 1\r\n\r\n" +
      "PUB 4 out.d 0 1 7 7\r\nx\r\n" +
      "ACK 7\r\n",
  ]);
  // Answers in any order, a MSG among them.
  peer.socket.write("PUBOK 3 OUT 12 0\r\n" + msg3(8) + "PUBERR 1 refused maximum messages exceeded\r\nPUBOK 2 OUT 11 1\r\nPUBOK 4 OUT 13 0\r\n");
  await assert.rejects(untied, (e) => publishError("refused")(e) && e.reason === "maximum messages exceeded" && e.subject === "out.a");
  assert.deepEqual(await Promise.all(tied), [
    { stream: "OUT", seq: 11, duplicate: true },
    { stream: "OUT", seq: 12, duplicate: false },
    { stream: "OUT", seq: 13, duplicate: false },
  ]);
  const next = (await iterator.next()).value;
  assert.equal(next.seq, 8);
  next.ack();
  await iterator.return();
});

it("the connection ends with publishes waiting: each rejects connection-lost; a stale message's publish is not sent, nor one after close()", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet, reconnectDelayMs: 10 });
  const first = await jetfan.helloed(0);
  first.socket.write("READY 3 h 8 #\r\n" + msg3(1));
  const handler = await connecting;
  const iterator = handler[Symbol.asyncIterator]();
  const m = (await iterator.next()).value;
  const waiting = [handler.publish("out.a", "x"), m.publish("out.b", "y")];
  await waitFor(() => first.text().includes("PUB 2"), "the PUBs");
  first.socket.destroy();
  for (const p of waiting) await assert.rejects(p, publishError("connection-lost"));
  const second = await jetfan.helloed(1);
  second.socket.write("READY 3 h 8 #\r\n");
  await waitFor(() => handler.connected, "the reconnect");
  assert.equal(m.stale, true);
  await assert.rejects(m.publish("out.c", "z"), publishError("not-in-flight"));
  // A new connection counts its request ids from 1 again.
  const fresh = handler.publish("out.d", "w");
  await waitFor(() => second.text().includes("\r\nw\r\n"), "the PUB");
  second.socket.write("PUBOK 1 OUT 5 0\r\n");
  assert.deepEqual(await fresh, { stream: "OUT", seq: 5, duplicate: false });
  assert.equal(second.text(), "HELLO h 3\r\nPUB 1 out.d 0 1\r\nw\r\n"); // nothing of the stale message
  await iterator.return();
  await assert.rejects(handler.publish("out.e", "v"), publishError("not-connected"));
});

it("refused without sending: a message confirmed before its publish, a bad subject or header, and any publish on a version 2 connection", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 3 h 8 #\r\n" + msg3(1));
  const handler = await connecting;
  const iterator = handler[Symbol.asyncIterator]();
  const m = (await iterator.next()).value;
  await assert.rejects(handler.publish("out a", "x"), TypeError);
  await assert.rejects(handler.publish("out.a", "x", { headers: { "X-A": "1\r\nX-B: 2" } }), TypeError);
  await assert.rejects(handler.publish("out.a", "x", { headers: { "X A": "1" } }), TypeError);
  await assert.rejects(handler.publish(`out.${"a".repeat(1100)}`, "x"), RangeError);
  m.ack();
  await assert.rejects(m.publish("out.a", "x"), publishError("not-in-flight"));
  await waitFor(() => peer.text().includes("ACK 1"), "the ACK");
  assert.equal(peer.text(), "HELLO h 3\r\nACK 1\r\n");
  await iterator.return();

  const older = await scriptedJetfan(t);
  const connectingOld = connect({ socket: older.path, handler: "h", log: quiet });
  const oldPeer = await older.helloed(0);
  oldPeer.socket.write("READY 2 h 8 #\r\nMSG 1 k 1 1 0 1 0 events.k 1\r\nx\r\n");
  const oldHandler = await connectingOld;
  const oldIterator = oldHandler[Symbol.asyncIterator]();
  const oldMsg = (await oldIterator.next()).value;
  await assert.rejects(oldHandler.publish("out.a", "x"), (e) => publishError("unsupported")(e) && /protocol version 2/.test(e.message));
  await assert.rejects(oldMsg.publish("out.a", "x"), publishError("unsupported"));
  oldMsg.ack();
  await waitFor(() => oldPeer.text().includes("ACK 1"), "the ACK");
  assert.equal(oldPeer.text(), "HELLO h 3\r\nACK 1\r\n");
  await oldIterator.return();
});

it("an answer behind MSGs the app has not taken still arrives: the socket is read while a publish waits", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 3 h 1 #\r\n" + msg3(1)); // max-unconfirmed 1: one MSG fills the queue
  const handler = await connecting;
  const iterator = handler[Symbol.asyncIterator]();
  const m = (await iterator.next()).value;
  m.ack();
  const published = handler.publish("out.a", "x"); // the app waits for it before taking more
  await waitFor(() => peer.text().includes("PUB 1"), "the PUB");
  peer.socket.write(msg3(2));
  await waitFor(() => handler.buffered === 1, "MSG 2 in the queue");
  peer.socket.write("PUBOK 1 OUT 1 0\r\n");
  assert.deepEqual(await published, { stream: "OUT", seq: 1, duplicate: false });
  await iterator.return();
});

it("close() waits for the publishes sent to be answered, then closes", async (t) => {
  const jetfan = await scriptedJetfan(t);
  const connecting = connect({ socket: jetfan.path, handler: "h", log: quiet });
  const peer = await jetfan.helloed(0);
  peer.socket.write("READY 3 h 8 #\r\n");
  const handler = await connecting;
  let ended = false;
  peer.socket.on("end", () => (ended = true));
  const published = handler.publish("out.a", "x");
  await waitFor(() => peer.text().includes("PUB 1"), "the PUB");
  const closing = handler.close();
  peer.socket.write("PING\r\n"); // answered: the connection is still open
  await waitFor(() => peer.text().endsWith("PONG\r\n"), "PONG");
  assert.equal(ended, false);
  peer.socket.write("PUBOK 1 OUT 1 0\r\n");
  assert.deepEqual(await published, { stream: "OUT", seq: 1, duplicate: false });
  await closing;
  await waitFor(() => ended, "the end of the connection");
});
