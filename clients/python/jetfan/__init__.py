"""jetfan handler client for Python: receive a module's events from jetfan over its Unix socket and
confirm each one. Standard library only.

    import jetfan

    async with await jetfan.connect(path="/run/jetfan/builder.sock", handler="builder") as h:
        async for msg in h:          # msg.key, msg.seq, msg.deliveries, msg.headers, msg.data, msg.json()
            build(msg.json())
            msg.ack()                # or msg.nak(delay=1.5, reason="db down"), msg.term(reason), msg.working()

    await h.process(fn, concurrency=8)   # returning ACKs; raising jetfan.Term TERMs, anything else NAKs
                                         # (with the exception's text as the reason)

    msg.publish("out.built", data)       # tied to the delivery: ACK at once; a redelivery's copy is a duplicate
    await h.publish("audit.x", data)     # -> jetfan.Published(stream, seq, duplicate); raises jetfan.PublishError

    with jetfan.BlockingHandler(path="/run/jetfan/builder.sock", handler="builder") as h:
        for msg in h:
            msg.ack()

Modules: jetfan.aio (asyncio: connect, Handler), jetfan.blocking (BlockingHandler); the options
both take are jetfan.Options. Every duration is in seconds (a float). Reports go to the `logging`
logger "jetfan" (jetfan.aio, jetfan.blocking).

The protocol: proto/PROTOCOL.md in the jetfan repository. The client asks for version 3 and speaks
what jetfan answers (2 from jetfan 0.1.0, 1 from a jetfan that speaks only that)."""

from ._codec import ProtocolError, Ready
from ._errors import JetfanError, Nak, PublishError, Term
from ._headers import Headers
from ._message import Message
from ._options import Options
from ._publish import Published
from .aio import Handler, connect
from .blocking import BlockingHandler

__all__ = [
    "connect",
    "Handler",
    "BlockingHandler",
    "Options",
    "Message",
    "Headers",
    "Ready",
    "Published",
    "JetfanError",
    "PublishError",
    "ProtocolError",
    "Term",
    "Nak",
]
__version__ = "0.1.0"
