"""What process() does with a callback's outcome. Shared by the asyncio and the blocking client."""

from __future__ import annotations

import logging
from typing import Optional

from ._errors import Nak, Term
from ._message import Message


def settle(message: Message, error: Optional[Exception], log: logging.Logger, handler: str) -> None:
    """Confirms `message` as process() promises, once its callback has returned (`error` None) or
    raised `error`: ACK; Term: TERM with its reason; Nak: NAK with its delay (seconds); anything
    else: NAK, and the error logged with its traceback. A message the callback confirmed itself is
    left as it is."""
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
        message.nak(error.delay)
    else:
        log.error(
            "handler %s: the callback for %s (stream seq %d, delivery %d) raised; NAK'd",
            handler, message.key, message.seq, message.deliveries, exc_info=error,
        )
        message.nak()
