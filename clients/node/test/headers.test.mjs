// MsgHeaders: the NATS header block of a message, parsed on first use.
import { test } from "node:test";
import assert from "node:assert/strict";

import { MsgHeaders } from "../dist/index.js";

test("headers: values by name (any case), repeated names in order, the status line skipped", () => {
  const h = new MsgHeaders(Buffer.from("NATS/1.0 503 No Responders\r\nNats-Msg-Id: 7\r\nTrace: a b\r\ntrace:  c \r\nbroken line\r\n\r\n"));
  assert.equal(h.get("nats-msg-id"), "7");
  assert.deepEqual(h.getAll("TRACE"), ["a b", "c"]);
  assert.equal(h.has("missing"), false);
  assert.equal(h.size, 3);
  assert.deepEqual([...h], [["Nats-Msg-Id", "7"], ["Trace", "a b"], ["trace", "c"]]);
});

test("headers: a message without a header block has none", () => {
  const h = new MsgHeaders(Buffer.alloc(0));
  assert.equal(h.size, 0);
  assert.equal(h.get("x"), undefined);
});
