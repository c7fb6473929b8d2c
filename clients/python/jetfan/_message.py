"""One delivery as a handler sees it, and how it is confirmed."""

from __future__ import annotations

import json as _json
from typing import Any, Optional, Protocol

from ._codec import MsgFrame, encode_ack, encode_nak, encode_term, encode_wip
from ._headers import Headers


class Link(Protocol):
    """Where a delivery's confirmations go: the connection it came on."""

    alive: bool

    def confirm(self, message: "Message", line: bytes) -> bool: ...

    def wip(self, message: "Message", line: bytes) -> bool: ...


class Message:
    """One delivery of a message. Confirm it exactly once with ack(), nak() or term(); working()
    keeps it alive past its ack_timeout. Each returns True if the line was queued for jetfan, and
    False if not: the message was already confirmed, or it is stale (the connection that delivered
    it has closed). jetfan counts a stale message as failed and redelivers it, so the client never
    writes its confirmation to a newer connection."""

    __slots__ = ("key", "seq", "deliveries", "data", "_id", "_raw_headers", "_headers", "_link", "_confirmed")

    def __init__(self, frame: MsgFrame, link: Link) -> None:
        id_, key, seq, deliveries, headers, payload = frame  # unpacked at once: the fastest way
        self.key: str = key  # the subject less jetfan's configured prefix
        self.seq: int = seq  # JetStream stream sequence: the same on a redelivery
        self.deliveries: int = deliveries  # 1 the first time
        self.data: bytes = payload
        self._id = id_
        self._raw_headers = headers
        self._headers: Optional[Headers] = None
        self._link = link
        self._confirmed = False

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
        return self._confirmed

    @property
    def stale(self) -> bool:
        """The connection that delivered it has closed: confirming it does nothing."""
        return not self._link.alive

    def ack(self) -> bool:
        """Succeeded."""
        return self._link.confirm(self, encode_ack(self._id))

    def nak(self, delay_ms: Optional[int] = None) -> bool:
        """Failed: redeliver it, after `delay_ms` if given (else jetfan's own growing delay)."""
        return self._link.confirm(self, encode_nak(self._id, delay_ms))

    def term(self, reason: str = "") -> bool:
        """Poison: never deliver it to this handler again. jetfan logs the reason."""
        return self._link.confirm(self, encode_term(self._id, reason))

    def working(self) -> bool:
        """Still working on it: restarts its ack_timeout. May be sent any number of times."""
        return self._link.wip(self, encode_wip(self._id))

    def __repr__(self) -> str:
        return f"<jetfan.Message key={self.key!r} seq={self.seq} deliveries={self.deliveries} {len(self.data)} bytes>"
