"""The errors a handler sees, and the two a process() callback may raise to choose its
confirmation."""

from __future__ import annotations

from typing import Optional

from ._codec import ProtocolError

__all__ = ["JetfanError", "ProtocolError", "Term", "Nak"]


class JetfanError(Exception):
    """jetfan refused this connection with ERR (for example an undeclared handler name). Never
    retried: the client stops and raises this."""

    def __init__(self, reason: str, socket: str) -> None:
        super().__init__(f"jetfan at {socket} refused the connection: {reason}")
        self.reason = reason  # as jetfan sent it


class Term(Exception):
    """Raise from a process() callback to TERM the message: never deliver it to this handler again.
    The reason is logged by jetfan."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class Nak(Exception):
    """Raise from a process() callback to NAK the message with a redelivery delay of your choice
    (else jetfan's own growing delay)."""

    def __init__(self, delay_ms: Optional[int] = None, message: str = "") -> None:
        super().__init__(message)
        self.delay_ms = delay_ms
