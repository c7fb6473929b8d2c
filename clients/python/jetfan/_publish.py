"""Publishing through jetfan (protocol version 3, PROTOCOL.md "Publishing"), what both clients share:
what a publish returns, how its headers and payload are written, and the bookkeeping of one
connection's PUBs waiting for their answers. Pure: no I/O, no threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Generic, Mapping, Optional, Sequence, TypeVar, Union

from ._codec import PUBLISH_VERSION, ProtocolError, PubErr, PubOk
from ._errors import PublishError
from ._headers import Headers

__all__ = ["Published", "HeadersArg", "Payload", "encode_headers", "encode_payload", "check_index", "Waiting", "refusal", "cannot_send"]

_MAX_U64 = 2**64 - 1


@dataclass(frozen=True)
class Published:
    """A publish JetStream stored: in `stream`, at sequence `seq`. `duplicate`: the stream already
    held a message with its Nats-Msg-Id (a tied publish made again by a redelivery, say), and
    dropped this one: `seq` is that message's."""

    stream: str
    seq: int
    duplicate: bool


HeadersArg = Union[Headers, Mapping[str, Union[str, Sequence[str]]]]
"""A publish's headers: a Headers (a received message's, say), or a mapping of names to a value or
a sequence of values (each its own line)."""

Payload = Union[bytes, bytearray, memoryview, str]
"""A publish's payload: bytes, or a str, sent as UTF-8."""


def encode_headers(headers: Optional[HeadersArg]) -> bytes:
    """The NATS header block of `headers` ("NATS/1.0\\r\\nName: value\\r\\n...\\r\\n"), b"" for None or
    none at all. Raises ValueError for a name that is empty or holds a colon, a blank or a control
    character, or a value with a line end (either would break the block), and TypeError for what
    is not text."""
    if headers is None:
        return b""
    pairs: list[tuple[object, object]] = []
    if isinstance(headers, Headers):
        pairs.extend(headers)
    elif isinstance(headers, Mapping):
        for key, values in headers.items():
            if isinstance(values, (str, bytes)):
                pairs.append((key, values))
            else:
                pairs.extend((key, v) for v in values)
    else:
        raise TypeError(f"headers are a jetfan.Headers or a mapping of names to values, not {type(headers).__name__}")
    if not pairs:
        return b""
    lines = [b"NATS/1.0\r\n"]
    for name, value in pairs:
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"a header's name and value are str, not {name!r}: {value!r}")
        raw_name = name.encode("utf-8", "surrogateescape")
        if not raw_name or any(c <= 0x20 or c == 0x7F or c == 0x3A for c in raw_name):
            raise ValueError(f"a header name is one word without a colon, not {name!r}")
        raw_value = value.encode("utf-8", "surrogateescape")
        if b"\r" in raw_value or b"\n" in raw_value:
            raise ValueError(f"a header value is one line, not {value!r}")
        lines.append(b"%s: %s\r\n" % (raw_name, raw_value))
    lines.append(b"\r\n")
    return b"".join(lines)


def encode_payload(payload: Payload) -> bytes:
    """`payload` as the bytes to send: a str as UTF-8."""
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    raise TypeError(f"a payload is bytes or str, not {type(payload).__name__}")


def check_index(index: object) -> int:
    """A tied publish's index: an int from 0 to 2**64 - 1."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"a publish's index is an int, not {index!r}")
    if not 0 <= index <= _MAX_U64:
        raise ValueError(f"a publish's index is from 0 to 2**64 - 1, not {index}")
    return index


W = TypeVar("W")


class Waiting(Generic[W]):
    """One connection's PUBs waiting for their answers. Request ids count up from 1, one per PUB
    (PROTOCOL.md: any numbers, each used by at most one unanswered PUB at a time); each PUB's waiter
    (a future) is kept under its id until its answer, which may come in any order, or until the
    connection ends. Not thread-safe: its owner serialises the calls (the event loop, or a lock)."""

    __slots__ = ("path", "_next", "_by_id")

    def __init__(self, path: str) -> None:
        self.path = path  # the socket, for the errors
        self._next = 0
        self._by_id: dict[int, tuple[W, str]] = {}

    def next_id(self) -> int:
        """The request id of the next PUB. An id taken for a PUB that is then not sent (it could not
        be encoded) is simply never used."""
        self._next += 1
        return self._next

    def add(self, id_: int, subject: str, waiter: W) -> None:
        """The PUB with request id `id_`, to `subject`, has been queued: `waiter` waits for its
        answer."""
        assert id_ not in self._by_id, f"request id {id_} is waiting already"
        self._by_id[id_] = (waiter, subject)

    def answer(self, frame: Union[PubOk, PubErr]) -> tuple[W, Union[Published, PublishError]]:
        """The waiter of the PUB `frame` answers, and what it is given: a Published, or the
        PublishError of a PUBERR. Raises ProtocolError (unexpected-frame) when no PUB with that id
        waits: jetfan answered one twice, or one never sent."""
        entry = self._by_id.pop(frame.id, None)
        if entry is None:
            verb = "PUBOK" if isinstance(frame, PubOk) else "PUBERR"
            raise ProtocolError(
                "unexpected-frame", f"{verb} {frame.id}, but no PUB {frame.id} of this connection waits for an answer"
            )
        waiter, subject = entry
        if isinstance(frame, PubOk):
            return waiter, Published(frame.stream, frame.seq, frame.duplicate)
        return waiter, PublishError(frame.code, frame.reason, subject, self.path)

    def oldest(self) -> Optional[W]:
        """The waiter of the oldest PUB still waiting, or None."""
        return self._by_id[min(self._by_id)][0] if self._by_id else None

    def lost(self) -> list[tuple[W, PublishError]]:
        """The connection has ended: every waiter, each with its "connection-lost" error, oldest
        first; none wait any more."""
        entries = sorted(self._by_id.items())
        self._by_id.clear()
        reason = "the connection to jetfan ended before its answer: it may or may not have been stored"
        return [(waiter, PublishError("connection-lost", reason, subject, self.path)) for _, (waiter, subject) in entries]

    def __len__(self) -> int:
        return len(self._by_id)

    def __bool__(self) -> bool:
        return bool(self._by_id)


def refusal(code: str, subject: str, path: str, version: int = 3) -> PublishError:
    """The PublishError of a publish the client does not send: "not-connected" (no connection),
    "stale" (a tied publish of a message whose connection has closed: code "not-in-flight"),
    "confirmed" (a tied publish of a confirmed message: "not-in-flight" too), "unsupported" (a
    connection of protocol `version` before 3)."""
    reasons = {
        "not-connected": ("not-connected", "no connection to jetfan now; not sent"),
        "stale": (
            "not-in-flight",
            "the connection that delivered the message has closed; not sent (jetfan redelivers the message)",
        ),
        "confirmed": (
            "not-in-flight",
            "the message is confirmed already (a tied publish comes before its ACK, NAK or TERM); not sent",
        ),
        "unsupported": (
            "unsupported",
            f"the connection speaks protocol version {version}; publishing needs version 3 "
            "(a jetfan that publishes for handlers, and Options.protocol_version 3); not sent",
        ),
    }
    wire_code, reason = reasons[code]
    return PublishError(wire_code, reason, subject, path)



def cannot_send(
    alive: bool, version: int, tied_to: Optional[int], unconfirmed: Container[int], subject: str, path: str
) -> Optional[PublishError]:
    """Why a PUB cannot go out on a connection (`alive`, speaking `version`, with deliveries
    `unconfirmed`), as the refusal both clients raise; None when it can."""
    if not alive:
        return refusal("not-connected" if tied_to is None else "stale", subject, path)
    if version < PUBLISH_VERSION:
        return refusal("unsupported", subject, path, version)
    if tied_to is not None and tied_to not in unconfirmed:
        return refusal("confirmed", subject, path)
    return None
