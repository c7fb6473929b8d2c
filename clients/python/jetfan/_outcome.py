"""What process() does with a callback's outcome. Shared by the asyncio and the blocking client."""

from __future__ import annotations

import logging
from typing import Any, Optional

from ._errors import Nak, Term
from ._message import Message


def settle(message: Message[Any], error: Optional[Exception], log: logging.Logger, handler: str) -> None:
    """Confirms `message` as process() promises, once its callback has returned (`error` None) or
    raised `error`: ACK; Term: TERM with its reason; Nak: NAK with its delay (seconds) and its
    message as the reason; anything else: NAK with the error's text as the reason (its type's name
    when the text is empty), and the error logged with its traceback. A NAK's reason is sent on a
    protocol version 3 connection only. A message the callback confirmed itself is left as it is."""
    if error is None:
        if not message.confirmed:
            message.ack()
        return
    if message.confirmed:
        if not isinstance(error, (Term, Nak)):
            log.error(
                "handler %s: the callback for %s (stream seq %d, delivery %d) raised after confirming it",
                handler, message.key, message.seq, message.deliveries, exc_info=error,
            )
    elif isinstance(error, Term):
        message.term(error.reason)
    elif isinstance(error, Nak):
        message.nak(error.delay, reason=error.reason)
    else:
        log.error(
            "handler %s: the callback for %s (stream seq %d, delivery %d) raised; NAK'd",
            handler, message.key, message.seq, message.deliveries, exc_info=error,
        )
        message.nak(reason=_reason_of(error))


def _reason_of(error: BaseException) -> str:
    """What an exception says, as a NAK's reason: its text, or its type's name when that is empty."""
    try:
        text = str(error)
    except Exception:  # a __str__ that raises: the name will do
        text = ""
    return text or type(error).__name__
