"""Both clients against a scripted peer on a real Unix socket, for what the real jetfan cannot be
made to do on cue, or show: send PING, send more than max-unconfirmed (as it does after ack
timeouts), reuse a delivery id on a new connection, send garbage, answer as an older jetfan does;
the exact bytes of a NAK whose delay is given in seconds, and of its reason in each version; PUB's
bytes, answers in any order and between messages, a connection that ends with publishes waiting, a
stale message's publish, and an older jetfan without PUB."""

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

    def pub(self) -> tuple[str, bytes]:
        """The next line, a PUB, and its body (headers and payload)."""
        line = self.line()
        assert line.startswith("PUB "), line
        total = int(line.split()[4])
        assert self.peer
        while len(self.buffer) < total + 2:
            data = self.peer.recv(65536)
            assert data, "the client closed inside a PUB body"
            self.buffer += data
        body, end, self.buffer = self.buffer[:total], self.buffer[total : total + 2], self.buffer[total + 2 :]
        assert end == b"\r\n", end
        return line, body

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
                self.assertIn("but no PUB 1 of this connection waits for an answer", logs.output[0])
                await h.close()

    async def test_publishes_on_the_wire_and_answers_in_any_order_between_messages(self) -> None:
        h = await self.connect(4, "greet_v3")
        self.peer.send(msg_in(3, 7, "in"))
        m = await asyncio.wait_for(h.__anext__(), 20)
        t0 = m.publish("out.t", "t0")  # tied: delivery 7, index 0, 1, ... in call order
        t1 = m.publish("out.t", b"t1", headers={"A": "1"})
        self.assertTrue(m.ack())  # at once: jetfan holds it until the tied publishes are stored
        untied = asyncio.create_task(h.publish("out.u", "u"))
        pubs = [await asyncio.to_thread(self.peer.pub) for _ in range(2)]
        self.assertEqual(pubs, [("PUB 1 out.t 0 2 7 0", b"t0"), ("PUB 2 out.t 18 20 7 1", b"NATS/1.0\r\nA: 1\r\n\r\nt1")])
        self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 7")  # behind the PUBs it waits for
        self.assertEqual(await asyncio.to_thread(self.peer.pub), ("PUB 3 out.u 0 1", b"u"))
        self.peer.send(b"PUBERR 2 refused stream full: max msgs\r\n" + msg_in(3, 8, "between")
                       + b"PUBOK 3 OUT 5 0\r\nPUBOK 1 OUT 4 1\r\n")
        self.assertEqual(await asyncio.wait_for(untied, 20), jetfan.Published("OUT", 5, False))
        self.assertEqual(await t0, jetfan.Published("OUT", 4, True))
        with self.assertRaises(jetfan.PublishError) as caught:
            await t1
        self.assertEqual((caught.exception.code, caught.exception.reason), ("refused", "stream full: max msgs"))
        between = await asyncio.wait_for(h.__anext__(), 20)
        self.assertEqual(between.data, b"between")
        between.ack()
        self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 8")
        await h.close()

    async def test_publishes_waiting_when_the_connection_ends_fail_and_a_stale_message_publishes_nothing(self) -> None:
        h = await self.connect(4, "greet_v3", reconnect_delay=0.01)
        self.peer.send(msg_in(3, 1, "in"))
        old = await asyncio.wait_for(h.__anext__(), 20)
        tied = old.publish("out.t", "t")
        untied = asyncio.create_task(h.publish("out.u", "u"))
        self.assertEqual([(await asyncio.to_thread(self.peer.pub))[0] for _ in range(2)], ["PUB 1 out.t 0 1 1 0", "PUB 2 out.u 0 1"])
        with self.assertLogs("jetfan.aio", "WARNING"):
            self.peer.hang_up()  # no answers: the outcome is unknown
            for waiting in (tied, untied):
                with self.assertRaises(jetfan.PublishError) as caught:
                    await asyncio.wait_for(waiting, 20)
                self.assertEqual(caught.exception.code, "connection-lost")
                self.assertTrue(caught.exception.maybe_stored)
        with self.assertRaises(jetfan.PublishError) as stale:
            old.publish("out.t", "again")  # its connection is gone: refused, never sent on a new one
        self.assertEqual(stale.exception.code, "not-in-flight")
        with self.assertLogs("jetfan.aio", "INFO"):
            await asyncio.to_thread(self.peer.greet_v3, 4)
            self.peer.send(msg_in(3, 1, "new"))
            new = await asyncio.wait_for(h.__anext__(), 20)
        self.assertTrue(new.ack())
        self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 1")  # the first line: no PUB before it
        await h.close()

    async def test_an_answer_behind_more_messages_than_it_buffers_is_read(self) -> None:
        h = await self.connect(1, "greet_v3")
        self.peer.send(msg_in(3, 1, "in"))
        m = await asyncio.wait_for(h.__anext__(), 20)
        tied = m.publish("out.t", "t")
        self.assertEqual((await asyncio.to_thread(self.peer.pub))[0], "PUB 1 out.t 0 1 1 0")
        # Two more messages (as after ack timeouts), then the answer: holding one message, the
        # client would stop reading before the answer, and the handler awaiting it would wait for good.
        self.peer.send(msg_in(3, 2, "b") + msg_in(3, 3, "c") + b"PUBOK 1 OUT 1 0\r\n")
        self.assertEqual(await asyncio.wait_for(tied, 20), jetfan.Published("OUT", 1, False))
        m.ack()
        for expected in (b"b", b"c"):
            nxt = await asyncio.wait_for(h.__anext__(), 20)
            self.assertEqual(nxt.data, expected)
            nxt.ack()
        self.assertEqual([await asyncio.to_thread(self.peer.line) for _ in range(3)], ["ACK 1", "ACK 2", "ACK 3"])
        await h.close()

    async def test_a_publish_made_while_the_buffer_is_full_gets_its_answer(self) -> None:
        h = await self.connect(1, "greet_v3")
        self.peer.send(msg_in(3, 1, "a") + msg_in(3, 2, "b"))  # one more than it may hold (ack timeouts)
        m = await asyncio.wait_for(h.__anext__(), 20)
        self.assertTrue(await asyncio.to_thread(wait_until, lambda: h.buffered == 1))  # "b": full, reading paused
        tied = m.publish("out.t", "t")
        self.assertEqual((await asyncio.to_thread(self.peer.pub))[0], "PUB 1 out.t 0 1 1 0")
        self.peer.send(b"PUBOK 1 OUT 1 0\r\n")
        self.assertEqual(await asyncio.wait_for(tied, 20), jetfan.Published("OUT", 1, False))
        await h.close()

    async def test_without_version_3_nothing_is_published(self) -> None:
        h = await self.connect(4, "greet_v2")
        self.peer.send(msg_in(2, 1, "in"))
        m = await asyncio.wait_for(h.__anext__(), 20)
        with self.assertRaises(jetfan.PublishError) as tied:
            m.publish("out.t", "t")
        with self.assertRaises(jetfan.PublishError) as untied:
            await h.publish("out.u", "u")
        self.assertEqual((tied.exception.code, untied.exception.code), ("unsupported", "unsupported"))
        self.assertIn("protocol version 2", tied.exception.reason)
        m.ack()
        self.assertEqual(await asyncio.to_thread(self.peer.line), "ACK 1")
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
                self.assertIn("but no PUB 1 of this connection waits for an answer", logs.output[0])

    def test_publishes_on_the_wire_and_answers_in_any_order_between_messages(self) -> None:
        with self.connect(4, "greet_v3") as h:
            messages = iter(h)
            self.peer.send(msg_in(3, 7, "in"))
            m = next(messages)
            t0 = m.publish("out.t", "t0")
            t1 = m.publish("out.t", b"t1", headers={"A": "1"})
            self.assertTrue(m.ack())
            got: list[object] = []
            # Another thread waits while the iterating one does not read: it reads for itself, and
            # keeps the message it reads for the loop.
            other = threading.Thread(target=lambda: got.append(h.publish("out.u", "u")))
            other.start()
            pubs = [self.peer.pub() for _ in range(2)]
            self.assertEqual(pubs, [("PUB 1 out.t 0 2 7 0", b"t0"), ("PUB 2 out.t 18 20 7 1", b"NATS/1.0\r\nA: 1\r\n\r\nt1")])
            self.assertEqual(self.peer.line(), "ACK 7")  # written with the other thread's PUB, behind the tied ones
            self.assertEqual(self.peer.pub(), ("PUB 3 out.u 0 1", b"u"))
            self.peer.send(b"PUBERR 2 refused stream full: max msgs\r\n" + msg_in(3, 8, "between") + b"PUBOK 3 OUT 5 0\r\n")
            other.join(20)
            self.assertEqual(got, [jetfan.Published("OUT", 5, False)])
            self.peer.send(b"PUBOK 1 OUT 4 1\r\n")
            self.assertEqual(t0.result(20), jetfan.Published("OUT", 4, True))  # read by the iterating thread
            error = t1.exception(20)
            assert isinstance(error, jetfan.PublishError)
            self.assertEqual((error.code, error.reason), ("refused", "stream full: max msgs"))
            self.assertFalse(t1.cancel())  # a PUB sent is not taken back
            between = next(messages)
            self.assertEqual(between.data, b"between")
            between.ack()
            h.flush()
            self.assertEqual(self.peer.line(), "ACK 8")

    def test_publishes_waiting_when_the_connection_ends_fail_and_a_stale_message_publishes_nothing(self) -> None:
        with self.connect(4, "greet_v3", reconnect_delay=0.01) as h:
            messages = iter(h)
            self.peer.send(msg_in(3, 1, "in"))
            old = next(messages)
            tied = old.publish("out.t", "t")
            h.flush()
            self.assertEqual(self.peer.pub()[0], "PUB 1 out.t 0 1 1 0")
            self.peer.hang_up()  # no answer: the outcome is unknown
            error = tied.exception(20)  # the iterating thread reads, and finds the end
            assert isinstance(error, jetfan.PublishError)
            self.assertEqual(error.code, "connection-lost")
            self.assertTrue(error.maybe_stored)
            with self.assertRaises(jetfan.PublishError) as stale:
                old.publish("out.t", "again")
            self.assertEqual(stale.exception.code, "not-in-flight")
            greeter = threading.Thread(target=lambda: (self.peer.greet_v3(4), self.peer.send(msg_in(3, 1, "new"))))
            greeter.start()
            with self.assertLogs("jetfan.blocking", "INFO"):
                new = next(messages)
            greeter.join()
            self.assertTrue(new.ack())
            h.flush()
            self.assertEqual(self.peer.line(), "ACK 1")  # the first line: no PUB before it

    def test_without_version_3_nothing_is_published(self) -> None:
        with self.connect(4, "greet_v2") as h:
            self.peer.send(msg_in(2, 1, "in"))
            m = next(iter(h))
            with self.assertRaises(jetfan.PublishError) as tied:
                m.publish("out.t", "t")
            with self.assertRaises(jetfan.PublishError) as untied:
                h.publish("out.u", "u")
            self.assertEqual((tied.exception.code, untied.exception.code), ("unsupported", "unsupported"))
            m.ack()
            h.flush()
            self.assertEqual(self.peer.line(), "ACK 1")

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
