// Publishing through jetfan (handler.publish, msg.publish) against the real jetfan binary and a real
// nats-server: stream OUT on out.> is where the handler may publish.
import { test } from "node:test";
import assert from "node:assert/strict";

import { connect, JetfanError, PublishError } from "../dist/index.js";
import { Mesh, handlerYaml } from "./mesh.mjs";

const quiet = () => {};
const it = (name, fn) => test(name, { timeout: 90_000 }, fn); // a hung test fails instead of hanging

// A mesh with stream OUT, and jetfan serving `handlers`.
async function meshWithOut(t, handlers) {
  const mesh = await Mesh.start();
  t.after(() => mesh.close());
  await mesh.addStream("OUT", ["out.>"]);
  mesh.writeConfig(handlers);
  await mesh.startJetfan();
  return mesh;
}

it("handler.publish: stored, answered with the stream and its sequence; headers go with it; a repeated Nats-Msg-Id is a duplicate", async (t) => {
  const mesh = await meshWithOut(t, handlerYaml("builder", ["#"], { publish: ["out.>"] }));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  t.after(() => handler.close());
  assert.deepEqual(await handler.publish("out.first", "one", { headers: { "X-Trace": "t1" } }), { stream: "OUT", seq: 1, duplicate: false });
  // Several at once, bytes and strings: each its own answer.
  const many = await Promise.all([
    handler.publish("out.many", Buffer.from([0, 13, 10, 255])),
    handler.publish("out.many", new Uint8Array([1, 2])),
    handler.publish("out.many", "caf\u00e9", { headers: [["X-Pair", "a"], ["X-Pair", "b"]] }),
  ]);
  assert.deepEqual(many.map((p) => p.seq).sort(), [2, 3, 4]);
  assert.ok(many.every((p) => p.stream === "OUT" && !p.duplicate));
  const first = await mesh.message("OUT", 1);
  assert.equal(first.subject, "out.first");
  assert.equal(first.data, "one");
  assert.equal(first.headers["X-Trace"], "t1");
  assert.equal((await mesh.message("OUT", many[2].seq)).data, "caf\u00e9");
  assert.equal((await mesh.message("OUT", many[2].seq)).headers["X-Pair"], "a,b");
  const once = await handler.publish("out.once", "x", { headers: { "Nats-Msg-Id": "mine-1" } });
  const again = await handler.publish("out.once", "x", { headers: { "Nats-Msg-Id": "mine-1" } });
  assert.deepEqual(again, { stream: "OUT", seq: once.seq, duplicate: true });
  assert.equal(await mesh.messages("OUT"), 5);
});

it("handler.publish where it may not: PublishError with jetfan's code (not-allowed, no-stream), and the connection goes on", async (t) => {
  const mesh = await meshWithOut(t, handlerYaml("builder", ["#"], { publish: ["out.>", "nowhere.>"] }) + handlerYaml("audit", ["#"]));
  const builder = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const audit = await connect({ socket: mesh.socketPath, handler: "audit", log: quiet });
  t.after(() => Promise.all([builder.close(), audit.close()]));
  const refused = async (promise, code) => {
    const error = await promise.then(
      () => assert.fail(`stored, not refused with ${code}`),
      (e) => e,
    );
    assert.ok(error instanceof PublishError, String(error));
    assert.ok(error instanceof JetfanError);
    assert.equal(error.code, code);
    return error;
  };
  const notAllowed = await refused(builder.publish("elsewhere.x", "x"), "not-allowed");
  assert.equal(notAllowed.subject, "elsewhere.x");
  assert.match(notAllowed.message, /publish to elsewhere\.x .* failed: not-allowed/);
  await refused(audit.publish("out.x", "x"), "not-allowed"); // audit has no publish: in jetfan's config
  await refused(builder.publish("nowhere.x", "x"), "no-stream");
  assert.equal((await builder.publish("out.x", "fine")).seq, 1);
  assert.ok(builder.connected && audit.connected);
  assert.equal(await mesh.messages("OUT"), 1);
});

it("msg.publish tied, then ack at once: each follow-up is stored once, with jetfan's Nats-Msg-Id, and the inputs settle", async (t) => {
  const mesh = await meshWithOut(t, handlerYaml("builder", ["#"], { publish: ["out.>"] }));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const inputs = [];
  for (let i = 0; i < 5; ++i) inputs.push(await mesh.publish(`order.${i}`, `{"order":${i}}`));
  const answers = [];
  let seen = 0;
  for await (const msg of handler) {
    answers.push(msg.publish(`out.shipped.${msg.seq}`, msg.data)); // not awaited: jetfan holds the ACK
    assert.equal(msg.ack(), true);
    if (++seen === inputs.length) break;
  }
  for (const p of await Promise.all(answers)) assert.equal(p.duplicate, false);
  await mesh.waitSettled();
  assert.equal(await mesh.messages("OUT"), inputs.length);
  for (let seq = 1; seq <= inputs.length; ++seq) {
    const m = await mesh.message("OUT", seq);
    const input = Number(m.subject.split(".")[2]);
    assert.ok(inputs.includes(input), m.subject);
    assert.equal(m.data, `{"order":${input - 1}}`);
    assert.equal(m.headers["Nats-Msg-Id"], `jetfan:EVENTS:node1_builder:${input}:builder:0`);
  }
});

it("a redelivery publishing again: duplicate true for each index, one copy of each in the stream", async (t) => {
  const mesh = await meshWithOut(t, handlerYaml("builder", ["#"], { publish: ["out.>"] }));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const seq = await mesh.publish("order.1", "o1");
  const runs = [];
  for await (const msg of handler) {
    // Two follow-ups, indices 0 and 1 by call order, the same on each delivery.
    const made = await Promise.all([msg.publish("out.a", "first"), msg.publish("out.b", "second")]);
    runs.push({ deliveries: msg.deliveries, made });
    if (msg.deliveries === 1) {
      msg.nak(0, "pretend to fail after publishing"); // not held: the message comes back
    } else {
      msg.ack();
      break;
    }
  }
  assert.deepEqual(runs.map((r) => r.deliveries), [1, 2]);
  assert.deepEqual(runs[0].made, [
    { stream: "OUT", seq: 1, duplicate: false },
    { stream: "OUT", seq: 2, duplicate: false },
  ]);
  assert.deepEqual(runs[1].made, [
    { stream: "OUT", seq: 1, duplicate: true },
    { stream: "OUT", seq: 2, duplicate: true },
  ]);
  await mesh.waitSettled();
  assert.equal(await mesh.messages("OUT"), 2);
  assert.equal((await mesh.message("OUT", 2)).headers["Nats-Msg-Id"], `jetfan:EVENTS:node1_builder:${seq}:builder:1`);
});

it("a tied publish that fails turns the ACK into a NAK: the message comes again", async (t) => {
  const mesh = await meshWithOut(t, handlerYaml("builder", ["#"], { publish: ["out.>", "nowhere.>"] }));
  const handler = await connect({ socket: mesh.socketPath, handler: "builder", log: quiet });
  const seq = await mesh.publish("order.1", "o1");
  const deliveries = [];
  for await (const msg of handler) {
    deliveries.push(msg.deliveries);
    // The first time to a subject no stream captures, unawaited: its rejection is left handled.
    const published = msg.publish(msg.deliveries === 1 ? "nowhere.x" : "out.x", "follow-up");
    msg.ack();
    if (msg.deliveries === 1) {
      await assert.rejects(published, (e) => e instanceof PublishError && e.code === "no-stream");
    } else {
      await published;
      break;
    }
  }
  assert.deepEqual(deliveries, [1, 2]);
  await mesh.waitSettled();
  assert.equal(await mesh.messages("OUT"), 1);
  assert.equal((await mesh.message("OUT", 1)).headers["Nats-Msg-Id"], `jetfan:EVENTS:node1_builder:${seq}:builder:0`);
});
