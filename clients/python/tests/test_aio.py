"""The asyncio client (jetfan.aio) against the real jetfan and a real nats-server: ack, nak with a
delay in seconds and a reason, term, working past ack_timeout, process() and its concurrency and outcomes,
reconnecting after jetfan restarts, stale messages, ERR, headers; what it reports goes to logging."""

from __future__ import annotations

import asyncio
import time
import unittest

import jetfan

from .mesh import BUILDER, FAST_RETRY, Mesh, wait_until


async def next_message(h: jetfan.Handler) -> jetfan.Message:
    return await asyncio.wait_for(h.__anext__(), 20)


class AsyncClient(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        self.mesh = Mesh()
        self.addCleanup(self.mesh.close)

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().set_debug(False)  # unittest's debug mode only adds noise here

    async def test_ack_nak_with_delay_term(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(BUILDER, FAST_RETRY))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            self.assertEqual(h.ready.handler, "builder")
            self.assertEqual(h.ready.patterns, ["#"])
            ok = self.mesh.publish("a.ok", '{"n": 1}')
            again = self.mesh.publish("a.again")
            poison = self.mesh.publish("a.poison")
            seen = []
            async for msg in h:
                seen.append((msg.seq, msg.deliveries))
                if msg.seq == ok:
                    self.assertEqual(msg.json(), {"n": 1})
                    self.assertTrue(msg.ack())
                    self.assertFalse(msg.ack())  # once only
                    self.assertTrue(msg.confirmed)
                elif msg.seq == again and msg.deliveries == 1:
                    self.assertTrue(msg.nak(0.1))  # seconds
                elif msg.seq == poison:
                    self.assertTrue(msg.term("cannot parse\nit"))
                else:
                    msg.ack()
                if len(seen) == 4:
                    break
            self.assertEqual(sorted(seen), [(ok, 1), (again, 1), (again, 2), (poison, 1)])
        self.assertTrue(self.mesh.settled())
        self.assertTrue(self.mesh.wait_log("as poison: cannot parse it"))

    async def test_working_keeps_a_message_past_ack_timeout(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(BUILDER + "    ack_timeout: 1s\n", FAST_RETRY))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            self.mesh.publish("a.slow")
            msg = await next_message(h)
            for _ in range(25):  # 2.5 s in all, well past ack_timeout
                self.assertTrue(msg.working())
                await asyncio.sleep(0.1)
            self.assertTrue(msg.ack())
        self.assertTrue(self.mesh.settled())
        self.assertEqual(self.mesh.state()["num_redelivered"], 0)
        self.assertEqual(msg.deliveries, 1)

    async def test_process_runs_as_many_callbacks_as_asked_at_once(self) -> None:
        self.mesh.start_jetfan()
        h = await jetfan.connect(path=self.mesh.socket, handler="builder")
        for i in range(6):
            self.mesh.publish("a.b", str(i))
        running, peak, go = 0, 0, asyncio.Event()

        async def handle(msg: jetfan.Message) -> None:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await go.wait()
            running -= 1

        task = asyncio.create_task(h.process(handle, concurrency=4))
        self.assertTrue(await asyncio.to_thread(wait_until, lambda: running == 4))
        go.set()
        self.assertTrue(await asyncio.to_thread(self.mesh.settled))
        await h.close()
        await asyncio.wait_for(task, 20)
        self.assertEqual(peak, 4)

    async def test_nak_delay_is_in_seconds(self) -> None:
        # jetfan's own delay is 50 ms (FAST_RETRY): a redelivery 0.8 s later is the NAK's delay, sent
        # as 800 ms (as 0 or 1 ms it would come at once; as 800 s, or 800000 ms, never in this test).
        self.mesh.start_jetfan(self.mesh.config(BUILDER, FAST_RETRY))
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            self.mesh.publish("a.later")
            first = await next_message(h)
            naked = time.monotonic()
            self.assertTrue(first.nak(delay=0.8))
            again = await next_message(h)
            waited = time.monotonic() - naked
            self.assertEqual(again.seq, first.seq)
            self.assertGreaterEqual(waited, 0.7)
            self.assertLess(waited, 10)
            again.ack()
        self.assertTrue(self.mesh.settled())

    async def test_process_outcomes_exception_naks_term_terms_nak_naks(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(BUILDER, FAST_RETRY))
        h = await jetfan.connect(path=self.mesh.socket, handler="builder")
        for key in ("a.fail", "a.poison", "a.later", "a.fine"):
            self.mesh.publish(key)
        seen: list[str] = []

        def handle(msg: jetfan.Message) -> None:  # a plain function works too
            seen.append(f"{msg.key} {msg.deliveries}")
            if msg.key == "a.poison":
                raise jetfan.Term("bad input")
            if msg.deliveries == 1 and msg.key == "a.fail":
                raise RuntimeError("boom")
            if msg.deliveries == 1 and msg.key == "a.later":
                raise jetfan.Nak(0.05, "later, please")  # seconds; its message is the reason

        with self.assertLogs("jetfan", "ERROR") as logs:
            task = asyncio.create_task(h.process(handle, concurrency=2))
            self.assertTrue(await asyncio.to_thread(self.mesh.settled))
            await h.close()
            await asyncio.wait_for(task, 20)
        self.assertEqual(sorted(seen), ["a.fail 1", "a.fail 2", "a.fine 1", "a.later 1", "a.later 2", "a.poison 1"])
        [record] = logs.records
        self.assertEqual((record.name, record.levelname), ("jetfan.aio", "ERROR"))
        self.assertEqual(
            record.getMessage(), "handler builder: the callback for a.fail (stream seq 1, delivery 1) raised; NAK'd"
        )
        self.assertIn("RuntimeError: boom", logs.output[0])  # with its traceback
        self.assertTrue(self.mesh.wait_log("as poison: bad input"))
        # Version 3: the exception's text, and the Nak's message, are the NAKs' reasons.
        self.assertEqual(h.ready.version, 3)
        self.assertTrue(self.mesh.wait_log(": boom"))
        self.assertTrue(self.mesh.wait_log(": later, please"))

    async def test_reconnects_after_jetfan_restarts_and_old_messages_are_stale(self) -> None:
        config = self.mesh.config(BUILDER, FAST_RETRY)
        self.mesh.start_jetfan(config)
        h = await jetfan.connect(path=self.mesh.socket, handler="builder", max_reconnect_delay=0.2)
        self.assertEqual(h.path, self.mesh.socket)
        self.mesh.publish("a.b")
        first = await next_message(h)
        with self.assertLogs("jetfan", "INFO") as logs:
            await asyncio.to_thread(self.mesh.stop_jetfan)  # `first` is unconfirmed: handed back
            self.mesh.start_jetfan(config)
            again = await next_message(h)
        # Delivery 2, or 1 again: nats-server 2.9 may offer a NAK'd message anew when no pull waits
        # as it falls due.
        self.assertEqual(again.seq, first.seq)
        self.assertTrue(first.stale)
        self.assertFalse(first.ack())  # never written to the new connection
        self.assertTrue(again.nak(0))
        third = await next_message(h)
        self.assertEqual(third.seq, first.seq)  # so the NAK, not a stray ACK, reached jetfan
        third.ack()
        await h.close()
        self.assertTrue(self.mesh.settled())
        self.assertEqual(h.connections, 2)
        self.assertEqual([r.levelname for r in logs.records], ["WARNING", "INFO"])
        self.assertIn("lost the connection to jetfan at", logs.records[0].getMessage())
        self.assertIn("reconnected to jetfan at", logs.records[1].getMessage())

    async def test_without_reconnect_iteration_ends_with_jetfan(self) -> None:
        self.mesh.start_jetfan()
        h = await jetfan.connect(path=self.mesh.socket, handler="builder", reconnect=False)
        with self.assertLogs("jetfan.aio", "INFO") as logs:
            await asyncio.to_thread(self.mesh.stop_jetfan)
            with self.assertRaises(StopAsyncIteration):
                await next_message(h)
        self.assertIn("not reconnecting", logs.output[0])
        await h.close()

    async def test_err_is_a_jetfan_error_and_an_absent_socket_a_connection_error(self) -> None:
        self.mesh.start_jetfan()
        with self.assertRaises(jetfan.JetfanError) as caught:
            await jetfan.connect(path=self.mesh.socket, handler="nobody")
        self.assertIn('unknown handler "nobody"', caught.exception.reason)
        self.assertEqual(caught.exception.path, self.mesh.socket)
        with self.assertRaises(ConnectionError) as absent:
            await jetfan.connect(path=str(self.mesh.dir / "absent.sock"), handler="builder", connect_timeout=0.2)
        self.assertIn("absent.sock", str(absent.exception))

    async def test_headers_text_and_binary_payload(self) -> None:
        self.mesh.start_jetfan()
        async with await jetfan.connect(path=self.mesh.socket, handler="builder") as h:
            self.mesh.publish("h.x", "héllo", {"Trace-Id": "abc", "X-Many": "1"})
            msg = await next_message(h)
            self.assertEqual(msg.key, "h.x")
            self.assertEqual(msg.text(), "héllo")
            self.assertEqual(msg.data, "héllo".encode())
            self.assertEqual(msg.headers.get("trace-id"), "abc")  # names match in any case
            self.assertEqual(msg.headers["Trace-Id"], "abc")
            self.assertEqual(msg.headers.get_all("X-Many"), ["1"])
            self.assertIn(("Trace-Id", "abc"), list(msg.headers))
            self.assertNotIn("Nope", msg.headers)
            msg.ack()
        self.assertTrue(self.mesh.settled())


if __name__ == "__main__":
    unittest.main()
