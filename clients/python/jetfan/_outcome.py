"""What process() does with a callback's outcome, and where the clients report what an operator
should know. Shared by the asyncio and the blocking client."""

from __future__ import annotations

import sys
import traceback
from typing import Callable, Optional

from ._errors import Nak, Term
from ._message import Message

Log = Callable[[str], None]


def stderr_log(handler: str) -> Log:
    return lambda line: print(f"jetfan client [{handler}]: {line}", file=sys.stderr, flush=True)


def settle(message: Message, error: Optional[Exception], log: Log) -> None:
    """Confirms `message` as process() promises, once its callback has returned (`error` None) or
    raised `error`: ACK; Term: TERM with its reason; Nak: NAK with its delay; anything else: NAK,
    and the error logged. A message the callback confirmed itself is left as it is."""
    if error is None:
        if not message.confirmed:
            message.ack()
        return
    where = f"{message.key} (stream seq {message.seq}, delivery {message.deliveries})"
    if message.confirmed:
        if not isinstance(error, (Term, Nak)):
            log(f"the callback for {where} raised after confirming it: {error!r}")
    elif isinstance(error, Term):
        message.term(error.reason)
    elif isinstance(error, Nak):
        message.nak(error.delay_ms)
    else:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        log(f"the callback for {where} raised; NAK'd: {text}")
        message.nak()
