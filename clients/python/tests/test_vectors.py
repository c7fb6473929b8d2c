"""The conformance vectors (proto/vectors/, see its README.md) against the Python codec: every
stream fed whole, cut in two at every byte boundary, and byte by byte; every command encoded."""

from __future__ import annotations

import json
import unittest
from fractions import Fraction
from pathlib import Path
from typing import Any

from jetfan import _codec
from jetfan._codec import Err, FrameParser, MsgFrame, Ping, Pong, ProtocolError, Ready

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
        # published and subject are version 2's; a version 1 MSG has neither.
        return MsgFrame(int(f["id"]), text(f["key"]), int(f["seq"]), int(f["deliveries"]),
                        byte_string(f["headers"]), byte_string(f["payload"]),
                        int(f.get("published", "0")), text(f["subject"]) if "subject" in f else "")
    if kind == "ERR":
        return Err(text(f["reason"]))
    return Ping() if kind == "PING" else Pong()


def vector_files(kind: str) -> list[dict[str, Any]]:
    files = []
    for path in sorted(VECTORS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != "jetfan-protocol-vectors 1":
            raise AssertionError(f"{path}: unknown format {data.get('format')!r}")
        if data["kind"] == kind:
            files.append(data)
    return files


def parse(pieces: list[bytes]) -> tuple[list[Any], str | None]:
    parser, frames = FrameParser(), []
    try:
        for piece in pieces:
            parser.feed(piece)
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
                    # Every cut: long streams are cut near their ends and around each frame only.
                    cuts = range(len(stream) + 1) if len(stream) <= 20000 else [*range(0, 64), *range(len(stream) - 64, len(stream) + 1)]
                    for cut in cuts:
                        self.assertEqual(parse([stream[:cut], stream[cut:]]), want, f"cut at {cut}")
                    if len(stream) <= 20000:
                        self.assertEqual(parse([stream[i : i + 1] for i in range(len(stream))]), want, "byte by byte")
                count += 1
        self.assertGreater(count, 0)


class EncodeCommands(unittest.TestCase):
    def test_encode(self) -> None:
        for data in vector_files("encode-commands"):
            for vector in data["vectors"]:
                f, want = vector["frame"], byte_string(vector["bytes"])
                kind = f["type"]
                with self.subTest(vector["name"]):
                    if kind == "HELLO":
                        got = _codec.encode_hello(text(f["handler"]), f["version"])
                    elif kind == "ACK":
                        got = _codec.encode_ack(int(f["id"]))
                    elif kind == "NAK":
                        # The encoder takes seconds: the vector's milliseconds, exactly.
                        delay = None if f["delay_ms"] is None else Fraction(int(f["delay_ms"]), 1000)
                        got = _codec.encode_nak(int(f["id"]), delay)
                    elif kind == "TERM":
                        got = _codec.encode_term(int(f["id"]), text(f["reason"]))
                    elif kind == "WIP":
                        got = _codec.encode_wip(int(f["id"]))
                    else:
                        got = _codec.PING_LINE if kind == "PING" else _codec.PONG_LINE
                    self.assertEqual(got, want)


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
                    want = expected_frame(vector["frame"])
                    if isinstance(want, Err):  # jetfan writes each line end in a reason as a space
                        want = Err(want.reason.replace("\r", " ").replace("\n", " "))
                    self.assertEqual(frames[1:] if version != 1 else frames, [want])


if __name__ == "__main__":
    unittest.main()
