"""The handler protocol, versions 1 to 3 (proto/PROTOCOL.md): what jetfan sends parsed incrementally, and
what a handler sends encoded. Pure: no I/O, no clock, no threads. Version 3's MSG is version 2's with the
delivery's traceparent at the end; version 3 adds a reason to NAK, and publishing: PUB, which jetfan answers
with PUBOK or PUBERR."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Callable, NamedTuple, Optional, Union

VERSION = 3  # the highest protocol version this client speaks (it speaks every one from 1 up)
NAK_REASON_VERSION = 3  # the first protocol version in which a NAK may carry a reason
TRACEPARENT_VERSION = 3  # the first protocol version whose MSG ends with the delivery's traceparent
PUBLISH_VERSION = 3  # the first protocol version with PUB, and with PUBOK and PUBERR, jetfan's answers to it
MAX_COMMAND_LINE = 1024  # handler -> jetfan, line end included
MAX_DELIVERY_LINE = 16384  # jetfan -> handler, line end included
MAX_BODY = 64 * 1024 * 1024  # headers and payload of one MSG or PUB
MAX_SMALL_NUMBER = 1_000_000  # a protocol version, READY's max-unconfirmed
_MAX_U64 = 2**64 - 1

Delay = Union[float, Fraction, Decimal]  # seconds; an int is a float here (PEP 484)


class ProtocolError(Exception):
    """jetfan sent bytes the protocol does not allow. `code` is the stable name of what was wrong
    (PROTOCOL.md, "Error codes"), e.g. "line-too-long"; the message is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code


@dataclass(frozen=True)
class Ready:
    """jetfan's answer to HELLO."""

    version: int
    handler: str
    max_unconfirmed: int  # how many deliveries may be unconfirmed at once on this connection
    patterns: list[str] = field(default_factory=list)


class MsgFrame(NamedTuple):  # a tuple: the cheapest to make, once per message
    id: int  # names the delivery on this connection only
    key: str
    seq: int
    deliveries: int  # of this message to this handler, this one included: 1 the first time
    headers: bytes  # the NATS header block as JetStream sent it, or b""
    payload: bytes
    # From version 2 on: when JetStream stored it, in nanoseconds since 1970 UTC (0: unknown, and in
    # version 1), its full NATS subject ("" in version 1), and how often JetStream has delivered it to
    # jetfan (0 in version 1).
    published: int = 0
    subject: str = ""
    server_deliveries: int = 0
    # From version 3 on: the W3C traceparent of jetfan's span of this delivery; None for "-" (jetfan
    # does not trace it) and before version 3.
    traceparent: Optional[str] = None


@dataclass(frozen=True)
class Err:
    reason: str


@dataclass(frozen=True)
class PubOk:
    """Version 3 on: JetStream stored the PUB whose request id is `id`, in `stream` at `seq`."""

    id: int  # the PUB's request id
    stream: str
    seq: int
    duplicate: bool  # the stream already held a message with its Nats-Msg-Id: `seq` is that one's


@dataclass(frozen=True)
class PubErr:
    """Version 3 on: the PUB whose request id is `id` was not stored, or jetfan does not know that it
    was. `code` says why (PROTOCOL.md, "Publishing"), kept as it came when this client does not know it."""

    id: int  # the PUB's request id
    code: str  # e.g. "not-allowed", "timeout" (after which the message may have been stored)
    reason: str = ""  # for people; "" when the line has none


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Pong:
    pass


_new_frame = tuple.__new__

Frame = Union[Ready, MsgFrame, Err, Ping, Pong, PubOk, PubErr]
PING, PONG = Ping(), Pong()


def _text(raw: bytes) -> str:
    # Keys and names are UTF-8; bytes that are not survive as surrogates and encode back unchanged.
    return raw.decode("utf-8", "surrogateescape")


def _number(word: bytes, limit: int = _MAX_U64) -> int:
    if not (0 < len(word) <= 20 and word.isdigit()):
        raise ProtocolError("bad-number", f"not a number: {word[:32]!r}")
    value = int(word)
    if value > limit:
        raise ProtocolError("bad-number", f"number out of range: {word.decode()}")
    return value


# A version 3 MSG's traceparent when it is not "-": the W3C shape, lowercase hex, 55 bytes, version not ff,
# neither id all zeros.
_TRACEPARENT = re.compile(rb"(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}").fullmatch


def _traceparent(word: bytes) -> Optional[str]:
    """A version 3 MSG's last word as the frame holds it: None for "-"."""
    if word == b"-":
        return None
    if _TRACEPARENT(word) is None:
        shown = "".join(chr(c) if 0x20 <= c <= 0x7E else "?" for c in word[:64])
        raise ProtocolError(
            "bad-traceparent", f'MSG: traceparent "{shown}" is neither - nor a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)'
        )
    return word.decode("ascii")


# A line's first three words and the blanks after each: what comes before PUBERR's reason.
_THREE_WORDS = re.compile(rb"[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+[^ \t]+[ \t]+").match


# MSG as jetfan writes it: upper case, single spaces, numbers of at most 20 digits.
_CANONICAL_MSG = re.compile(rb"MSG (\d{1,20}) ([^ \t]+) (\d{1,20}) (\d{1,20}) (\d{1,20}) (\d{1,20})").fullmatch
_CANONICAL_MSG2 = re.compile(
    rb"MSG (\d{1,20}) ([^ \t]+) (\d{1,20}) (\d{1,20}) (\d{1,20}) (\d{1,20}) (\d{1,20}) ([^ \t]+) (\d{1,20})"
).fullmatch
_CANONICAL_MSG3 = re.compile(
    rb"MSG (\d{1,20}) ([^ \t]+) (\d{1,20}) (\d{1,20}) (\d{1,20}) (\d{1,20}) (\d{1,20}) ([^ \t]+) (\d{1,20}) ([^ \t]+)"
).fullmatch


# The same with its line end, for reading a whole read's MSGs in one pass (FrameParser.frames). Numbers of
# at most 19 digits are below 2**64, so the fast path needs no range checks; anything else (20 digits, a
# \r inside a word, a bare \n) goes the general way, which names any error.
_WHOLE_MSG2 = re.compile(
    rb"MSG (\d{1,19}) ([^ \t\r\n]+) (\d{1,19}) (\d{1,19}) (\d{1,19}) (\d{1,19}) (\d{1,19}) ([^ \t\r\n]+) (\d{1,19})\r\n"
).match
# Version 3's: its traceparent, "-" or 55 bytes (checked after the match; a bad one goes the general way).
_WHOLE_MSG3 = re.compile(
    rb"MSG (\d{1,19}) ([^ \t\r\n]+) (\d{1,19}) (\d{1,19}) (\d{1,19}) (\d{1,19}) (\d{1,19}) ([^ \t\r\n]+) (\d{1,19})"
    rb" (-|[0-9a-f-]{55})\r\n"
).match


def _whole_msg(version: int) -> Optional[Callable[[bytes, int], Optional[re.Match[bytes]]]]:
    """The fast path's pattern for a stream of `version` (version 1 has none)."""
    return _WHOLE_MSG3 if version >= TRACEPARENT_VERSION else _WHOLE_MSG2 if version >= 2 else None


class FrameParser:
    """Cuts what jetfan sends into frames. Feed bytes with feed(), take frames with next(). After a
    ProtocolError the stream is unusable and every call raises it again. Not thread-safe. MSG is
    read in the layout of the version the last READY named (version 1 before any); PUBOK and PUBERR
    are frames once it names version 3 or later, unknown verbs before."""

    __slots__ = ("_buf", "_pos", "_msg", "_error", "_version")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0
        # While a MSG body is awaited: (id, key, seq, deliveries, header_bytes, total_bytes,
        # published, subject, server_deliveries, traceparent).
        self._msg: Optional[tuple[int, str, int, int, int, int, int, str, int, Optional[str]]] = None
        self._error: Optional[ProtocolError] = None
        self._version = 1

    def feed(self, data: bytes) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        elif self._pos > 65536:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes fed and not yet consumed by a frame."""
        return len(self._buf) - self._pos

    def next(self) -> Optional[Frame]:
        """The next whole frame, or None until more bytes are fed."""
        if self._error:
            raise self._error
        try:
            return self._next()
        except ProtocolError as error:
            self._error = error
            raise

    def frames(self, limit: int) -> list[Frame]:
        """Up to `limit` (at least 1) whole frames, oldest first: as many calls to next() would give,
        in one pass, which is what a reader of a whole socket read wants. Empty until more bytes are
        fed. It stops after any frame that is not a MSG (a READY may change how the next MSG reads).
        On a ProtocolError it returns the frames before it, and the next call raises it."""
        out: list[Frame] = []
        if self._error:
            raise self._error
        match = _whole_msg(self._version)
        # The fast path reads a bytes copy of what is unread, made once per call: a slice of bytes is
        # bytes, copied once, where one of the bytearray would be copied twice. It is not made while
        # a MSG body is awaited (that waits in the bytearray, however large it grows).
        data, base, size = b"", 0, 0
        append = out.append
        try:
            while len(out) < limit:
                if match is not None and self._msg is None:
                    if not data:
                        base = self._pos
                        data = bytes(self._buf[base:])
                        size = len(data)
                    pos = self._pos - base
                    m = match(data, pos)
                    if m is not None:
                        start = m.end()
                        id_s, key_b, seq_s, deliveries_s, header_s, total_s, published_s, subject_b, server_s = m.groups()[:9]
                        header_bytes, total = int(header_s), int(total_s)
                        end = start + total
                        traceparent = None
                        if m.lastindex == 10:  # version 3
                            word = m.group(10)
                            if word != b"-":
                                traceparent = word.decode("ascii") if _TRACEPARENT(word) is not None else ""
                        if (
                            start - pos <= MAX_DELIVERY_LINE
                            and header_bytes <= total <= MAX_BODY
                            and end + 2 <= size
                            and data[end] == 0x0D
                            and data[end + 1] == 0x0A
                            and traceparent != ""  # "": not a traceparent, which the general way names
                        ):
                            self._pos = base + end + 2
                            body = start + header_bytes
                            append(
                                _new_frame(  # a MsgFrame, less the Python-level __new__ of NamedTuple
                                    MsgFrame,
                                    (
                                        int(id_s),
                                        key_b.decode("utf-8", "surrogateescape"),
                                        int(seq_s),
                                        int(deliveries_s),
                                        data[start:body],
                                        data[body:end],
                                        int(published_s),
                                        subject_b.decode("utf-8", "surrogateescape"),
                                        int(server_s),
                                        traceparent,
                                    ),
                                )
                            )
                            continue
                frame = self._next()  # a partial frame, or anything not a whole canonical MSG
                if frame is None:
                    break
                append(frame)
                if type(frame) is not MsgFrame:
                    break
                match = _whole_msg(self._version)
        except ProtocolError as error:
            self._error = error
            if not out:
                raise
        return out

    def _next(self) -> Optional[Frame]:
        buf, pos = self._buf, self._pos
        while True:
            if self._msg is not None:
                id_, key, seq, deliveries, header_bytes, total, published, subject, server, traceparent = self._msg
                end = pos + total
                if len(buf) < end + 2:
                    return None
                if buf[end] != 0x0D or buf[end + 1] != 0x0A:
                    raise ProtocolError("bad-body-end", "MSG body not followed by \\r\\n")
                headers = bytes(buf[pos : pos + header_bytes]) if header_bytes else b""
                payload = bytes(buf[pos + header_bytes : end])
                self._pos = end + 2
                self._msg = None
                return MsgFrame(id_, key, seq, deliveries, headers, payload, published, subject, server, traceparent)
            newline = buf.find(b"\n", pos, pos + MAX_DELIVERY_LINE)
            if newline < 0:
                if len(buf) - pos >= MAX_DELIVERY_LINE:
                    raise ProtocolError("line-too-long", f"control line longer than {MAX_DELIVERY_LINE} bytes")
                return None
            line_end = newline - 1 if newline > pos and buf[newline - 1] == 0x0D else newline
            # The MSG line as jetfan writes it, read in one step; anything else the general way.
            v2 = self._version >= 2
            v3 = self._version >= TRACEPARENT_VERSION
            fast = (_CANONICAL_MSG3 if v3 else _CANONICAL_MSG2 if v2 else _CANONICAL_MSG)(buf, pos, line_end)
            if fast is not None:
                groups = fast.groups()
                id_s, key_b, seq_s, deliveries_s, header_s, total_s = groups[:6]
                id_, seq, deliveries, header_bytes, total = int(id_s), int(seq_s), int(deliveries_s), int(header_s), int(total_s)
                published, subject, server = (
                    (int(groups[6]), groups[7].decode("utf-8", "surrogateescape"), int(groups[8])) if v2 else (0, "", 0)
                )
                traceparent = None
                if v3 and groups[9] != b"-":
                    traceparent = groups[9].decode("ascii") if _TRACEPARENT(groups[9]) is not None else ""
                if (
                    id_ > _MAX_U64
                    or seq > _MAX_U64
                    or deliveries > _MAX_U64
                    or published > _MAX_U64
                    or server > _MAX_U64
                    or header_bytes > total
                    or total > MAX_BODY
                    or traceparent == ""
                ):
                    fast = None  # out of range, or not a traceparent: the general way names the error
                else:
                    pos = self._pos = newline + 1
                    key = key_b.decode("utf-8", "surrogateescape")
                    end = pos + total
                    if len(buf) >= end + 2 and buf[end] == 0x0D and buf[end + 1] == 0x0A:  # all here
                        self._pos = end + 2
                        headers = bytes(buf[pos : pos + header_bytes]) if header_bytes else b""
                        payload = bytes(buf[pos + header_bytes : end])
                        return MsgFrame(id_, key, seq, deliveries, headers, payload, published, subject, server, traceparent)
                    self._msg = (id_, key, seq, deliveries, header_bytes, total, published, subject, server, traceparent)
                    continue
            line = bytes(buf[pos:line_end])
            pos = self._pos = newline + 1
            frame = self._line(line)
            if frame is not None:
                return frame
            # A MSG line: its body follows.

    def _line(self, line: bytes) -> Optional[Frame]:
        # Words are separated by runs of spaces and tabs, nothing else (a \r inside is a byte).
        words = line.split(b" ")
        if b"" in words or b"\t" in line:
            words = [w for w in line.replace(b"\t", b" ").split(b" ") if w]
        if not words:
            raise ProtocolError("empty-line", "empty line")
        verb = words[0].upper()
        if verb == b"MSG":
            expected = 11 if self._version >= TRACEPARENT_VERSION else 10 if self._version >= 2 else 7
            if len(words) != expected:
                code = "missing-argument" if len(words) < expected else "too-many-arguments"
                raise ProtocolError(
                    code,
                    f"MSG needs {expected - 1} arguments in protocol version {self._version}, got {len(words) - 1}",
                )
            id_, seq, deliveries = _number(words[1]), _number(words[3]), _number(words[4])
            header_bytes, total = _number(words[5]), _number(words[6])
            published, subject, server = (
                (_number(words[7]), _text(words[8]), _number(words[9])) if expected >= 10 else (0, "", 0)
            )
            if header_bytes > total:
                raise ProtocolError("header-exceeds-total", "MSG: header bytes exceed total bytes")
            if total > MAX_BODY:
                raise ProtocolError("body-too-large", f"MSG: body larger than {MAX_BODY} bytes")
            traceparent = _traceparent(words[10]) if expected == 11 else None
            self._msg = (id_, _text(words[2]), seq, deliveries, header_bytes, total, published, subject, server, traceparent)
            return None
        if verb == b"READY":
            if len(words) < 5:
                raise ProtocolError("missing-argument", "READY needs a version, a handler, a limit and patterns")
            version = _number(words[1], MAX_SMALL_NUMBER)
            limit = _number(words[3], MAX_SMALL_NUMBER)
            if version > 0:
                self._version = version  # the MSGs after it are in this version
            return Ready(version, _text(words[2]), limit, [_text(w) for w in words[4:]])
        if verb == b"ERR":
            # The reason runs from its first character to the end of the line, blanks and all.
            rest = line.lstrip(b" \t")[len(words[0]) :].lstrip(b" \t")
            return Err(_text(rest))
        if verb in (b"PUBOK", b"PUBERR") and self._version >= PUBLISH_VERSION:
            return _publish_answer(line, words, verb == b"PUBOK")
        if verb in (b"PING", b"PONG"):
            if len(words) > 1:
                raise ProtocolError("too-many-arguments", f"{verb.decode()} takes no arguments")
            return PING if verb == b"PING" else PONG
        shown = "".join(chr(c) if 0x20 <= c <= 0x7E else "?" for c in words[0][:32])
        raise ProtocolError("unknown-verb", f'unknown frame "{shown}"')


def _publish_answer(line: bytes, words: list[bytes], stored: bool) -> Union[PubOk, PubErr]:
    """`PUBOK <request-id> <stream> <seq> <0|1>` (`stored`) or `PUBERR <request-id> <code> [<reason>]`,
    split into `words`."""
    if stored:
        if len(words) != 5:
            raise ProtocolError(
                "missing-argument" if len(words) < 5 else "too-many-arguments",
                f"PUBOK takes a request id, a stream, a sequence and 0 or 1, got {len(words) - 1} arguments",
            )
        id_, seq = _number(words[1]), _number(words[3])
        if words[4] not in (b"0", b"1"):
            raise ProtocolError("bad-number", f"PUBOK: duplicate flag {words[4][:32]!r} is neither 0 nor 1")
        return PubOk(id_, _text(words[2]), seq, words[4] == b"1")
    if len(words) < 3:
        raise ProtocolError("missing-argument", "PUBERR takes a request id, a code and perhaps a reason")
    id_ = _number(words[1])
    # The reason runs from its first character to the end of the line, blanks and all, as ERR's does.
    match = _THREE_WORDS(line) if len(words) > 3 else None
    return PubErr(id_, _text(words[2]), _text(line[match.end() :]) if match else "")


# --- handler -> jetfan


def encode_hello(handler: str, version: int = VERSION) -> bytes:
    """`version` is the highest protocol version the handler speaks."""
    name = handler.encode("utf-8", "surrogateescape")
    if not name or any(c in b" \t\r\n" for c in name):
        raise ValueError(f"a handler name is one word, not {handler!r}")
    return b"HELLO %s %d\r\n" % (name, version)


def encode_ack(id_: int) -> bytes:
    return b"ACK %d\r\n" % id_


def delay_to_ms(delay: Delay) -> int:
    """A delay in seconds as the wire's whole milliseconds, rounded to the nearest. An int, Fraction
    or Decimal converts exactly; a float is rounded once it is scaled (1.005 is 1005 ms)."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float, Fraction, Decimal)):
        raise TypeError(f"a delay is a number of seconds, not {delay!r}")
    if isinstance(delay, float) and not math.isfinite(delay):
        raise ValueError(f"a delay is a finite number of seconds, not {delay!r}")
    if isinstance(delay, Decimal) and not delay.is_finite():
        raise ValueError(f"a delay is a finite number of seconds, not {delay!r}")
    if delay < 0:
        raise ValueError(f"a delay is not negative, got {delay!r} s")
    ms = round(delay * 1000)
    if ms > _MAX_U64:
        raise ValueError(f"a delay of {delay!r} s is more milliseconds than the protocol carries")
    return int(ms)


def encode_nak(id_: int, delay: Optional[Delay] = None, reason: str = "", version: int = VERSION) -> bytes:
    """NAK, with `delay` in seconds (a float) before jetfan redelivers, or jetfan's own growing delay
    when None. The line carries milliseconds: 1.5 is written "NAK <id> 1500". `reason` says why, on
    a connection of protocol `version` 3 or later ("NAK <id> <ms> <reason>", or "NAK <id> - <reason>"
    without a delay), written as TERM's is; on a version 1 or 2 connection, and when empty, it is
    left out."""
    if not isinstance(reason, str):
        raise TypeError(f"a reason is a str, not {reason!r}")
    start = b"NAK %d" % id_
    if delay is not None:
        start += b" %d" % delay_to_ms(delay)
    if not reason or version < NAK_REASON_VERSION:
        return start + b"\r\n"
    if delay is None:
        start += b" -"  # stands for "no delay given"
    return _with_reason(start, reason)


def encode_term(id_: int, reason: str = "") -> bytes:
    return _with_reason(b"TERM %d" % id_, reason)


def _with_reason(start: bytes, reason: str) -> bytes:
    """`start`, then " " and `reason` unless it is empty, then the line end. Each \\r or \\n of the
    reason is written as a space; the reason is cut, never inside a UTF-8 character, so that the
    line fits jetfan's limit (or jetfan would drop the connection instead of taking the line)."""
    try:
        text = reason.encode("utf-8", "surrogateescape")  # bytes decoded from the wire go back as they came
    except UnicodeEncodeError:  # a lone surrogate from elsewhere (an exception's text, say)
        text = reason.encode("utf-8", "replace")
    text = text.replace(b"\r", b" ").replace(b"\n", b" ")
    room = MAX_COMMAND_LINE - len(start) - 3  # " " and "\r\n"
    if len(text) > room:
        keep = max(room, 0)
        while keep > 0 and (text[keep] & 0xC0) == 0x80:
            keep -= 1
        text = text[:keep]
    return start + (b" " + text if text else b"") + b"\r\n"


def encode_wip(id_: int) -> bytes:
    return b"WIP %d\r\n" % id_


def encode_pub(
    id_: int, subject: str, headers: bytes, payload: bytes, tied_to: Optional[int] = None, index: int = 0
) -> bytes:
    """PUB, on a connection of protocol version 3 or later: publish `headers` (a NATS header block,
    b"NATS/1.0\\r\\n...\\r\\n\\r\\n", or b"" for none) and `payload` to `subject` through jetfan, which
    answers PUBOK or PUBERR with request id `id_`. With `tied_to`, the publish is tied to that delivery
    of the connection, as the handler's `index`-th publish for it. `subject` must be one word (jetfan
    judges the rest: PUBERR bad-subject); a line or body past the protocol's limits, which would make
    jetfan close the connection, raises ValueError."""
    name = subject.encode("utf-8", "surrogateescape")
    if not name or any(c in b" \t\r\n" for c in name):
        raise ValueError(f"a subject is one word, not {subject!r}")
    total = len(headers) + len(payload)
    if total > MAX_BODY:
        raise ValueError(f"a PUB body is at most {MAX_BODY} bytes, not {total}")
    line = b"PUB %d %s %d %d" % (id_, name, len(headers), total)
    if tied_to is not None:
        line += b" %d %d" % (tied_to, index)
    if len(line) + 2 > MAX_COMMAND_LINE:
        raise ValueError(f"a PUB line is at most {MAX_COMMAND_LINE} bytes: its subject ({len(name)} bytes) is too long")
    return b"".join((line, b"\r\n", headers, payload, b"\r\n"))


PING_LINE = b"PING\r\n"
PONG_LINE = b"PONG\r\n"
