"""The conformance vectors (proto/vectors/, see its README.md) against the Python codec: every
stream fed whole, cut in two at every byte boundary, and byte by byte; every command encoded, as on
a connection of the vector's version. (The client parses no commands: the parse-commands vectors
are jetfan's to read.)"""

from __future__ import annotations

import json
import unittest
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from jetfan import _codec
from jetfan._codec import Err, FrameParser, MsgFrame, Ping, Pong, ProtocolError, PubErr, PubOk, Ready

VECTORS = Path(__file__).resolve().parents[3] / "proto" / "vectors"


def byte_string(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("latin-1")
    return b"".join(
        byte_string(piece) if not isinstance(piece, dict) else piece["repeat"].encode("latin-1") * piece["count"]
        for piece in value
    )


def text(value: Any) -> str:
    """A text field: its UTF-8 bytes, as the client exposes them."""
    return byte_string(value).decode("utf-8", "surrogateescape")


def expected_frame(f: dict[str, Any]) -> Any:
    kind = f["type"]
    if kind == "READY":
        return Ready(f["version"], text(f["handler"]), f["max_unconfirmed"], [text(p) for p in f["patterns"]])
    if kind == "MSG":
        # published, subject and server_deliveries are version 2's; a version 1 MSG has none.
        # traceparent is version 3's: null (or absent) for none, which the wire writes "-".
        traceparent = f.get("traceparent")
        return MsgFrame(int(f["id"]), text(f["key"]), int(f["seq"]), int(f["deliveries"]),
                        byte_string(f["headers"]), byte_string(f["payload"]),
                        int(f.get("published", "0")), text(f["subject"]) if "subject" in f else "",
                        int(f.get("server_deliveries", "0")), None if traceparent is None else text(traceparent))
    if kind == "ERR":
        return Err(text(f["reason"]))
    if kind == "PUBOK":  # version 3's answers to a PUB
        return PubOk(int(f["id"]), text(f["stream"]), int(f["seq"]), f["duplicate"])
    if kind == "PUBERR":
        return PubErr(int(f["id"]), text(f["code"]), text(f["reason"]))
    if kind in ("PING", "PONG"):
        return Ping() if kind == "PING" else Pong()
    raise AssertionError(f"a frame of unknown type {kind!r}")


def vector_files(kind: str) -> list[dict[str, Any]]:
    files = []
    for path in sorted(VECTORS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != "jetfan-protocol-vectors 1":
            raise AssertionError(f"{path}: unknown format {data.get('format')!r}")
        if data["kind"] == kind:
            files.append(data)
    return files


def parse(pieces: list[bytes], batch: int = 0) -> tuple[list[Any], str | None]:
    """The frames and the error code of a stream fed in `pieces`: with next(), or with
    frames(batch) when `batch` is given (the way the asyncio client reads)."""
    parser, frames = FrameParser(), []
    try:
        for piece in pieces:
            parser.feed(piece)
            if batch:
                while got := parser.frames(batch):
                    assert len(got) <= batch
                    frames += got
            else:
                while (frame := parser.next()) is not None:
                    frames.append(frame)
    except ProtocolError as error:
        return frames, error.code
    return frames, None


class ParseFrames(unittest.TestCase):
    def test_every_split(self) -> None:
        files = vector_files("parse-frames")
        self.assertTrue(files, f"no parse-frames vectors in {VECTORS}")
        count = 0
        for data in files:
            for vector in data["vectors"]:
                stream = byte_string(vector["input"])
                want = ([expected_frame(f) for f in vector["frames"]], vector["error"])
                with self.subTest(vector["name"]):
                    self.assertEqual(parse([stream]), want, "whole")
                    for batch in (1, 2, 1000):
                        self.assertEqual(parse([stream], batch), want, f"whole, frames({batch})")
                    # Every cut: long streams are cut near their ends and around each frame only.
                    cuts = range(len(stream) + 1) if len(stream) <= 20000 else [*range(0, 64), *range(len(stream) - 64, len(stream) + 1)]
                    for cut in cuts:
                        self.assertEqual(parse([stream[:cut], stream[cut:]]), want, f"cut at {cut}")
                        self.assertEqual(parse([stream[:cut], stream[cut:]], 1000), want, f"cut at {cut}, frames()")
                    if len(stream) <= 20000:
                        self.assertEqual(parse([stream[i : i + 1] for i in range(len(stream))]), want, "byte by byte")
                count += 1
        self.assertGreater(count, 0)


class FramesInOnePass(unittest.TestCase):
    """frames(), the asyncio client's reader, reads jetfan's canonical MSG lines on a fast path:
    what it gives must be what next() gives, including where the fast path must step aside."""

    def test_frames_gives_what_next_gives(self) -> None:
        body = b"payload \r\n inside"
        msgs = [b"MSG %d a.k%d %d 1 0 %d 1764700000000000000 evt.a.k%d 1\r\n%s\r\n" % (i, i, i, len(body), i, body)
                for i in range(1, 41)]
        odd = [
            b"MSG 41 a.b 18446744073709551615 2 0 1 1 evt.a.b 1\r\nx\r\n",  # 20 digits: the general way
            b"MSG 42 a\rb 7 1 0 1 1 evt.a\rb 1\r\nx\r\n",  # a \r inside the key is a byte
            b"MSG 43 a.b 8 1 0 1 1 evt.a.b 1\nx\r\n",  # a bare \n ends the line too
            b"MSG 44 a.b 9 1 3 5 1 evt.a.b 1\r\nh: vx\r\n",  # headers
        ]
        stream = b"READY 2 h 1000 #\r\n" + b"".join(msgs[:20] + odd + msgs[20:])
        want = parse([stream])
        self.assertIsNone(want[1])
        self.assertEqual(len(want[0]), 1 + 40 + len(odd))
        for batch in (1, 3, 1000):
            self.assertEqual(parse([stream], batch), want, f"frames({batch})")
            cuts = [stream[i : i + 97] for i in range(0, len(stream), 97)]
            self.assertEqual(parse(cuts, batch), want, f"in 97-byte reads, frames({batch})")

    def test_version_3_frames_gives_what_next_gives(self) -> None:
        tp = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        msgs = [b"MSG %d a.k %d 1 0 1 1764700000000000000 evt.a.k 1 %s\r\nx\r\n" % (i, i, tp if i % 2 else b"-")
                for i in range(1, 21)]
        stream = b"READY 3 h 1000 #\r\n" + b"".join(msgs)
        want = parse([stream])
        self.assertIsNone(want[1])
        self.assertEqual([f.traceparent for f in want[0][1:]], [tp.decode() if i % 2 else None for i in range(1, 21)])
        for batch in (1, 3, 1000):
            self.assertEqual(parse([stream], batch), want, f"frames({batch})")
            cuts = [stream[i : i + 97] for i in range(0, len(stream), 97)]
            self.assertEqual(parse(cuts, batch), want, f"in 97-byte reads, frames({batch})")
        # A bad traceparent, in the fast path's shape or not, comes after the frames before it.
        for bad in (tp.upper(), b"ff" + tp[2:], b"00-" + b"0" * 32 + tp[35:], tp + b"0", b"x"):
            with self.subTest(bad=bad):
                parser = FrameParser()
                parser.feed(stream[: len(stream) - len(msgs[-1])] + msgs[0].replace(tp, bad))
                self.assertIsInstance(parser.frames(1000)[0], Ready)  # frames() stops after a READY
                self.assertEqual(len(parser.frames(1000)), 19)
                with self.assertRaises(ProtocolError) as raised:
                    parser.frames(10)
                self.assertEqual(raised.exception.code, "bad-traceparent")

    def test_an_error_comes_after_the_frames_before_it(self) -> None:
        good = b"MSG 1 a 1 1 0 1 1 evt.a 1\r\nx\r\n"
        for bad, code in ((b"MSG 2 a 2 1 0 1 1 evt.a 1\r\nxy\r\n", "bad-body-end"),
                          (b"MSG 2 a 2 1 5 1 1 evt.a 1\r\nx\r\n", "header-exceeds-total"),
                          (b"NOPE\r\n", "unknown-verb")):
            with self.subTest(code):
                parser = FrameParser()
                parser.feed(b"READY 2 h 1000 #\r\n")
                self.assertIsInstance(parser.frames(10)[0], Ready)
                parser.feed(good * 3 + bad + good)
                self.assertEqual([f.id for f in parser.frames(10)], [1, 1, 1])
                with self.assertRaises(ProtocolError) as raised:
                    parser.frames(10)
                self.assertEqual(raised.exception.code, code)
                with self.assertRaises(ProtocolError):
                    parser.next()  # the stream stays broken


class EncodeCommands(unittest.TestCase):
    def test_encode(self) -> None:
        files = vector_files("encode-commands")
        self.assertTrue(files, f"no encode-commands vectors in {VECTORS}")
        versions = set()
        for data in files:
            for vector in data["vectors"]:
                f, want = vector["frame"], byte_string(vector["bytes"])
                kind = f["type"]
                # The version of the connection the command is written on (1 when absent).
                version = vector.get("version", 1)
                versions.add(version)
                with self.subTest(vector["name"]):
                    if kind == "HELLO":
                        got = _codec.encode_hello(text(f["handler"]), f["version"])
                    elif kind == "ACK":
                        got = _codec.encode_ack(int(f["id"]))
                    elif kind == "NAK":
                        # The encoder takes seconds: the vector's milliseconds, exactly.
                        delay = None if f["delay_ms"] is None else Fraction(int(f["delay_ms"]), 1000)
                        # A NAK without a reason field has none; one is written from version 3 on.
                        got = _codec.encode_nak(int(f["id"]), delay, text(f.get("reason", "")), version)
                    elif kind == "TERM":
                        got = _codec.encode_term(int(f["id"]), text(f["reason"]))
                    elif kind == "WIP":
                        got = _codec.encode_wip(int(f["id"]))
                    elif kind == "PUB":
                        # tied_to and index: both null, or the delivery and the publish's index for it.
                        tied = f["tied_to"] is not None
                        got = _codec.encode_pub(int(f["id"]), text(f["subject"]), byte_string(f["headers"]),
                                                byte_string(f["payload"]), int(f["tied_to"]) if tied else None,
                                                int(f["index"]) if tied else 0)
                    elif kind in ("PING", "PONG"):
                        got = _codec.PING_LINE if kind == "PING" else _codec.PONG_LINE
                    else:
                        raise AssertionError(f"a command of unknown type {kind!r}")
                    self.assertEqual(got, want)
        self.assertLessEqual({1, 2, 3}, versions, "the vectors of every version this client speaks")


class ReadBackFrames(unittest.TestCase):
    def test_parser_reads_what_jetfan_writes(self) -> None:
        for data in vector_files("encode-frames"):
            for vector in data["vectors"]:
                with self.subTest(vector["name"]):
                    # Written on a connection of the vector's version: a READY of it comes first.
                    version = vector.get("version", 1)
                    ready = b"" if version == 1 else b"READY %d h 1 #\r\n" % version
                    frames, error = parse([ready + byte_string(vector["bytes"])])
                    self.assertIsNone(error)
                    self.assertEqual(parse([ready + byte_string(vector["bytes"])], 1000), (frames, None))
                    want = expected_frame(vector["frame"])
                    if isinstance(want, (Err, PubErr)):  # jetfan writes each line end in a reason as a space
                        want = replace(want, reason=want.reason.replace("\r", " ").replace("\n", " "))
                    self.assertEqual(frames[1:] if version != 1 else frames, [want])


if __name__ == "__main__":
    unittest.main()
