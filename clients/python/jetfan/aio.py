"""The asyncio client: a handler's connection to jetfan. Says HELLO, hands out deliveries, writes
confirmations, answers PING, and reconnects when jetfan restarts.

    async with await jetfan.connect(path="/run/jetfan/builder.sock", handler="builder") as h:
        async for msg in h:
            msg.ack()

Everything here runs on one event loop: call a Handler's methods, and its messages' ack(), nak(),
term(), working() and publish(), from that loop's thread only (jetfan.blocking is the one for
threads). Reports go to the logger "jetfan.aio"."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from typing import Any, Awaitable, Callable, Optional, Union

from ._codec import (
    PONG_LINE,
    Err,
    FrameParser,
    MsgFrame,
    Ping,
    ProtocolError,
    PubErr,
    PubOk,
    Ready,
    encode_hello,
    encode_pub,
)
from ._errors import JetfanError
from ._message import Message
from ._options import Options, check_concurrency
from ._outcome import settle
from ._publish import (
    HeadersArg,
    Payload,
    Published,
    Waiting,
    cannot_send,
    encode_headers,
    encode_payload,
    refusal,
)

__all__ = ["Handler", "connect", "Callback"]

log = logging.getLogger(__name__)

Callback = Callable[[Message[Any]], Union[Awaitable[Any], Any]]
"""A process() callback: a coroutine function or a plain one, given each message."""

AioMessage = Message["asyncio.Future[Published]"]  # a message whose publish() gives an asyncio.Future

_RETRIED = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BlockingIOError, EOFError)
_FIRST_RETRY, _MAX_FIRST_RETRY = 0.05, 1.0  # seconds between attempts of the first connect
_CLOSE_WAIT = 2.0  # seconds close() waits for jetfan to see the connection closed


class _Connection(asyncio.Protocol):
    """One socket, from HELLO to close, and the Link its messages confirm through: they keep a
    reference to the connection they came on, so a confirmation can never reach a later one.

    It reads frames into `received`, at most READY's max_unconfirmed of them: while it holds that
    many, reading pauses, and take() resumes it, unless PUBs wait for their answers (which may be
    behind more messages): then it reads on. What is queued to send goes out in one write per turn
    of the event loop. It tells its handler of two things only, through the callables it is given:
    `on_message()` when a message has arrived, `on_lost(connection)` when a connection the handler
    adopted has ended. PUBs it sends wait in `_waiting` for their answers, which settle their
    futures; when the connection ends, those still waiting fail with "connection-lost"."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        hello: bytes,
        path: str,
        on_message: Callable[[], None],
        on_lost: Callable[["_Connection"], None],
    ) -> None:
        self.loop = loop
        self.path = path
        self.alive = True
        self.ready: Optional[Ready] = None
        self.handshake: asyncio.Future[Ready] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.refusal: Optional[str] = None  # the reason of an ERR
        self.broken: Optional[ProtocolError] = None
        self.last_error: Optional[BaseException] = None
        self.received: deque[AioMessage] = deque()  # not handed out yet
        self._hello = hello
        self._on_message = on_message
        self._on_lost = on_lost
        self._transport: Optional[asyncio.Transport] = None
        self._parser = FrameParser()
        self._adopted = False  # the handler has taken it: frames after READY may flow
        self._paused = False  # reading paused: `received` is full
        self._unconfirmed: set[int] = set()  # delivery ids received and not yet confirmed
        self._out = bytearray()
        self._flush_scheduled = False
        self._waiting: Waiting[asyncio.Future[Published]] = Waiting(path)
        self._answered: Optional[asyncio.Future[None]] = None  # set when none waits any more

    @property
    def transport(self) -> asyncio.Transport:
        assert self._transport is not None, "used before connection_made()"
        return self._transport

    @property
    def unconfirmed_count(self) -> int:
        return len(self._unconfirmed)

    @property
    def version(self) -> int:
        """The protocol version this connection speaks: its READY's (1 before it)."""
        return self.ready.version if self.ready is not None else 1

    def adopt(self) -> None:
        """The handler has made this its connection: messages after READY flow from now on."""
        self._adopted = True
        if self.alive:
            self._drain()  # whatever came right after READY
        else:  # it ended between READY and now, unseen
            self._on_lost(self)

    def take(self) -> Optional[AioMessage]:
        """The next message received and not handed out yet, or None."""
        if not self.received or not self.alive:
            return None
        message = self.received.popleft()
        if self._paused:
            self._drain()  # room again: read on
        return message

    def close(self) -> None:
        """Writes what is queued and closes."""
        self.flush()
        self.transport.close()

    @property
    def publishes_waiting(self) -> int:
        """PUBs sent and not yet answered."""
        return len(self._waiting)

    async def all_answered(self) -> None:
        """Returns once no PUB waits for its answer (at once if none does), or the connection has
        ended (which fails those still waiting)."""
        while self._waiting and self.alive:
            if self._answered is None or self._answered.done():
                self._answered = self.loop.create_future()
            await asyncio.shield(self._answered)

    def abort(self) -> None:
        self.transport.abort()

    # --- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.write(self._hello)

    def data_received(self, data: bytes) -> None:
        self._parser.feed(data)
        self._drain()

    def eof_received(self) -> Optional[bool]:
        return False  # close our side too

    def connection_lost(self, exc: Optional[BaseException]) -> None:
        self.alive = False
        if exc is not None:
            self.last_error = exc
        if not self.closed.done():
            self.closed.set_result(None)
        for future, lost in self._waiting.lost():
            if not future.done():  # its awaiting task may have been cancelled
                future.set_exception(lost)
        self._wake_answered()
        if not self.handshake.done():
            if self.refusal is not None:
                error: BaseException = JetfanError(self.refusal, self.path)
            elif self.broken is not None:
                error = self.broken
            else:
                error = self.last_error or EOFError("jetfan closed the connection before READY")
            self.handshake.set_exception(error)
            self.handshake.exception()  # retrieved: no "never retrieved" warning if nobody waits
            return
        if self._adopted:
            self._on_lost(self)

    # --- frames

    def _drain(self) -> None:
        """Takes frames until `received` holds as many messages as jetfan allows unconfirmed; what
        is left waits in the parser, and reading pauses until there is room. Tells the handler
        once if messages came."""
        if self.ready is not None and not self._adopted:
            return  # the handler adopts it after READY, and that drains on
        before = len(self.received)
        self._take_frames()
        if len(self.received) > before:
            self._on_message()

    def _take_frames(self) -> None:
        # A whole read's frames in one pass (FrameParser.frames), never more than there is room for.
        received, parser, unconfirmed = self.received, self._parser, self._unconfirmed
        limit = self.ready.max_unconfirmed if self.ready is not None else 0
        while self.alive:
            room = limit - len(received) if limit else 1  # before READY: one frame at a time
            if room <= 0 and self._waiting:
                # A PUB's answer may be behind messages: read on (jetfan sends messages within its own
                # limit on unconfirmed deliveries), or a callback awaiting it would wait for good.
                room = 1
            if room <= 0:
                if not self._paused:
                    self._paused = True
                    self.transport.pause_reading()
                return
            try:
                frames = parser.frames(room)
            except ProtocolError as error:
                self.broken = error
                self.transport.abort()
                return
            if not frames:
                if self._paused:
                    self._paused = False
                    self.transport.resume_reading()
                return
            for frame in frames:
                if type(frame) is MsgFrame:  # the common case first, by exact type: the cheapest test
                    if not limit:
                        self.broken = ProtocolError("unexpected-frame", "MSG before READY")
                        self.transport.abort()
                        return
                    unconfirmed.add(frame.id)
                    received.append(Message(frame, self))
                elif isinstance(frame, Ping):
                    self._send(PONG_LINE)
                elif isinstance(frame, Err):
                    self.refusal = frame.reason  # jetfan closes the connection next
                elif isinstance(frame, Ready):
                    if self.ready is None:
                        self.ready = frame
                        self.handshake.set_result(frame)
                        return  # the handler adopts the connection, then drains on
                elif isinstance(frame, (PubOk, PubErr)):
                    try:
                        future, outcome = self._waiting.answer(frame)
                    except ProtocolError as error:  # an answer to no PUB that waits
                        self.broken = error
                        self.transport.abort()
                        return
                    if not future.done():  # its awaiting task may have been cancelled
                        if isinstance(outcome, Published):
                            future.set_result(outcome)
                        else:
                            future.set_exception(outcome)
                    if not self._waiting:
                        self._wake_answered()
                # PONG: the answer to a PING we never send; nothing to do.

    # --- writing

    def _send(self, line: bytes) -> None:
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

    # --- Link (_message.py)

    def confirm(self, id_: int, line: bytes) -> bool:
        unconfirmed = self._unconfirmed
        if id_ not in unconfirmed or not self.alive:
            return False
        unconfirmed.discard(id_)
        self._out += line  # _send(), inlined: once per message
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)
        return True

    def wip(self, id_: int, line: bytes) -> bool:
        if id_ not in self._unconfirmed or not self.alive:
            return False
        self._send(line)
        return True

    def unconfirmed(self, id_: int) -> bool:
        return id_ in self._unconfirmed

    def publish(
        self, subject: str, headers: bytes, payload: bytes, tied_to: Optional[int], index: int
    ) -> asyncio.Future[Published]:
        problem = cannot_send(self.alive, self.version, tied_to, self._unconfirmed, subject, self.path)
        if problem is not None:
            raise problem
        id_ = self._waiting.next_id()
        line = encode_pub(id_, subject, headers, payload, tied_to, index)
        future: asyncio.Future[Published] = self.loop.create_future()
        if tied_to is not None:
            # Its failure is jetfan's to act on (the delivery's ACK becomes a NAK, and jetfan logs
            # why): a tied publish nobody awaits is no "exception was never retrieved".
            future.add_done_callback(_retrieved)
        self._waiting.add(id_, subject, future)
        self._send(line)
        if self._paused:
            self._drain()  # reading paused on a full buffer: read on, for the answer
        return future

    def _wake_answered(self) -> None:
        if self._answered is not None and not self._answered.done():
            self._answered.set_result(None)


def _retrieved(future: "asyncio.Future[Published]") -> None:
    if not future.cancelled():
        future.exception()


class Handler:
    """A connected handler: make one with `await jetfan.connect(...)`. Take messages with
    `async for msg in handler` or with process(); one of the two, once. `async with` closes it at
    the end. `options` holds what it was connected with (jetfan.Options)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.connections = 0  # how many times it has connected
        self._loop = asyncio.get_running_loop()
        self._hello = encode_hello(options.handler, options.protocol_version)
        self._conn: Optional[_Connection] = None
        self._ready: Optional[Ready] = None
        self._waiter: Optional[asyncio.Future[None]] = None
        self._consumer: Optional[str] = None
        self._running = 0  # messages the application holds: callbacks running, or the loop body
        self._in_body = False
        self._closing = False
        self._ended = False  # the connection ended and reconnect is off
        self._failure: Optional[BaseException] = None  # ERR or a broken stream: ends everything
        self._reconnect_task: Optional[asyncio.Task[None]] = None
        self._close_done: Optional[asyncio.Future[None]] = None

    # --- state

    @property
    def path(self) -> str:
        """The path of jetfan's socket."""
        return self.options.path

    @property
    def name(self) -> str:
        """The handler name it says HELLO as."""
        return self.options.handler

    @property
    def ready(self) -> Ready:
        """What jetfan announced in the latest READY."""
        assert self._ready is not None
        return self._ready

    @property
    def connected(self) -> bool:
        return self._conn is not None and self._conn.alive

    @property
    def buffered(self) -> int:
        """Messages received and not yet handed out: never more than READY's max_unconfirmed, but
        while PUBs wait for their answers (which may come behind more messages)."""
        conn = self._conn
        return len(conn.received) if conn is not None and conn.alive else 0

    # --- connecting

    async def _start(self) -> None:
        timeout = self.options.connect_timeout
        deadline = time.monotonic() + timeout
        delay, attempts = _FIRST_RETRY, 0
        while True:
            attempts += 1
            try:
                self._adopt(await self._dial())
                return
            except _RETRIED as error:
                if time.monotonic() + delay > deadline:
                    raise ConnectionError(
                        f"cannot connect to jetfan at {self.path} as handler {self.name!r}: {error} "
                        f"(tried {attempts} times in {timeout:g} s)"
                    ) from error
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_FIRST_RETRY)

    async def _dial(self) -> _Connection:
        try:
            return await self._dial_with(self._hello)
        except JetfanError as error:
            # A jetfan that speaks only version 1 refuses a higher one before delivering anything
            # (PROTOCOL.md, "Version negotiation"): speak version 1 with it.
            if self.options.protocol_version <= 1 or "protocol version" not in error.reason:
                raise
            return await self._dial_with(encode_hello(self.options.handler, 1))

    async def _dial_with(self, hello: bytes) -> _Connection:
        path, timeout = self.path, self.options.handshake_timeout
        _, conn = await self._loop.create_unix_connection(
            lambda: _Connection(self._loop, hello, path, self._notify, self._on_lost), path
        )
        try:
            await asyncio.wait_for(asyncio.shield(conn.handshake), timeout)
        except asyncio.TimeoutError:
            conn.abort()
            raise EOFError(f"no READY within {timeout:g} s") from None
        except BaseException:
            conn.abort()  # made by create_unix_connection() before it returned
            raise
        return conn

    def _adopt(self, conn: _Connection) -> None:
        self._conn = conn
        self._ready = conn.ready
        self.connections += 1
        conn.adopt()

    def _on_lost(self, conn: _Connection) -> None:
        if conn is not self._conn:
            return
        if self._closing:
            self._notify()
            return
        if conn.refusal is not None:
            self._failure = JetfanError(conn.refusal, self.path)
            log.error("handler %s: jetfan at %s refused it: %s", self.name, self.path, conn.refusal)
        elif conn.broken is not None:
            self._failure = conn.broken
            log.error("handler %s: jetfan at %s broke the protocol: %s", self.name, self.path, conn.broken)
        elif not self.options.reconnect:
            self._ended = True
            log.info("handler %s: jetfan at %s closed the connection; not reconnecting", self.name, self.path)
        else:
            log.warning(
                "handler %s: lost the connection to jetfan at %s (%s); jetfan redelivers the %d message(s) "
                "it had unconfirmed; reconnecting",
                self.name, self.path, conn.last_error or "jetfan closed it", conn.unconfirmed_count,
            )
            self._reconnect_task = self._loop.create_task(self._reconnect_loop())
        self._notify()

    async def _reconnect_loop(self) -> None:
        delay, attempts = self.options.reconnect_delay, 0
        while not self._closing:
            await asyncio.sleep(delay)
            attempts += 1
            try:
                conn = await self._dial()
            except (JetfanError, ProtocolError) as error:
                log.error("handler %s: reconnecting to jetfan at %s failed for good: %s", self.name, self.path, error)
                self._failure = error
                self._notify()
                return
            except (OSError, EOFError):
                delay = min(delay * 2, self.options.max_reconnect_delay)
                continue
            if self._closing:
                conn.close()
                return
            log.info("handler %s: reconnected to jetfan at %s after %d attempt(s)", self.name, self.path, attempts)
            self._adopt(conn)
            self._notify()
            return

    # --- handing out

    def _notify(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _shift(self) -> Optional[AioMessage]:
        conn = self._conn
        return conn.take() if conn is not None else None

    async def _take(self) -> Optional[AioMessage]:
        """The next message to hand out; None once closing or ended. Raises what ended the handler."""
        while True:
            if self._failure is not None:
                raise self._failure
            if self._closing or self._ended:
                return None
            message = self._shift()
            if message is not None:
                return message
            self._waiter = self._loop.create_future()
            await self._waiter

    def _claim(self, consumer: str) -> None:
        if self._consumer is not None:
            raise RuntimeError(f"this handler is already consumed by {self._consumer}")
        self._consumer = consumer

    def _done_with(self) -> None:
        self._running -= 1
        if self._closing and self._running == 0 and self._close_done is not None:
            self._loop.create_task(self._finish_close())

    def __aiter__(self) -> "Handler":
        self._claim("an async for loop")
        return self

    async def __anext__(self) -> AioMessage:
        if self._in_body:  # the loop body is done with the last one
            self._in_body = False
            if self._closing:
                self._done_with()
            else:
                self._running -= 1  # _done_with(), less what only closing needs: once per message
        # The common case first, a message waiting, in as few calls as it takes (once per message).
        conn = self._conn
        message = conn.take() if conn is not None and self._failure is None and not self._closing else None
        if message is not None:
            self._in_body = True
            self._running += 1
            return message
        message = self._shift() if self._failure is None and not self._closing else None
        if message is None:
            message = await self._take()
            if message is None:
                raise StopAsyncIteration
        self._in_body = True
        self._running += 1
        return message

    async def process(self, fn: Callback, *, concurrency: Optional[int] = None) -> None:
        """Calls `fn` for each message, at most `concurrency` at once (default: the handler's
        `concurrency` option, 1), until the handler is closed. `fn` may be a coroutine function or
        a plain one. When it returns, the message is ACKed; when it raises Term, TERMed with its
        reason; Nak, NAKed with its delay (seconds) and its message as the reason; anything else,
        NAKed with the error's text as the reason (its type's name when that is empty) and the
        error logged to "jetfan.aio". A NAK's reason is sent on a protocol version 3 connection and
        left out before. A message fn confirmed itself is left as it is. Returns once the handler is
        closed and every callback has finished; raises JetfanError or ProtocolError if the
        connection ends with one (after the running callbacks finish)."""
        limit = check_concurrency(self.options.concurrency if concurrency is None else concurrency)
        self._claim("process()")
        running: set[asyncio.Task[None]] = set()
        slot: Optional[asyncio.Future[None]] = None

        def finished(task: asyncio.Task[None]) -> None:
            nonlocal slot
            running.discard(task)
            self._done_with()
            if slot is not None and not slot.done():
                slot.set_result(None)

        try:
            while True:
                while len(running) >= limit:
                    slot = self._loop.create_future()
                    await slot
                message = await self._take()
                if message is None:
                    break
                self._running += 1
                if limit == 1:  # no task per message: the common case, and the fastest
                    try:
                        await self._call(fn, message)
                    finally:
                        self._done_with()
                else:
                    task = self._loop.create_task(self._call(fn, message))
                    running.add(task)
                    task.add_done_callback(finished)
        finally:
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        if self._close_done is not None:
            await self._close_done

    async def _call(self, fn: Callback, message: AioMessage) -> None:
        try:
            result = fn(message)
            if inspect.isawaitable(result):
                await result
        except Exception as error:
            settle(message, error, log, self.name)
        else:
            settle(message, None, log, self.name)

    # --- publishing

    async def publish(self, subject: str, payload: Payload, *, headers: Optional[HeadersArg] = None) -> Published:
        """Publishes `payload` (bytes, or a str sent as UTF-8) to `subject` through jetfan, over this
        handler's connection (PROTOCOL.md, "Publishing"), and returns once JetStream has stored it:
        where (Published.stream, .seq). Not tied to any delivery: from inside a handler,
        msg.publish() is the one that makes a redelivery's publish a duplicate. `headers`: a
        Headers or a mapping (name: value, or name: [values]); a Nats-Msg-Id in them makes the
        stream drop a copy within its duplicate window (Published.duplicate).

        Raises PublishError: jetfan's PUBERR (its `code`: "not-allowed" when jetfan's config gives
        this handler no such publish.subjects, "no-stream", "timeout", ...), "connection-lost" when
        the connection ends before the answer (it may or may not have been stored), and without
        sending, "not-connected" while the handler has no connection (reconnecting, or closed),
        "unsupported" on a connection of protocol version 1 or 2. ValueError or TypeError for
        arguments that cannot be sent. Cancelling it does not take the PUB back."""
        raw_headers = encode_headers(headers)
        body = encode_payload(payload)
        conn = self._conn
        if conn is None:
            raise refusal("not-connected", subject, self.path)
        return await conn.publish(subject, raw_headers, body, None, 0)

    # --- closing

    async def close(self) -> None:
        """Stops handing out messages, waits (up to the close_timeout option, in seconds) until
        those handed out are finished (callbacks returned, or the async for loop asked for the
        next), writes the confirmations, waits (up to close_timeout again) for the answers to the
        PUBs still waiting (tied publishes sent without waiting for their answers, say), and closes
        the connection; a PUB still unanswered then fails with "connection-lost". Messages received
        but not handed out are left unconfirmed: jetfan redelivers them. Idempotent."""
        if self._close_done is None:
            self._closing = True
            if self._reconnect_task is not None:
                self._reconnect_task.cancel()
            self._close_done = self._loop.create_future()
            if self._in_body:  # close() from inside the loop body: that message is done with
                self._in_body = False
                self._running -= 1
            self._notify()
            if self._running == 0:
                self._loop.create_task(self._finish_close())
            else:
                self._loop.call_later(
                    self.options.close_timeout, lambda: self._loop.create_task(self._finish_close())
                )
        await asyncio.shield(self._close_done)

    async def _finish_close(self) -> None:
        done = self._close_done
        if done is None or done.done():
            return
        conn = self._conn
        if conn is not None and conn.alive:
            if conn.publishes_waiting:
                conn.flush()  # the PUBs, and the confirmations behind them
                try:
                    await asyncio.wait_for(conn.all_answered(), self.options.close_timeout)
                except asyncio.TimeoutError:
                    pass
            conn.close()
            try:
                await asyncio.wait_for(asyncio.shield(conn.closed), _CLOSE_WAIT)
            except asyncio.TimeoutError:
                conn.abort()
        if not done.done():
            done.set_result(None)

    async def __aenter__(self) -> "Handler":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def connect(options: Optional[Options] = None, /, **fields: Any) -> Handler:
    """Connects to jetfan's socket as a handler and waits for READY:

        h = await jetfan.connect(path="/run/jetfan/builder.sock", handler="builder")
        h = await jetfan.connect(jetfan.Options(path=..., handler=...), reconnect_delay=0.5)

    The keyword arguments are the fields of jetfan.Options (path, handler, concurrency,
    reconnect, reconnect_delay, max_reconnect_delay, connect_timeout, handshake_timeout,
    close_timeout; durations in seconds), replacing those of `options` when one is given.

    While the socket is missing or refuses, it retries for up to `connect_timeout` seconds, then
    raises ConnectionError; raises JetfanError if jetfan refuses the handler. Afterwards, when the
    connection ends (jetfan restarted, or closed it cleanly) it reconnects by itself, waiting
    `reconnect_delay` seconds and doubling that up to `max_reconnect_delay`, unless `reconnect` is
    False (then iteration ends). Messages unconfirmed at a disconnect are stale: jetfan has
    counted them failed and redelivers them; confirming one does nothing and returns False.
    Reconnects and failed callbacks are logged to "jetfan.aio"."""
    h = Handler(Options.of(options, fields))
    await h._start()
    return h
