"""The blocking client (jetfan.blocking) against the real jetfan and a real nats-server: the same
behaviour as the asyncio one, on threads."""

from __future__ import annotations

import threading
import time
import unittest
from datetime import datetime, timedelta, timezone

import jetfan

from .mesh import BUILDER, FAST_RETRY, Mesh, wait_until


class BlockingClient(unittest.TestCase):
    def setUp(self) -> None:
        self.mesh = Mesh()
        self.addCleanup(self.mesh.close)

    def test_ack_nak_term_in_a_for_loop(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(BUILDER, FAST_RETRY))
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder") as h:
            ok, again, poison = self.mesh.publish("a.ok"), self.mesh.publish("a.again"), self.mesh.publish("a.poison")
            seen = []
            for msg in h:
                seen.append((msg.seq, msg.deliveries))
                if msg.seq == again and msg.deliveries == 1:
                    self.assertTrue(msg.nak(0.05))  # seconds
                elif msg.seq == poison:
                    self.assertTrue(msg.term("bad input"))
                else:
                    self.assertTrue(msg.ack())
                if len(seen) == 4:
                    break
        self.assertEqual(sorted(seen), [(ok, 1), (again, 1), (again, 2), (poison, 1)])
        self.assertTrue(self.mesh.settled())
        self.assertTrue(self.mesh.wait_log("as poison: bad input"))

    def test_a_version_1_and_a_version_3_handler_at_once(self) -> None:
        audit = '  - name: audit\n    patterns: ["#"]\n'
        self.mesh.start_jetfan(self.mesh.config(BUILDER + audit, FAST_RETRY))
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder", protocol_version=1) as old, \
                jetfan.BlockingHandler(path=self.mesh.socket, handler="audit") as new:
            self.assertEqual(old.ready.version, 1)
            self.assertEqual(new.ready.version, 3)  # the default, which this jetfan speaks
            before = datetime.now(timezone.utc)
            seq = self.mesh.publish("a.both", "for both")
            after = datetime.now(timezone.utc)
            o, n = next(iter(old)), next(iter(new))
            self.assertEqual((o.seq, n.seq), (seq, seq))
            self.assertEqual((o.data, n.data), (b"for both", b"for both"))
            self.assertIsNone(o.published)
            self.assertIsNone(o.subject)
            self.assertEqual(n.subject, "events.a.both")
            assert n.published is not None
            # JetStream's clock and this one are the same machine's; a second either side for rounding.
            self.assertLessEqual(before - timedelta(seconds=1), n.published)
            self.assertLessEqual(n.published, after + timedelta(seconds=1))
            o.ack()
            n.ack()
        self.assertTrue(self.mesh.settled())

    def test_nak_delay_is_in_seconds(self) -> None:
        # As the asyncio one: jetfan's own delay is 50 ms, so a redelivery 0.8 s later is this delay.
        self.mesh.start_jetfan(self.mesh.config(BUILDER, FAST_RETRY))
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder") as h:
            self.mesh.publish("a.later")
            messages = iter(h)
            first = next(messages)
            naked = time.monotonic()
            self.assertTrue(first.nak(delay=0.8))
            again = next(messages)
            waited = time.monotonic() - naked
            self.assertEqual(again.seq, first.seq)
            self.assertGreaterEqual(waited, 0.7)
            self.assertLess(waited, 10)
            again.ack()
        self.assertTrue(self.mesh.settled())

    def test_process_on_threads_with_outcomes(self) -> None:
        self.mesh.start_jetfan(self.mesh.config(BUILDER, FAST_RETRY))
        h = jetfan.BlockingHandler(path=self.mesh.socket, handler="builder", concurrency=4)
        for key in ("a.fail", "a.poison", "a.b", "a.c"):
            self.mesh.publish(key)
        lock, go = threading.Lock(), threading.Event()
        running, peak, seen = [0], [0], []

        def handle(msg: jetfan.Message) -> None:
            with lock:
                seen.append(f"{msg.key} {msg.deliveries}")
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            go.wait(20)
            with lock:
                running[0] -= 1
            if msg.key == "a.poison":
                raise jetfan.Term("bad input")
            if msg.key == "a.fail" and msg.deliveries == 1:
                raise RuntimeError("boom")

        runner = threading.Thread(target=h.process, args=(handle,))  # concurrency: the option's 4
        with self.assertLogs("jetfan", "ERROR") as logs:
            runner.start()
            self.assertTrue(wait_until(lambda: running[0] == 4))
            go.set()
            self.assertTrue(self.mesh.settled())
            h.close()  # from another thread: process() returns once its callbacks are done
            runner.join(20)
        self.assertFalse(runner.is_alive())
        self.assertEqual(peak[0], 4)
        self.assertEqual(sorted(seen), ["a.b 1", "a.c 1", "a.fail 1", "a.fail 2", "a.poison 1"])
        [record] = logs.records
        self.assertEqual(record.name, "jetfan.blocking")
        self.assertIn("the callback for a.fail (stream seq 1, delivery 1) raised; NAK'd", record.getMessage())
        self.assertIn("RuntimeError: boom", logs.output[0])
        self.assertTrue(self.mesh.wait_log("as poison: bad input"))
        self.assertTrue(self.mesh.wait_log(": boom"))  # the exception's text is the NAK's reason (version 3)

    def test_reconnects_and_old_messages_are_stale(self) -> None:
        config = self.mesh.config(BUILDER, FAST_RETRY)
        self.mesh.start_jetfan(config)
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder", max_reconnect_delay=0.2) as h:
            self.assertEqual(h.path, self.mesh.socket)
            self.mesh.publish("a.b")
            messages = iter(h)
            first = next(messages)
            self.mesh.stop_jetfan()
            self.mesh.start_jetfan(config)
            with self.assertLogs("jetfan.blocking", "INFO") as logs:
                again = next(messages)
            # Delivery 2, or 1 again: nats-server 2.9 may offer a NAK'd message anew when no pull
            # waits as it falls due.
            self.assertEqual(again.seq, first.seq)
            self.assertTrue(first.stale)
            self.assertFalse(first.ack())
            self.assertTrue(again.nak(0))
            third = next(messages)
            self.assertEqual(third.seq, first.seq)  # the NAK, not a stray ACK, reached jetfan
            third.ack()
        self.assertTrue(self.mesh.settled())
        self.assertEqual(h.connections, 2)
        self.assertEqual([r.levelname for r in logs.records], ["WARNING", "INFO"])
        self.assertIn("lost the connection to jetfan at", logs.records[0].getMessage())
        self.assertIn("reconnected to jetfan at", logs.records[1].getMessage())

    def test_err_and_absent_socket(self) -> None:
        self.mesh.start_jetfan()
        with self.assertRaises(jetfan.JetfanError) as caught:
            jetfan.BlockingHandler(path=self.mesh.socket, handler="nobody")
        self.assertIn('unknown handler "nobody"', caught.exception.reason)
        with self.assertRaises(ConnectionError):
            jetfan.BlockingHandler(path=str(self.mesh.dir / "absent.sock"), handler="builder", connect_timeout=0.2)

    def test_without_reconnect_the_loop_ends_with_jetfan(self) -> None:
        self.mesh.start_jetfan()
        with jetfan.BlockingHandler(path=self.mesh.socket, handler="builder", reconnect=False) as h:
            self.mesh.stop_jetfan()
            with self.assertLogs("jetfan.blocking", "INFO") as logs:
                self.assertEqual(list(h), [])
        self.assertIn("not reconnecting", logs.output[0])


if __name__ == "__main__":
    unittest.main()
