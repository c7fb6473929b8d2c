"""The errors a handler sees, and the two a process() callback may raise to choose its
confirmation."""

from __future__ import annotations

from typing import Optional

from ._codec import ProtocolError, delay_to_ms

__all__ = ["JetfanError", "PublishError", "ProtocolError", "Term", "Nak"]


class JetfanError(Exception):
    """jetfan said no. This class itself: jetfan refused this connection with ERR (for example an
    undeclared handler name), never retried: the client stops and raises this. Its subclass
    PublishError: one publish was not stored (or may not have been)."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(f"jetfan at {path} refused the connection: {reason}")
        self.reason = reason  # as jetfan sent it
        self.path = path  # the socket


class PublishError(JetfanError):
    """A publish through jetfan (handler.publish(), msg.publish()) that was not stored, or may not
    have been. `code` says which; jetfan's codes (PROTOCOL.md, "Publishing") come as jetfan sent
    them, one this client does not know too:

    - "not-allowed", "bad-subject", "bad-headers", "too-large", "not-in-flight", "busy-id",
      "no-stream", "refused", "server-down": not stored.
    - "timeout": the server did not answer jetfan in time: it MAY have been stored.

    and the client's own, for a publish it did not send or whose answer never came:

    - "connection-lost": sent, and the connection ended before jetfan answered: it MAY have been
      stored (a tied publish's delivery is redelivered anyway, and a tied publish made again is
      dropped as a duplicate).
    - "not-connected": not sent: the handler has no connection now (it is reconnecting, or
      closed).
    - "unsupported": not sent: the connection speaks a protocol version before 3, which has no PUB
      (jetfan 0.1.0 answers 2; or Options.protocol_version asked for less).
    - "not-in-flight" also for a tied publish the client does not send, as jetfan would answer it:
      the message is confirmed already (ACK, NAK or TERM), or stale (the connection that
      delivered it has closed; jetfan redelivers it, and the redelivery may publish).

    `maybe_stored` is True for the two whose outcome is unknown."""

    def __init__(self, code: str, reason: str, subject: str, path: str) -> None:
        # Not JetfanError's text ("refused the connection"): this one is about a publish.
        Exception.__init__(
            self, f"publish to {subject} through jetfan at {path} failed: {code}" + (f" ({reason})" if reason else "")
        )
        self.code = code  # stable: one of the above, or a newer one of jetfan's, as it came
        self.reason = reason  # for people; "" when there is none
        self.subject = subject  # the subject it was published to
        self.path = path  # the socket

    @property
    def maybe_stored(self) -> bool:
        """The outcome is unknown ("timeout", "connection-lost"): the message may be in the stream.
        Publishing it again risks a second copy, unless it carries a Nats-Msg-Id (a tied publish
        does) within the stream's duplicate window."""
        return self.code in ("timeout", "connection-lost")


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
