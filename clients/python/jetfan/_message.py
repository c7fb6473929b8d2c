"""One delivery as a handler sees it, and how it is confirmed."""

from __future__ import annotations

import json as _json
from datetime import datetime, timedelta, timezone
from typing import Any, Generic, Optional, Protocol, TypeVar

from ._codec import MsgFrame, encode_nak, encode_term, encode_wip
from ._headers import Headers
from ._publish import HeadersArg, Payload, check_index, encode_headers, encode_payload

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# What a tied publish returns: the future its connection makes (asyncio.Future[Published] in
# jetfan.aio, a concurrent.futures.Future[Published] in jetfan.blocking).
R = TypeVar("R", covariant=True)


class Link(Protocol[R]):
    """Where a delivery's confirmations go: the connection it came on, which keeps which of its
    deliveries are still unconfirmed."""

    @property
    def alive(self) -> bool: ...

    @property
    def version(self) -> int:
        """The protocol version the connection speaks (its READY's)."""
        ...

    def confirm(self, id_: int, line: bytes) -> bool:
        """Queues `line`, the ACK, NAK or TERM of delivery `id_`, unless that delivery is confirmed
        already or the connection has closed; True if queued."""
        ...

    def wip(self, id_: int, line: bytes) -> bool:
        """Queues `line`, the WIP of delivery `id_`, unless it is confirmed or the connection has
        closed; True if queued."""
        ...

    def unconfirmed(self, id_: int) -> bool:
        """Delivery `id_` has not been confirmed (ACK, NAK or TERM) on this connection."""
        ...

    def publish(self, subject: str, headers: bytes, payload: bytes, tied_to: Optional[int], index: int) -> R:
        """Queues a PUB of `headers` (a NATS header block, or b"") and `payload` to `subject`, tied
        to delivery `tied_to` as its `index`-th publish (None: not tied), and returns the future
        of its answer. Raises PublishError without sending when the connection has closed
        ("not-connected", or "not-in-flight" for a tied one), speaks a version before 3
        ("unsupported"), or delivery `tied_to` is confirmed ("not-in-flight"); ValueError for what
        cannot be sent (encode_pub)."""
        ...


class Message(Generic[R]):
    """One delivery of a message. Confirm it exactly once with ack(), nak() or term(); working()
    keeps it alive past its ack_timeout. Each returns True if the line was queued for jetfan, and
    False if not: the message was already confirmed, or it is stale (the connection that delivered
    it has closed). jetfan counts a stale message as failed and redelivers it, so the client never
    writes its confirmation to a newer connection."""

    __slots__ = (
        "key",
        "seq",
        "deliveries",
        "data",
        "traceparent",
        "_id",
        "_raw_headers",
        "_headers",
        "_link",
        "_published",
        "_subject",
        "_server_deliveries",
        "_publishes",
    )

    def __init__(self, frame: MsgFrame, link: Link[R]) -> None:
        id_, key, seq, deliveries, headers, payload, published, subject, server, traceparent = frame  # at once: the fastest way
        self.key: str = key  # the subject less jetfan's configured prefix
        self.seq: int = seq  # JetStream stream sequence: the same on a redelivery
        # How often jetfan has given this message to this handler, this time included: 1 the first
        # time, above 1 whenever it may have reached it before (jetfan's own retries included; after a
        # restart of jetfan, the server's count).
        self.deliveries: int = deliveries
        self.data: bytes = payload
        # The W3C traceparent of jetfan's span of this delivery ("00-<trace-id>-<span-id>-<flags>"), the
        # parent of the handler's own spans: give it to an OpenTelemetry propagator as the carrier's
        # "traceparent". None when jetfan does not trace the delivery, and before protocol version 3.
        # (A "traceparent" header, if any, is the publisher's: an ancestor of this one.)
        self.traceparent: Optional[str] = traceparent
        self._id = id_
        self._raw_headers = headers
        self._headers: Optional[Headers] = None
        self._link = link
        self._published = published
        self._subject = subject
        self._server_deliveries = server
        self._publishes = 0  # publish() calls so far: the index of the next one, unless it is given

    @property
    def published(self) -> Optional[datetime]:
        """When JetStream stored the message, in UTC (to the microsecond). From protocol version 2 on:
        None when the connection speaks version 1 (an older jetfan), or jetfan did not know it."""
        if not self._published:
            return None
        return _EPOCH + timedelta(microseconds=self._published // 1000)

    @property
    def published_ns(self) -> Optional[int]:
        """The same, exactly: nanoseconds since 1970 UTC, or None."""
        return self._published or None

    @property
    def subject(self) -> Optional[str]:
        """The message's full NATS subject (the key with jetfan's prefix). From protocol version 2
        on, else None."""
        return self._subject or None

    @property
    def server_deliveries(self) -> Optional[int]:
        """How often JetStream has delivered the message to jetfan (1 the first time; jetfan's own
        retries of it to an ordered handler do not count). From protocol version 2 on, else None."""
        return self._server_deliveries or None

    @property
    def headers(self) -> Headers:
        if self._headers is None:
            self._headers = Headers(self._raw_headers)
        return self._headers

    def json(self) -> Any:
        """The payload parsed as JSON (UTF-8). Raises ValueError if it is not JSON."""
        return _json.loads(self.data)

    def text(self) -> str:
        """The payload as UTF-8 text."""
        return self.data.decode("utf-8")

    @property
    def confirmed(self) -> bool:
        """ack(), nak() or term() has been called and queued."""
        return not self._link.unconfirmed(self._id)

    @property
    def stale(self) -> bool:
        """The connection that delivered it has closed: confirming it does nothing."""
        return not self._link.alive

    def ack(self) -> bool:
        """Succeeded."""
        id_ = self._id
        return self._link.confirm(id_, b"ACK %d\r\n" % id_)  # encode_ack(), inlined: once per message

    def nak(self, delay: Optional[float] = None, *, reason: str = "") -> bool:
        """Failed: redeliver it after `delay` seconds (a float: `nak(1.5)` is 1.5 s, `nak(0)` at
        once), or after jetfan's own growing delay when None. The wire carries whole milliseconds:
        the delay is rounded to the nearest. Raises ValueError for a negative delay.

        `reason` says why (`nak(reason="database down")`, `nak(1.5, reason=...)`): jetfan logs it,
        and puts it in the dead letter when this NAK uses up the handler's retries. It is sent when
        the connection speaks protocol version 3 or later, and left out, silently, before (against
        jetfan 0.1.0, which speaks 2). Like TERM's, each line end in it is sent as a space, and a
        reason too long for the line (1024 bytes) is cut."""
        link = self._link
        return link.confirm(self._id, encode_nak(self._id, delay, reason, link.version))

    def term(self, reason: str = "") -> bool:
        """Poison: never deliver it to this handler again. jetfan logs the reason (and puts it in the
        dead letter, when the handler has them), each line end in it as a space, cut to fit the
        line."""
        return self._link.confirm(self._id, encode_term(self._id, reason))

    def working(self) -> bool:
        """Still working on it: restarts its ack_timeout. May be sent any number of times."""
        return self._link.wip(self._id, encode_wip(self._id))

    def publish(
        self, subject: str, payload: Payload, *, headers: Optional[HeadersArg] = None, index: Optional[int] = None
    ) -> R:
        """Publishes `payload` (bytes, or a str sent as UTF-8) to `subject` through jetfan, tied to
        this delivery (PROTOCOL.md, "Publishing"): jetfan gives it a Nats-Msg-Id made of the message
        and `index`, so that a redelivery that publishes it again is dropped by the stream as a
        duplicate (Published.duplicate), and it holds this delivery's ACK until every publish tied
        to it is stored; if one fails, the ACK counts as a NAK and the message comes again. So ACK
        at once: there is no need to wait for the answer first. Publish before confirming the
        message: after its ACK, NAK or TERM this raises PublishError "not-in-flight".

        `index` tells this delivery's publishes apart: by default how many publish() calls this
        delivery had before this one (0, 1, 2, ... in call order; a redelivery is a new Message,
        counting from 0 again). Dedup works only if each publish gets the same index every time
        the message is handled: make the same publishes in the same order on every redelivery, or,
        when the order may differ, give each its own fixed `index` (then to all of them).
        `headers`: a Headers or a mapping (name: value, or name: [values]); jetfan replaces any
        Nats-Msg-Id in them with its own.

        Returns the future of the answer, sent at once: in jetfan.aio an asyncio.Future (`await
        msg.publish(...)` for the Published), in jetfan.blocking a concurrent.futures.Future
        (`.result()`). It fails with PublishError when jetfan answers PUBERR or the connection
        ends first ("connection-lost": it may or may not have been stored; the delivery is
        redelivered anyway). Raises PublishError without sending when the message is confirmed
        already or stale ("not-in-flight": jetfan would answer that; a stale message comes again),
        or the connection speaks a protocol version before 3 ("unsupported"); ValueError or
        TypeError for arguments that cannot be sent (a subject that is not one word, a body over
        64 MiB, a header name with a colon, ...)."""
        chosen = self._publishes if index is None else index
        self._publishes += 1  # every call counts, so that the defaults follow the calls' order
        raw_headers = encode_headers(headers)
        body = encode_payload(payload)
        return self._link.publish(subject, raw_headers, body, self._id, check_index(chosen))

    def __repr__(self) -> str:
        return f"<jetfan.Message key={self.key!r} seq={self.seq} deliveries={self.deliveries} {len(self.data)} bytes>"
