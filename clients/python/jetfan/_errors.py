"""The errors a handler sees, and the two a process() callback may raise to choose its
confirmation."""

from __future__ import annotations

from typing import Optional

from ._codec import ProtocolError, delay_to_ms

__all__ = ["JetfanError", "ProtocolError", "Term", "Nak"]


class JetfanError(Exception):
    """jetfan refused this connection with ERR (for example an undeclared handler name). Never
    retried: the client stops and raises this."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(f"jetfan at {path} refused the connection: {reason}")
        self.reason = reason  # as jetfan sent it
        self.path = path  # the socket


class Term(Exception):
    """Raise from a process() callback to TERM the message: never deliver it to this handler again.
    The reason is logged by jetfan."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class Nak(Exception):
    """Raise from a process() callback to NAK the message: jetfan redelivers it after `delay`
    seconds (a float: `Nak(1.5)` is 1.5 s), or after its own growing delay when None. `message`,
    when given, is the NAK's reason (`Nak(1.5, "database down")`; Message.nak()'s `reason`): sent on
    a protocol version 3 connection, left out before. Unlike any other exception, it is not
    logged."""

    def __init__(self, delay: Optional[float] = None, message: str = "") -> None:
        super().__init__(message)
        if delay is not None:
            delay_to_ms(delay)  # a delay that cannot be sent is an error here, where it is raised
        self.delay = delay  # seconds
        self.reason = message if isinstance(message, str) else str(message)  # the NAK's
