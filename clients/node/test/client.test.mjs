// The client against the real jetfan binary and a real nats-server with JetStream.
import { test } from "node:test";
import assert from "node:assert/strict";

import { connect, JetfanError, Nak, Term } from "../dist/index.js";
import { Mesh, handlerYaml, waitFor } from "./mesh.mjs";

const quiet = () => {};
const it = (name, fn) => test(name, { timeout: 90_000 }, fn); // a hung test fails instead of hanging

async function meshWith(t, handlers, options) {
  const mesh = await Mesh.start(options);
  t.after(() => mesh.close());
  mesh.writeConfig(handlers);
  await mesh.startJetfan();
  return mesh;
}

it("for await: key, seq, deliveries, headers and data arrive; ack settles the consumer", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["build.*"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  assert.equal(handler.ready.handler, "builder");
  assert.equal(handler.ready.maxUnconfirmed, 64);
  assert.deepEqual(handler.ready.patterns, ["build.*"]);
  const seq1 = await mesh.publish("build.done", JSON.stringify({ machine: 3 }), { "Nats-Msg-Id": "m1", Trace: "a b" });
  const seq2 = await mesh.publish("build.binary", Buffer.from([0, 13, 10, 255]));
  const seen = [];
  for await (const msg of handler) {
    seen.push(msg);
    assert.equal(msg.ack(), true);
    assert.equal(msg.ack(), false, "a second confirmation is refused");
    if (seen.length === 2) break;
  }
  assert.equal(seen[0].key, "build.done");
  assert.equal(seen[0].seq, seq1);
  assert.equal(seen[0].deliveries, 1);
  assert.deepEqual(seen[0].json(), { machine: 3 });
  assert.equal(seen[0].headers.get("nats-msg-id"), "m1");
  assert.equal(seen[0].headers.get("Trace"), "a b");
  assert.equal(seen[1].seq, seq2);
  assert.deepEqual([...seen[1].data], [0, 13, 10, 255]);
  assert.equal(seen[1].headers.size, 0);
  await mesh.waitSettled();
});

it("a version 1 handler and one asking for the default (version 3) at once: only the latter has published and subject", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["build.*"]) + handlerYaml("audit", ["build.*"]));
  const old = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet, protocolVersion: 1 });
  const current = await connect({ socket: mesh.socketPath, handler: "audit", log: quiet });
  assert.equal(old.ready.version, 1);
  assert.equal(current.ready.version, 3);
  const before = Date.now();
  const seq = await mesh.publish("build.done", "for both");
  const after = Date.now();
  const take = async (handler) => {
    const iterator = handler[Symbol.asyncIterator]();
    const m = (await iterator.next()).value;
    m.ack();
    await iterator.return();
    return m;
  };
  const [o, c] = [await take(old), await take(current)];
  assert.equal(o.seq, seq);
  assert.equal(c.seq, seq);
  assert.equal(o.text(), "for both");
  assert.equal(c.text(), "for both");
  assert.equal(o.published, undefined);
  assert.equal(o.subject, undefined);
  assert.ok(c.published instanceof Date);
  // JetStream's clock and this one are the same machine's; a second either side allows for rounding.
  assert.ok(c.published.getTime() >= before - 1000 && c.published.getTime() <= after + 1000, String(c.published));
  assert.equal(c.subject, "events.build.done");
  await mesh.waitSettled();
});

it("nak with a delay: the message comes back with delivery count 2", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const seq = await mesh.publish("a", "retry me");
  const deliveries = [];
  for await (const msg of handler) {
    deliveries.push([msg.seq, msg.deliveries]);
    if (msg.deliveries === 1) {
      assert.equal(msg.nak(200), true);
    } else {
      msg.ack();
      break;
    }
  }
  assert.deepEqual(deliveries, [[seq, 1], [seq, 2]]);
  await mesh.waitSettled();
});

it("term: the message is not delivered again and jetfan logs the reason", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const poison = await mesh.publish("a", "poison");
  const seen = [];
  for await (const msg of handler) {
    seen.push(msg.seq);
    if (msg.seq === poison) {
      assert.equal(msg.term("bad json: at byte 7"), true);
      await mesh.jetfan.waitOutput("bad json: at byte 7");
      await mesh.publish("a", "after"); // a fence: had the TERM failed, the redelivery would come first
    } else {
      msg.ack();
      break;
    }
  }
  assert.deepEqual(seen, [poison, poison + 1]);
  await mesh.waitSettled();
});

it("working() past ack_timeout keeps the delivery alive", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"], { ackTimeout: "1s" }));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const slow = await mesh.publish("slow", "x");
  const seen = [];
  for await (const msg of handler) {
    seen.push([msg.seq, msg.deliveries]);
    if (msg.seq === slow && msg.deliveries === 1) {
      // 3.5 ack_timeouts of work, saying so every 100 ms.
      const until = Date.now() + 3500;
      while (Date.now() < until) {
        assert.equal(msg.working(), true);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(msg.ack(), true);
      await mesh.publish("fence", "x"); // had it timed out, its redelivery would come before this
    } else {
      msg.ack();
      break;
    }
  }
  assert.deepEqual(seen, [[slow, 1], [slow + 1, 1]]);
  assert.equal(mesh.jetfan.count("names no delivery in flight"), 0, mesh.jetfan.output);
  await mesh.waitSettled();
});

it("process(): the concurrency limit is honoured; a throw NAKs with its message as the reason, Term TERMs, Nak NAKs with its delay", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  assert.equal(handler.ready.version, 3); // a NAK's reason is sent
  const count = 12;
  for (let i = 0; i < count; ++i) await mesh.publish("ok", `m${i}`);
  const failing = await mesh.publish("fail", "throw once");
  const nakking = await mesh.publish("nak", "nak once");
  const poison = await mesh.publish("poison", "term");
  await waitFor(async () => (await mesh.state()).ackPending === count + 3, "jetfan to hold every message");

  let active = 0;
  let maxActive = 0;
  const gates = [];
  const calls = [];
  const done = handler.process(
    async (msg) => {
      calls.push([msg.key, msg.deliveries]);
      ++active;
      maxActive = Math.max(maxActive, active);
      try {
        await new Promise((resolve) => gates.push(resolve));
        if (msg.key === "fail" && msg.deliveries === 1) throw new Error("first time fails");
        if (msg.key === "nak" && msg.deliveries === 1) throw new Nak(50);
        if (msg.key === "poison") throw new Term("cannot parse");
      } finally {
        --active;
      }
    },
    { concurrency: 3 },
  );
  // Release callbacks one at a time until every message is settled at the server.
  await waitFor(async () => {
    const opened = gates.splice(0);
    for (const open of opened) open();
    const s = await mesh.state();
    return s.pending === 0 && s.ackPending === 0 && active === 0;
  }, "every message to be settled");
  await handler.close();
  await done;
  assert.equal(maxActive, 3);
  assert.deepEqual(calls.filter(([key]) => key === "fail").map(([, d]) => d), [1, 2]);
  assert.deepEqual(calls.filter(([key]) => key === "nak").map(([, d]) => d), [1, 2]);
  assert.deepEqual(calls.filter(([key]) => key === "poison").map(([, d]) => d), [1]);
  assert.ok(mesh.jetfan.output.includes("cannot parse"));
  assert.ok(mesh.jetfan.output.includes("first time fails"), "the NAK's reason reached jetfan (its debug log)");
  assert.ok(failing && nakking && poison);
});

it("reconnect: jetfan restarted (SIGTERM, then started again) loses no message", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet, reconnectDelayMs: 50 });
  let connects = 0;
  handler.on("connect", () => ++connects);
  const published = [];
  for (let i = 0; i < 5; ++i) published.push(await mesh.publish("a", `before ${i}`));
  const acked = new Set();
  const done = handler.process((msg) => void acked.add(msg.seq), { concurrency: 4 });
  await waitFor(() => acked.size === 5, "the first five");
  assert.deepEqual((await mesh.stopJetfan()).code, 0);
  await waitFor(() => !handler.connected, "the client to see the disconnect");
  for (let i = 0; i < 5; ++i) published.push(await mesh.publish("a", `while down ${i}`));
  await mesh.startJetfan();
  await waitFor(() => connects === 1, "the client to reconnect");
  for (let i = 0; i < 5; ++i) published.push(await mesh.publish("a", `after ${i}`));
  await waitFor(() => acked.size === 15, "every message");
  await mesh.waitSettled();
  assert.deepEqual([...acked].sort((a, b) => a - b), published);
  await handler.close();
  await done;
});

it("a message unconfirmed at a disconnect is stale: its ack returns false and is never written", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet, reconnectDelayMs: 50 });
  const seq = await mesh.publish("a", "held");
  const iterator = handler[Symbol.asyncIterator]();
  const first = (await iterator.next()).value;
  assert.equal(first.stale, false);
  await mesh.stopJetfan(); // drains for 1 s, then hands the message back
  await waitFor(() => first.stale, "the disconnect");
  await mesh.startJetfan();
  const again = (await iterator.next()).value;
  assert.equal(again.seq, seq);
  // Delivery 2, or 1 again: nats-server 2.9 may offer a NAK'd message anew when no pull waits as it
  // falls due.
  assert.ok(again.deliveries === 2 || again.deliveries === 1, `delivery ${again.deliveries}`);
  assert.equal(first.ack(), false);
  assert.equal(first.confirmed, false);
  // Both confirmations go out in one write if the stale one were written at all: jetfan would take
  // its ACK for the redelivery (same id on the new connection) and ignore the TERM.
  assert.equal(again.term("stale check"), true);
  await mesh.jetfan.waitOutput("stale check");
  assert.equal(mesh.jetfan.count("names no delivery in flight"), 0, mesh.jetfan.output);
  await iterator.return();
});

it("ERR: an undeclared handler name rejects connect() with JetfanError", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  await assert.rejects(connect({ socket: mesh.socketPath, handler: "nobody", log: quiet }), (error) => {
    assert.ok(error instanceof JetfanError);
    assert.match(error.reason, /nobody/);
    return true;
  });
});

it("ERR on a reconnect (the handler is no longer declared) ends the loop with JetfanError", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet, reconnectDelayMs: 50 });
  const loop = (async () => {
    for await (const msg of handler) msg.ack();
  })();
  // The loop may reject while jetfan restarts, before assert.rejects below looks: handled here
  // so node does not count it as unhandled; assert.rejects still sees the rejection.
  loop.catch(() => {});
  await mesh.stopJetfan();
  mesh.writeConfig(handlerYaml("audit", ["#"]));
  await mesh.startJetfan();
  await assert.rejects(loop, (error) => error instanceof JetfanError && /builder/.test(error.reason));
});

it("AbortSignal: aborting ends the loop and closes the connection; process() finishes its callbacks first", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"]));
  const controller = new AbortController();
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", signal: controller.signal, log: quiet });
  await mesh.publish("a", "one");
  const keys = [];
  for await (const msg of handler) {
    keys.push(msg.key);
    controller.abort(); // mid-body: the loop ends at the next turn, after this ack is written
    assert.equal(msg.ack(), true);
  }
  assert.deepEqual(keys, ["a"]);
  await handler.close();
  await mesh.waitSettled();
  await mesh.jetfan.waitOutput("disconnected");

  const second = new AbortController();
  const other = await connect({ socket: mesh.socketPath, handler: "builder", signal: second.signal, log: quiet });
  await mesh.publish("b", "two");
  let release;
  const done = other.process(async () => {
    second.abort();
    await new Promise((resolve) => (release = resolve));
  });
  await waitFor(() => release, "the callback to start");
  release();
  await done;
  await mesh.waitSettled(); // the callback's ack went out before the connection closed
  assert.equal(other.connected, false);
  await assert.rejects(connect({ socket: mesh.socketPath, handler: "builder", signal: AbortSignal.abort(), log: quiet }));
});

it("backpressure: never more buffered than READY's max-unconfirmed", async (t) => {
  const mesh = await meshWith(t, handlerYaml("builder", ["#"], { maxInflight: 4 }));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  assert.equal(handler.ready.maxUnconfirmed, 4);
  for (let i = 0; i < 20; ++i) await mesh.publish("a", `m${i}`);
  let n = 0;
  let full = 0;
  for await (const msg of handler) {
    // Four unconfirmed at most, this one among them: wait until the rest of the window is here.
    const expected = Math.min(3, 19 - n);
    await waitFor(() => handler.buffered >= expected, `${expected} buffered`);
    assert.ok(handler.buffered <= 3, `buffered ${handler.buffered}`);
    if (handler.buffered === 3) ++full;
    msg.ack();
    if (++n === 20) break;
  }
  assert.ok(full >= 10);
  await mesh.waitSettled();
});
