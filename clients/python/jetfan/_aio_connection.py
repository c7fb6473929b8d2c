"""One asyncio connection to jetfan, from HELLO to close: the protocol's reading side (frames to
the Handler, with backpressure), its writing side (one write per turn of the event loop), and the
Link its messages confirm through. Belongs to the event loop's thread."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Optional

from ._codec import PONG_LINE, Err, FrameParser, MsgFrame, Ping, ProtocolError, Ready, encode_hello
from ._errors import JetfanError
from ._message import Message

if TYPE_CHECKING:
    from ._aio import Handler

HANDSHAKE_TIMEOUT = 10.0  # seconds from connecting to READY


class Connection(asyncio.Protocol):
    """One socket, from HELLO to close. Messages keep a reference to the connection they came on,
    so a confirmation can never reach a later connection."""

    def __init__(self, handler: "Handler") -> None:
        self.handler = handler
        self.loop = handler._loop
        self._transport: Optional[asyncio.Transport] = None
        self.parser = FrameParser()
        self.alive = True
        self.ready: Optional[Ready] = None
        self.adopted = False  # the handler has taken it: frames after READY may flow
        self.handshake: asyncio.Future[Ready] = self.loop.create_future()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self.refusal: Optional[str] = None  # the reason of an ERR
        self.broken: Optional[ProtocolError] = None
        self.last_error: Optional[BaseException] = None
        self.paused = False  # reading paused: as many messages buffered as jetfan allows unconfirmed
        self.unconfirmed = 0
        self._out = bytearray()
        self._flush_scheduled = False

    @property
    def transport(self) -> asyncio.Transport:
        assert self._transport is not None, "used before connection_made()"
        return self._transport

    # --- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.write(encode_hello(self.handler.name))

    def data_received(self, data: bytes) -> None:
        self.parser.feed(data)
        self.drain()

    def eof_received(self) -> Optional[bool]:
        return False  # close our side too

    def connection_lost(self, exc: Optional[BaseException]) -> None:
        self.alive = False
        if exc is not None:
            self.last_error = exc
        if not self.closed.done():
            self.closed.set_result(None)
        if not self.handshake.done():
            if self.refusal is not None:
                error: BaseException = JetfanError(self.refusal, self.handler.socket_path)
            elif self.broken is not None:
                error = self.broken
            else:
                error = self.last_error or EOFError("jetfan closed the connection before READY")
            self.handshake.set_exception(error)
            self.handshake.exception()  # retrieved: no "never retrieved" warning if nobody waits
            return
        self.handler._on_close(self)

    # --- frames

    def drain(self) -> None:
        """Hands frames to the handler until its buffer holds as many messages as jetfan allows
        unconfirmed; what is left waits in the parser, and reading pauses until there is room."""
        if self.ready is not None and not self.adopted:
            return  # the handler takes over after READY, and calls this again
        handler = self.handler
        queue, take = handler._queue, self.parser.next
        limit = self.ready.max_unconfirmed if self.ready is not None else 0
        while self.alive:
            if limit and len(queue) >= limit:
                if not self.paused:
                    self.paused = True
                    self.transport.pause_reading()
                return
            try:
                frame = take()
            except ProtocolError as error:
                self.broken = error
                self.transport.abort()
                return
            if type(frame) is MsgFrame:  # the common case first, by exact type: the cheapest test
                if not limit:
                    self.broken = ProtocolError("unexpected-frame", "MSG before READY")
                    self.transport.abort()
                    return
                self.unconfirmed += 1
                queue.append(Message(frame, self))
                if handler._waiter is not None:
                    handler._notify()
            elif frame is None:
                if self.paused:
                    self.paused = False
                    self.transport.resume_reading()
                return
            elif isinstance(frame, Ping):
                self.send(PONG_LINE)
            elif isinstance(frame, Err):
                self.refusal = frame.reason  # jetfan closes the connection next
            elif isinstance(frame, Ready):
                if self.ready is None:
                    self.ready = frame
                    self.handshake.set_result(frame)
                    return  # the handler adopts the connection, then drains on
            # PONG: the answer to a PING we never send; nothing to do.

    # --- writing

    def send(self, line: bytes) -> None:
        if not self.alive:
            return
        self._out += line
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)  # this turn's confirmations go out in one write

    def flush(self) -> None:
        self._flush_scheduled = False
        if self._out and self.alive:
            self.transport.write(bytes(self._out))
        self._out.clear()

    # --- Link (message.py)

    def confirm(self, message: Message, line: bytes) -> bool:
        if message._confirmed or not self.alive:
            return False
        message._confirmed = True
        self.unconfirmed -= 1
        self._out += line  # send(), inlined: once per message
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)
        return True

    def wip(self, message: Message, line: bytes) -> bool:
        if message._confirmed or not self.alive:
            return False
        self.send(line)
        return True
