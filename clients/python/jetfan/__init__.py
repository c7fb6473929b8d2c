"""jetfan handler client for Python: receive a module's events from jetfan over its Unix socket and
confirm each one. Standard library only.

    import jetfan

    async with await jetfan.connect(socket="/run/jetfan/builder.sock", handler="builder") as h:
        async for msg in h:          # msg.key, msg.seq, msg.deliveries, msg.headers, msg.data, msg.json()
            build(msg.json())
            msg.ack()                # or msg.nak(delay_ms), msg.term(reason), msg.working()

    await h.process(fn, concurrency=8)   # returning ACKs; raising jetfan.Term TERMs, anything else NAKs

    with jetfan.BlockingHandler(socket="/run/jetfan/builder.sock", handler="builder") as h:
        for msg in h:
            msg.ack()

The protocol: proto/PROTOCOL.md in the jetfan repository."""

from ._aio import Handler, connect
from ._blocking import BlockingHandler
from ._codec import ProtocolError, Ready
from ._errors import JetfanError, Nak, Term
from ._headers import Headers
from ._message import Message

__all__ = [
    "connect",
    "Handler",
    "BlockingHandler",
    "Message",
    "Headers",
    "Ready",
    "JetfanError",
    "ProtocolError",
    "Term",
    "Nak",
]
__version__ = "0.1.0"
