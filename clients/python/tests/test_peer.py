"""Both clients against a scripted peer on a real Unix socket, for what the real jetfan cannot be
made to do on cue, or show: send PING, send more than max-unconfirmed (as it does after ack
timeouts), reuse a delivery id on a new connection, send garbage, answer as an older jetfan does;
the exact bytes of a NAK whose delay is given in seconds, and of its reason in each version."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
import threading
import unittest
from datetime import datetime, timezone
from pathlib import Path

import jetfan

from .mesh import wait_until



def raise_by_payload(message: jetfan.Message) -> None:
    """A process() callback that raises, by the payload: an error with text, one without, Nak with
    a delay and a message, and a bare Nak."""
    if message.data == b"a":
        raise RuntimeError("database down\nat line 7")
    if message.data == b"b":
        raise ValueError()  # no text: its type's name
    if message.data == b"c":
        raise jetfan.Nak(2.5, "busy")
    raise jetfan.Nak()

class ScriptedJetfan:
    """Plays jetfan: listens, accepts one connection at a time, reads lines, sends bytes."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="jetfan-pypeer."))
        self.path = str(self.dir / "jetfan.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(4)
        self.listener.settimeout(20)
        self.peer: socket.socket | None = None
        self.buffer = b""

    def close(self) -> None:
        if self.peer:
            self.peer.close()
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def accept(self) -> None:
        if self.peer:
            self.peer.close()
        self.peer, _ = self.listener.accept()
        self.peer.settimeout(20)
        self.buffer = b""

    def greet(self, max_unconfirmed: int) -> None:
        """Answers HELLO as a jetfan that speaks only protocol version 1 does: the client's HELLO 3
        is refused, and the client comes again at once with HELLO 1."""
        self.accept()
        assert self.line() == "HELLO builder 3"
        self.send(b"ERR protocol version 3 is not supported; this jetfan speaks version 1\r\n")
        self.hang_up()
        self.accept()
        assert self.line() == "HELLO builder 1"
        self.send(f"READY 1 builder {max_unconfirmed} #\r\n".encode())

    def greet_v2(self, max_unconfirmed: int) -> None:
        """Answers HELLO 3 as jetfan 0.1.0 does, which speaks versions 1 and 2: READY 2."""
        self.accept()
        assert self.line() == "HELLO builder 3"
        self.send(f"READY 2 builder {max_unconfirmed} #\r\n".encode())

    def greet_v3(self, max_unconfirmed: int) -> None:
        """Answers HELLO 3 as a jetfan that speaks version 3 does."""
        self.accept()
        assert self.line() == "HELLO builder 3"
        self.send(f"READY 3 builder {max_unconfirmed} #\r\n".encode())

    def line(self) -> str:
        """The next line from the client without its line end; "" at end of stream."""
        assert self.peer
        while b"\r\n" not in self.buffer:
            data = self.peer.recv(4096)
            if not data:
                return ""
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line.decode()

    def send(self, data: bytes) -> None:
        assert self.peer
        self.peer.sendall(data)

    def hang_up(self) -> None:
        assert self.peer
        self.peer.close()
        self.peer = None


def msg(id_: int, payload: str) -> bytes:
    return f"MSG {id_} a.b {id_} 1 0 {len(payload)}\r\n{payload}\r\n".encode()


def msg2(id_: int, payload: str, published: int, subject: str, server_deliveries: int = 1) -> bytes:
    return f"MSG {id_} a.b {id_} 1 0 {len(payload)} {published} {subject} {server_deliveries}\r\n{payload}\r\n".encode()


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def msg3(id_: int, payload: str, published: int, subject: str, server_deliveries: int = 1, traceparent: str = "-") -> bytes:
    return (f"MSG {id_} a.b {id_} 1 0 {len(payload)} {published} {subject} {server_deliveries} {traceparent}\r\n"
            f"{payload}\r\n").encode()


def msg_in(version: int, id_: int, payload: str) -> bytes:
    """A MSG in the layout of `version`."""
    if version == 1:
        return msg(id_, payload)
    if version == 2:
        return msg2(id_, payload, 1_700_000_000_000_000_000, "events.a.b")
    return msg3(id_, payload, 1_700_000_000_000_000_000, "events.a.b")


FOUR_AND_A_PING = msg(1, "a") + msg(2, "b") + msg(3, "c") + msg(4, "d") + b"PING\r\n"


class AsyncAgainstPeer(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().set_debug(False)
        self.peer = ScriptedJetfan()
        self.addCleanup(self.peer.close)

    async def connect(self, max_unconfirmed: int, greet: str = "greet", **options: object) -> jetfan.Handler:
        greeter = asyncio.create_task(asyncio.to_thread(getattr(self.peer, greet), max_unconfirmed))
        h = await jetfan.connect(path=self.peer.path, handler="builder", **options)
        await greeter
        return h

    async def test_falls_back_to_version_1_against_a_jetfan_that_speaks_only_1(self) -> None:
        h = await self.connect(4)
        self.assertEqual(h.ready.version, 1)
        self.peer.send(msg(1, "old"))
        m = await h.__anext__()
        self.assertEqual(m.data, b"old")
        self.assertIsNone(m.published)
        self.assertIsNone(m.subject)
        self.assertIsNone(m.server_deliveries)
        m.ack()
        self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 1")
        await h.close()

    async def test_versions_2_and_3_give_published_and_subject(self) -> None:
        # jetfan 0.1.0 answers the client's HELLO 3 with READY 2.
        for greet, version in (("greet_v2", 2), ("greet_v3", 3)):
            with self.subTest(version=version):
                h = await self.connect(4, greet)
                self.assertEqual(h.ready.version, version)
                make = msg2 if version == 2 else msg3
                self.peer.send(make(1, "new", 1_700_000_000_123_456_789, "events.a.b", 3))
                m = await h.__anext__()
                self.assertIsNone(m.traceparent)
                self.assertEqual(m.published, datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=timezone.utc))
                self.assertEqual(m.published_ns, 1_700_000_000_123_456_789)
                self.assertEqual(m.subject, "events.a.b")
                self.assertEqual(m.key, "a.b")
                self.assertEqual(m.deliveries, 1)
                self.assertEqual(m.server_deliveries, 3)
                m.ack()
                self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 1")
                await h.close()

    async def test_version_3_gives_jetfan_s_traceparent_or_none(self) -> None:
        h = await self.connect(4, "greet_v3")
        self.peer.send(msg3(1, "traced", 1, "events.a.b", 1, TRACEPARENT) + msg3(2, "untraced", 1, "events.a.b"))
        traced, untraced = await h.__anext__(), await h.__anext__()
        self.assertEqual((traced.data, traced.traceparent), (b"traced", TRACEPARENT))
        self.assertEqual((untraced.data, untraced.traceparent), (b"untraced", None))
        traced.ack()
        untraced.ack()
        self.assertEqual([await asyncio.to_thread(self.peer.line) for _ in range(2)], ["ACK 1", "ACK 2"])
        await h.close()

    async def test_buffers_no_more_than_max_unconfirmed_and_answers_ping(self) -> None:
        h = await self.connect(2)
        self.peer.send(FOUR_AND_A_PING)  # as after two ack timeouts
        self.assertTrue(await asyncio.to_thread(wait_until, lambda: h.buffered == 2))
        first = await h.__anext__()
        self.assertLessEqual(h.buffered, 2)
        first.ack()
        # Had the client read on past two, its PONG would come before any ACK.
        self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 1")
        for _ in range(3):
            (await h.__anext__()).ack()
            self.assertLessEqual(h.buffered, 2)
        lines = [await asyncio.to_thread(self.peer.line) for _ in range(4)]
        self.assertEqual(sorted(lines), ["ACK 2", "ACK 3", "ACK 4", "PONG"])
        await h.close()

    async def test_a_message_of_an_old_connection_is_never_confirmed_on_a_new_one(self) -> None:
        h = await self.connect(4, reconnect_delay=0.01)
        self.peer.send(msg(1, "old"))
        old = await h.__anext__()
        with self.assertLogs("jetfan.aio", "INFO"):
            self.peer.hang_up()
            greeter = asyncio.create_task(asyncio.to_thread(self.peer.greet, 4))
            await greeter
            self.peer.send(msg(1, "new"))  # the same id, on the new connection
            new = await asyncio.wait_for(h.__anext__(), 20)
        self.assertEqual(new.data, b"new")
        self.assertTrue(old.stale)
        self.assertFalse(old.ack())
        self.assertTrue(new.term("why"))
        self.assertEqual(await asyncio.to_thread(self.peer.line), "TERM 1 why")  # and not "ACK 1" first
        await h.close()

    async def test_err_and_garbage(self) -> None:
        h = await self.connect(4)
        self.peer.send(b"ERR you are too slow\r\n")
        self.peer.hang_up()
        with self.assertRaises(jetfan.JetfanError) as caught, self.assertLogs("jetfan.aio", "ERROR") as logs:
            await asyncio.wait_for(h.__anext__(), 20)
        self.assertEqual(caught.exception.reason, "you are too slow")
        self.assertIn("refused it: you are too slow", logs.output[0])
        await h.close()
        h = await self.connect(4)
        self.peer.send(b"BOGUS\r\n")
        with self.assertRaises(jetfan.ProtocolError) as broken, self.assertLogs("jetfan.aio", "ERROR"):
            await asyncio.wait_for(h.__anext__(), 20)
        self.assertEqual(broken.exception.code, "unknown-verb")
        await h.close()

    async def test_an_answer_to_a_pub_it_never_sent_breaks_the_protocol(self) -> None:
        for answer in (b"PUBOK 1 S 1 0\r\n", b"PUBERR 1 not-allowed\r\n"):
            with self.subTest(answer=answer):
                h = await self.connect(4, "greet_v3")
                self.peer.send(answer)
                with self.assertRaises(jetfan.ProtocolError) as broken, self.assertLogs("jetfan.aio", "ERROR") as logs:
                    await asyncio.wait_for(h.__anext__(), 20)
                self.assertEqual(broken.exception.code, "unexpected-frame")
                self.assertIn("this client sent no PUB", logs.output[0])
                await h.close()

    async def test_delays_in_seconds_reach_the_wire_as_milliseconds(self) -> None:
        h = await self.connect(8)
        self.peer.send(msg(1, "a") + msg(2, "b") + msg(3, "c") + msg(4, "d"))
        one, two, three, four = [await asyncio.wait_for(h.__anext__(), 20) for _ in range(4)]
        self.assertTrue(one.nak(1.5))
        self.assertTrue(two.nak(delay=0.25))
        self.assertTrue(three.nak(0))
        self.assertTrue(four.nak())
        lines = [await asyncio.to_thread(self.peer.line) for _ in range(4)]
        self.assertEqual(lines, ["NAK 1 1500", "NAK 2 250", "NAK 3 0", "NAK 4"])
        await h.close()

    async def test_a_process_callback_raising_nak_delays_it_in_seconds(self) -> None:
        h = await self.connect(4)
        self.peer.send(msg(1, "a"))

        async def handle(message: jetfan.Message) -> None:
            raise jetfan.Nak(2.5)

        task = asyncio.create_task(h.process(handle))
        self.assertEqual(await asyncio.to_thread(self.peer.line), "NAK 1 2500")
        await h.close()
        await asyncio.wait_for(task, 20)

    async def test_a_nak_s_reason_is_written_in_version_3_and_left_out_before(self) -> None:
        for greet, version, want in (
            ("greet_v3", 3, ["NAK 1 - database down", "NAK 2 1500 upstream 503", "NAK 3 0 a  b", "NAK 4", "NAK 5 250"]),
            ("greet_v2", 2, ["NAK 1", "NAK 2 1500", "NAK 3 0", "NAK 4", "NAK 5 250"]),
            ("greet", 1, ["NAK 1", "NAK 2 1500", "NAK 3 0", "NAK 4", "NAK 5 250"]),
        ):
            with self.subTest(version=version):
                h = await self.connect(8, greet)
                self.assertEqual(h.ready.version, version)
                self.peer.send(b"".join(msg_in(version, i, "x") for i in range(1, 6)))
                m = [await asyncio.wait_for(h.__anext__(), 20) for _ in range(5)]
                self.assertTrue(m[0].nak(reason="database down"))
                self.assertTrue(m[1].nak(1.5, reason="upstream 503"))
                self.assertTrue(m[2].nak(0, reason="a\r\nb"))  # each line end a space
                self.assertTrue(m[3].nak(reason=""))
                self.assertTrue(m[4].nak(delay=0.25))
                self.assertEqual([await asyncio.to_thread(self.peer.line) for _ in range(5)], want)
                await h.close()

    async def test_a_raising_callback_s_text_is_the_nak_s_reason(self) -> None:
        h = await self.connect(8, "greet_v3")
        self.peer.send(b"".join(msg_in(3, i, p) for i, p in enumerate("abcd", 1)))

        async def handle(message: jetfan.Message) -> None:
            raise_by_payload(message)

        with self.assertLogs("jetfan.aio", "ERROR") as logs:
            task = asyncio.create_task(h.process(handle))
            lines = [await asyncio.to_thread(self.peer.line) for _ in range(4)]
        self.assertEqual(lines, ["NAK 1 - database down at line 7", "NAK 2 - ValueError", "NAK 3 2500 busy", "NAK 4"])
        self.assertEqual(len(logs.records), 2)  # the two that are not Nak
        await h.close()
        await asyncio.wait_for(task, 20)


class BlockingAgainstPeer(unittest.TestCase):
    def setUp(self) -> None:
        self.peer = ScriptedJetfan()
        self.addCleanup(self.peer.close)

    def connect(self, max_unconfirmed: int, greet: str = "greet", **options: object) -> jetfan.BlockingHandler:
        greeter = threading.Thread(target=getattr(self.peer, greet), args=(max_unconfirmed,))
        greeter.start()
        h = jetfan.BlockingHandler(path=self.peer.path, handler="builder", **options)
        greeter.join()
        return h

    def test_falls_back_to_version_1_and_version_2_gives_published_and_subject(self) -> None:
        with self.connect(4) as h:
            self.assertEqual(h.ready.version, 1)
            self.peer.send(msg(1, "old"))
            m = next(iter(h))
            self.assertIsNone(m.published)
            self.assertIsNone(m.subject)
            self.assertIsNone(m.traceparent)
            m.ack()
            h.flush()
            self.assertEqual(self.peer.line(), "ACK 1")
        greeter = threading.Thread(target=self.peer.greet_v2, args=(4,))
        greeter.start()
        with jetfan.BlockingHandler(path=self.peer.path, handler="builder") as h:
            greeter.join()
            self.assertEqual(h.ready.version, 2)
            self.peer.send(msg2(1, "new", 1_700_000_000_123_456_789, "events.a.b"))
            m = next(iter(h))
            self.assertEqual(m.published, datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=timezone.utc))
            self.assertEqual(m.subject, "events.a.b")
            self.assertIsNone(m.traceparent)
            m.ack()

    def test_version_3_gives_jetfan_s_traceparent_or_none(self) -> None:
        with self.connect(4, "greet_v3") as h:
            self.assertEqual(h.ready.version, 3)
            self.peer.send(msg3(1, "traced", 1, "events.a.b", 1, TRACEPARENT) + msg3(2, "untraced", 1, "events.a.b"))
            messages = iter(h)
            traced, untraced = next(messages), next(messages)
            self.assertEqual((traced.data, traced.traceparent), (b"traced", TRACEPARENT))
            self.assertEqual((untraced.data, untraced.traceparent), (b"untraced", None))
            traced.ack()
            untraced.ack()
            h.flush()
            self.assertEqual([self.peer.line(), self.peer.line()], ["ACK 1", "ACK 2"])

    def test_process_holds_no_more_than_max_unconfirmed_and_answers_ping(self) -> None:
        h = self.connect(2)
        self.peer.send(FOUR_AND_A_PING)
        lock, go = threading.Lock(), threading.Event()
        running, peak = [0], [0]

        def handle(message: jetfan.Message) -> None:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            go.wait(20)
            with lock:
                running[0] -= 1

        runner = threading.Thread(target=h.process, args=(handle,), kwargs={"concurrency": 8})
        runner.start()
        try:
            self.assertTrue(wait_until(lambda: running[0] >= 2))
            go.set()
            lines = []
            while (line := self.peer.line()) != "PONG":
                self.assertTrue(line)
                lines.append(line)
            self.assertTrue(lines and lines[0].startswith("ACK "), lines)  # an ACK before the PONG
            while len(lines) < 4:
                lines.append(self.peer.line())
            self.assertEqual(sorted(lines), ["ACK 1", "ACK 2", "ACK 3", "ACK 4"])
        finally:
            go.set()
            h.close()
            runner.join(20)
        self.assertEqual(peak[0], 2)

    def test_a_message_of_an_old_connection_is_never_confirmed_on_a_new_one(self) -> None:
        with self.connect(4, reconnect_delay=0.01) as h:
            messages = iter(h)
            self.peer.send(msg(1, "old"))
            old = next(messages)
            self.peer.hang_up()
            greeter = threading.Thread(target=lambda: (self.peer.greet(4), self.peer.send(msg(1, "new"))))
            greeter.start()
            with self.assertLogs("jetfan.blocking", "INFO"):
                new = next(messages)
            greeter.join()
            self.assertEqual(new.data, b"new")
            self.assertFalse(old.ack())
            self.assertTrue(new.term("why"))
            h.flush()  # the iterating thread's confirmations go out before it next waits; now, here
            self.assertEqual(self.peer.line(), "TERM 1 why")

    def test_err_and_garbage(self) -> None:
        with self.connect(4) as h:
            self.peer.send(b"ERR you are too slow\r\n")
            with self.assertRaises(jetfan.JetfanError) as caught, self.assertLogs("jetfan.blocking", "ERROR") as logs:
                next(iter(h))
            self.assertEqual(caught.exception.reason, "you are too slow")
            self.assertIn("refused the connection: you are too slow", logs.output[0])
        with self.connect(4) as h:
            self.peer.send(b"BOGUS\r\n")
            with self.assertRaises(jetfan.ProtocolError) as broken, self.assertLogs("jetfan.blocking", "ERROR"):
                next(iter(h))
            self.assertEqual(broken.exception.code, "unknown-verb")

    def test_an_answer_to_a_pub_it_never_sent_breaks_the_protocol(self) -> None:
        for answer in (b"PUBOK 1 S 1 0\r\n", b"PUBERR 1 not-allowed\r\n"):
            with self.subTest(answer=answer), self.connect(4, "greet_v3") as h:
                self.peer.send(answer)
                with self.assertRaises(jetfan.ProtocolError) as broken, self.assertLogs("jetfan.blocking", "ERROR") as logs:
                    next(iter(h))
                self.assertEqual(broken.exception.code, "unexpected-frame")
                self.assertIn("this client sent no PUB", logs.output[0])

    def test_delays_in_seconds_reach_the_wire_as_milliseconds(self) -> None:
        with self.connect(8) as h:
            messages = iter(h)
            self.peer.send(msg(1, "a") + msg(2, "b") + msg(3, "c") + msg(4, "d"))
            one, two, three, four = [next(messages) for _ in range(4)]
            self.assertTrue(one.nak(1.5))
            self.assertTrue(two.nak(delay=0.25))
            self.assertTrue(three.nak(0))
            self.assertTrue(four.nak())
            h.flush()
            lines = [self.peer.line() for _ in range(4)]
        self.assertEqual(lines, ["NAK 1 1500", "NAK 2 250", "NAK 3 0", "NAK 4"])

    def test_a_process_callback_raising_nak_delays_it_in_seconds(self) -> None:
        h = self.connect(4)
        self.peer.send(msg(1, "a"))

        def handle(message: jetfan.Message) -> None:
            raise jetfan.Nak(2.5)

        runner = threading.Thread(target=h.process, args=(handle,))
        runner.start()
        try:
            self.assertEqual(self.peer.line(), "NAK 1 2500")
        finally:
            h.close()
            runner.join(20)
        self.assertFalse(runner.is_alive())

    def test_a_nak_s_reason_is_written_in_version_3_and_left_out_before(self) -> None:
        for greet, version, want in (
            ("greet_v3", 3, ["NAK 1 - database down", "NAK 2 1500 upstream 503", "NAK 3 0 a  b", "NAK 4", "NAK 5 250"]),
            ("greet_v2", 2, ["NAK 1", "NAK 2 1500", "NAK 3 0", "NAK 4", "NAK 5 250"]),
            ("greet", 1, ["NAK 1", "NAK 2 1500", "NAK 3 0", "NAK 4", "NAK 5 250"]),
        ):
            with self.subTest(version=version), self.connect(8, greet) as h:
                self.assertEqual(h.ready.version, version)
                messages = iter(h)
                self.peer.send(b"".join(msg_in(version, i, "x") for i in range(1, 6)))
                m = [next(messages) for _ in range(5)]
                self.assertTrue(m[0].nak(reason="database down"))
                self.assertTrue(m[1].nak(1.5, reason="upstream 503"))
                self.assertTrue(m[2].nak(0, reason="a\r\nb"))  # each line end a space
                self.assertTrue(m[3].nak(reason=""))
                self.assertTrue(m[4].nak(delay=0.25))
                h.flush()
                self.assertEqual([self.peer.line() for _ in range(5)], want)

    def test_a_raising_callback_s_text_is_the_nak_s_reason(self) -> None:
        h = self.connect(8, "greet_v3")
        self.peer.send(b"".join(msg_in(3, i, p) for i, p in enumerate("abcd", 1)))

        handle = raise_by_payload

        runner = threading.Thread(target=h.process, args=(handle,))
        try:
            with self.assertLogs("jetfan.blocking", "ERROR") as logs:
                runner.start()
                lines = [self.peer.line() for _ in range(4)]
        finally:
            h.close()
            runner.join(20)
        self.assertFalse(runner.is_alive())
        self.assertEqual(lines, ["NAK 1 - database down at line 7", "NAK 2 - ValueError", "NAK 3 2500 busy", "NAK 4"])
        self.assertEqual(len(logs.records), 2)  # the two that are not Nak


if __name__ == "__main__":
    unittest.main()
