"""Publishing through jetfan (protocol version 3): the request-id bookkeeping, headers and the
default index without a daemon; then both clients against the real jetfan and a real nats-server:
a publish stored and answered PUBOK (stream, sequence), jetfan's refusals as PublishError codes, a
tied publish ACKed at once, and a redelivery's tied publish dropped as a duplicate."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import unittest
from typing import Optional

import jetfan
from jetfan import _codec, _publish

from .mesh import FAST_RETRY, PUBLISHER, Mesh


class Bookkeeping(unittest.TestCase):
    def test_request_ids_count_up_and_answers_in_any_order_reach_their_own_publish(self) -> None:
        waiting: _publish.Waiting[str] = _publish.Waiting("/x.sock")
        ids = [waiting.next_id() for _ in range(3)]
        self.assertEqual(ids, [1, 2, 3])
        for id_, name in zip(ids, "abc"):
            waiting.add(id_, f"out.{name}", name)
        self.assertEqual((len(waiting), waiting.oldest()), (3, "a"))
        waiter, outcome = waiting.answer(_codec.PubErr(3, "refused", "stream full"))
        self.assertEqual(waiter, "c")
        assert isinstance(outcome, jetfan.PublishError)
        self.assertEqual((outcome.code, outcome.reason, outcome.subject, outcome.path), ("refused", "stream full", "out.c", "/x.sock"))
        self.assertFalse(outcome.maybe_stored)
        self.assertEqual(waiting.answer(_codec.PubOk(1, "OUT", 7, True)), ("a", jetfan.Published("OUT", 7, True)))
        self.assertEqual((len(waiting), waiting.oldest()), (1, "b"))
        # An answer to a PUB that no longer waits (answered twice), or never did, breaks the protocol.
        for stray in (_codec.PubOk(1, "OUT", 7, False), _codec.PubErr(9, "timeout")):
            with self.subTest(stray=stray), self.assertRaises(jetfan.ProtocolError) as caught:
                waiting.answer(stray)
            self.assertEqual(caught.exception.code, "unexpected-frame")
            self.assertIn(f"no PUB {stray.id} of this connection waits", str(caught.exception))
        self.assertEqual(waiting.next_id(), 4)  # ids are never reused on a connection

    def test_when_the_connection_ends_each_waiting_publish_gets_connection_lost(self) -> None:
        waiting: _publish.Waiting[str] = _publish.Waiting("/x.sock")
        for name in "xyz":
            waiting.add(waiting.next_id(), f"out.{name}", name)
        waiting.answer(_codec.PubOk(2, "OUT", 1, False))
        lost = waiting.lost()
        self.assertEqual([w for w, _ in lost], ["x", "z"])  # oldest first
        for _, error in lost:
            self.assertEqual(error.code, "connection-lost")
            self.assertTrue(error.maybe_stored)
            self.assertIn("may or may not have been stored", error.reason)
            self.assertIsInstance(error, jetfan.JetfanError)
        self.assertEqual((len(waiting), waiting.lost(), waiting.oldest()), (0, [], None))

    def test_headers_and_payloads_are_encoded_or_refused(self) -> None:
        self.assertEqual(_publish.encode_headers(None), b"")
        self.assertEqual(_publish.encode_headers({}), b"")
        self.assertEqual(
            _publish.encode_headers({"Trace": "7", "X-Many": ["a", "b"]}),
            b"NATS/1.0\r\nTrace: 7\r\nX-Many: a\r\nX-Many: b\r\n\r\n",
        )
        received = jetfan.Headers(b"NATS/1.0\r\nA: 1\r\nB: two words\r\n\r\n")  # a message's, passed on
        self.assertEqual(list(jetfan.Headers(_publish.encode_headers(received))), [("A", "1"), ("B", "two words")])
        for bad in ({"": "x"}, {"a:b": "x"}, {"a b": "x"}, {"a": "x\r\nB: y"}):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                _publish.encode_headers(bad)
        with self.assertRaises(TypeError):
            _publish.encode_headers({"a": 1})  # type: ignore[dict-item]
        self.assertEqual(_publish.encode_payload("héllo"), "héllo".encode())
        self.assertEqual(_publish.encode_payload(bytearray(b"x")), b"x")
        with self.assertRaises(TypeError):
            _publish.encode_payload(7)  # type: ignore[arg-type]

    def test_a_message_s_publishes_are_indexed_in_call_order_unless_given(self) -> None:
        sent: list[tuple[str, Optional[int], int]] = []

        class Link:
            alive, version = True, 3

            def publish(self, subject: str, headers: bytes, payload: bytes, tied_to: Optional[int], index: int) -> str:
                if subject == "bad":
                    raise ValueError("not sent")
                sent.append((subject, tied_to, index))
                return "future"

        frame = _codec.MsgFrame(7, "a.b", 1, 1, b"", b"in")
        msg: jetfan.Message = jetfan.Message(frame, Link())  # type: ignore[arg-type]
        self.assertEqual(msg.publish("out.a", "x"), "future")
        with self.assertRaises(ValueError):
            msg.publish("bad", "x")  # a call that raised keeps its place: the calls' order decides
        msg.publish("out.b", b"y")
        msg.publish("out.c", b"z", index=40)
        msg.publish("out.d", b"w")
        self.assertEqual(sent, [("out.a", 7, 0), ("out.b", 7, 2), ("out.c", 7, 40), ("out.d", 7, 4)])
        for bad in (-1, 2**64, True):
            with self.subTest(index=bad), self.assertRaises((ValueError, TypeError)):
                msg.publish("out.e", b"", index=bad)

    def test_the_api_exports_published_and_publish_error(self) -> None:
        self.assertTrue(issubclass(jetfan.PublishError, jetfan.JetfanError))
        self.assertEqual([f.name for f in dataclasses.fields(jetfan.Published)], ["stream", "seq", "duplicate"])
        with self.assertRaises(dataclasses.FrozenInstanceError):
            jetfan.Published("OUT", 1, False).seq = 2  # type: ignore[misc]
        for name in ("Published", "PublishError"):
            self.assertIn(name, jetfan.__all__)


class AsyncPublish(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        self.mesh = Mesh()
        self.addCleanup(self.mesh.close)
        self.mesh.stream()  # OUT, on out.>

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().set_debug(False)

    async def test_a_publish_is_stored_and_answered_with_its_stream_and_sequence(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            first = await h.publish("out.made", "hello", headers={"Trace": "7"})
            second = await h.publish("out.made", b"again")
            self.assertEqual(first, jetfan.Published("OUT", 1, False))
            self.assertEqual(second, jetfan.Published("OUT", 2, False))
            # Several at once: each answer reaches its own publish.
            many = await asyncio.gather(*(h.publish(f"out.n{i}", str(i)) for i in range(5)))
            self.assertEqual(sorted(p.seq for p in many), [3, 4, 5, 6, 7])
        self.assertEqual(self.mesh.messages("OUT"), 7)

    async def test_jetfan_s_refusals_are_publish_errors_with_its_code(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            for subject, code, reason in (
                ("other.x", "not-allowed", "its publish.subjects are out.>, nowhere.*"),
                ("nowhere.x", "no-stream", ""),  # allowed, but no stream captures it
            ):
                with self.subTest(code=code), self.assertRaises(jetfan.PublishError) as caught:
                    await h.publish(subject, "x")
                error = caught.exception
                self.assertIsInstance(error, jetfan.JetfanError)
                self.assertEqual((error.code, error.subject, error.path), (code, subject, self.mesh.socket))
                self.assertIn(reason, error.reason)
                self.assertFalse(error.maybe_stored)
            self.assertEqual((await h.publish("out.ok", "x")).seq, 1)  # the connection goes on
        self.assertEqual(self.mesh.messages("OUT"), 1)

    async def test_a_tied_publish_then_an_ack_at_once_stores_the_follow_up_once_and_settles(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER, FAST_RETRY))
        h = await jetfan.connect(path=self.mesh.socket, handler="builder")
        futures: list[asyncio.Future[jetfan.Published]] = []

        def handle(msg: jetfan.Message) -> None:  # returns at once: process() ACKs behind the PUB
            futures.append(msg.publish("out.follow", b"from " + msg.data, headers={"Trace": "7"}))

        for i in range(3):
            self.mesh.publish(f"a.{i}", str(i))
        task = asyncio.create_task(h.process(handle))
        self.assertTrue(await asyncio.to_thread(self.mesh.settled))
        await h.close()
        await asyncio.wait_for(task, 20)
        # Each stored once, as jetfan took the PUB before the ACK (after it: "not-in-flight").
        published = [f.result() for f in futures]
        self.assertEqual(sorted(p.seq for p in published), [1, 2, 3])
        self.assertFalse(any(p.duplicate for p in published))
        self.assertEqual(self.mesh.messages("OUT"), 3)
        self.assertEqual(self.mesh.state()["num_redelivered"], 0)

    async def test_a_redelivery_s_tied_publish_is_a_duplicate_and_the_stream_holds_one_copy(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER, FAST_RETRY))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            seq = self.mesh.publish("a.b", "in")
            seen: list[jetfan.Published] = []
            async for msg in h:
                self.assertEqual(msg.seq, seq)
                seen.append(await msg.publish("out.follow", b"made from " + msg.data))
                if msg.deliveries == 1:
                    msg.nak(0)  # as if it failed after publishing: it comes again and publishes again
                else:
                    msg.ack()
                    break
        self.assertEqual(seen, [jetfan.Published("OUT", 1, False), jetfan.Published("OUT", 1, True)])
        self.assertTrue(self.mesh.settled())
        self.assertEqual(self.mesh.messages("OUT"), 1)

    async def test_a_tied_publish_that_fails_makes_the_ack_a_failure_and_the_message_comes_again(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER, FAST_RETRY))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            seq = self.mesh.publish("a.b", "in")
            first = await asyncio.wait_for(h.__anext__(), 20)
            failing = first.publish("nowhere.x", "x")  # allowed, but no stream: PUBERR no-stream
            self.assertTrue(first.ack())
            with self.assertRaises(jetfan.PublishError) as caught:
                await failing
            self.assertEqual(caught.exception.code, "no-stream")
            again = await asyncio.wait_for(h.__anext__(), 20)
            self.assertEqual((again.seq, again.deliveries), (seq, 2))
            # Confirmed: a tied publish now would come too late; it is refused and not sent.
            self.assertTrue(again.ack())
            with self.assertRaises(jetfan.PublishError) as late:
                again.publish("out.late", "x")
            self.assertEqual(late.exception.code, "not-in-flight")
        self.assertTrue(self.mesh.settled())
        self.assertEqual(self.mesh.messages("OUT"), 0)


class BlockingPublish(unittest.TestCase):
    def setUp(self) -> None:
        self.mesh = Mesh()
        self.addCleanup(self.mesh.close)
        self.mesh.stream()

    def test_a_publish_is_stored_and_a_refusal_is_a_publish_error(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER))
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder") as h:
            self.assertEqual(h.publish("out.made", "hello"), jetfan.Published("OUT", 1, False))
            self.assertEqual(h.publish("out.made", b"again", headers={"A": "1"}).seq, 2)
            with self.assertRaises(jetfan.PublishError) as caught:
                h.publish("other.x", "x")
            self.assertEqual(caught.exception.code, "not-allowed")
        self.assertEqual(self.mesh.messages("OUT"), 2)

    def test_tied_publishes_acked_at_once_and_a_redelivery_s_duplicate(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER, FAST_RETRY))
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder") as h:
            once = self.mesh.publish("a.once", "1")
            twice = self.mesh.publish("a.twice", "2")
            pending = []
            seen: list[tuple[int, jetfan.Published]] = []
            for msg in h:
                if msg.seq == once:
                    pending.append(msg.publish("out.once", msg.data))  # not waited for: ACK at once
                    self.assertTrue(msg.ack())
                else:
                    # Waited for on the iterating thread, which reads the answer itself.
                    seen.append((msg.deliveries, msg.publish("out.twice", msg.data).result(20)))
                    if msg.deliveries == 1:
                        msg.nak(0)
                    else:
                        msg.ack()
                if len(seen) == 2:
                    break
            self.assertEqual(pending[0].result(20).duplicate, False)
        self.assertEqual([d for d, _ in seen], [1, 2])
        self.assertEqual(seen[1][1], dataclasses.replace(seen[0][1], duplicate=True))
        self.assertTrue(self.mesh.settled())
        self.assertEqual(self.mesh.messages("OUT"), 2)  # one copy each

    def test_process_threads_publish_and_wait_at_once(self) -> None:
        # Four callbacks wait for their answers at the same time, while the iterating thread waits
        # for messages: whichever thread reads hands each answer to its own.
        self.mesh.start_jetfan(self.mesh.config(PUBLISHER, FAST_RETRY))
        h = jetfan.BlockingHandler(path=self.mesh.socket, handler="builder", concurrency=4)
        lock = threading.Lock()
        results: list[jetfan.Published] = []

        def handle(msg: jetfan.Message) -> None:
            for i in range(3):
                untied = h.publish(f"out.{msg.key}.{i}", msg.data)
                tied = msg.publish(f"out.{msg.key}.tied{i}", msg.data).result(20)
                with lock:
                    results.extend((untied, tied))

        for i in range(8):
            self.mesh.publish(f"k{i}", str(i))
        runner = threading.Thread(target=h.process, args=(handle,))
        runner.start()
        try:
            self.assertTrue(self.mesh.settled())
        finally:
            h.close()
            runner.join(20)
        self.assertFalse(runner.is_alive())
        self.assertEqual(sorted(p.seq for p in results), list(range(1, 49)))
        self.assertEqual(self.mesh.messages("OUT"), 48)


if __name__ == "__main__":
    unittest.main()
