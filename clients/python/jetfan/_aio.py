"""The asyncio client: a handler's connection to jetfan. Says HELLO, hands out deliveries, writes
confirmations, answers PING, and reconnects when jetfan restarts.

Everything here runs on one event loop: call a Handler's methods, and its messages' ack(), nak(),
term() and working(), from that loop's thread only (BlockingHandler is the one for threads)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from typing import Any, Awaitable, Callable, Optional, Union

from ._aio_connection import Connection as _Connection
from ._codec import ProtocolError, Ready, encode_hello
from ._errors import JetfanError
from ._message import Message
from ._outcome import Log, settle, stderr_log

Callback = Callable[[Message], Union[Awaitable[Any], Any]]

from ._aio_connection import HANDSHAKE_TIMEOUT as _HANDSHAKE_TIMEOUT
_RETRIED = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BlockingIOError, EOFError)


class Handler:
    """A connected handler (make one with connect()). Take messages with `async for msg in handler`
    or with process(); one of the two, once. `async with` closes it at the end."""

    def __init__(
        self,
        socket: str,
        handler: str,
        *,
        reconnect: bool = True,
        reconnect_delay: float = 0.1,
        max_reconnect_delay: float = 5.0,
        connect_timeout: float = 10.0,
        close_timeout: float = 10.0,
        log: Optional[Log] = None,
    ) -> None:
        encode_hello(handler)  # a name that cannot be sent is a ValueError now, not later
        self.socket_path = socket
        self.name = handler
        self._reconnect = reconnect
        self._reconnect_delay = reconnect_delay
        self._max_reconnect_delay = max_reconnect_delay
        self._connect_timeout = connect_timeout
        self._close_timeout = close_timeout
        self._log = log or stderr_log(handler)
        self._loop = asyncio.get_running_loop()
        self._conn: Optional[_Connection] = None
        self._ready: Optional[Ready] = None
        self._queue: deque[Message] = deque()  # received on _conn, not yet handed out
        self._waiter: Optional[asyncio.Future[None]] = None
        self._consumer: Optional[str] = None
        self._running = 0  # messages the application holds: callbacks running, or the loop body
        self._in_body = False
        self._closing = False
        self._ended = False  # the connection ended and reconnect is off
        self._failure: Optional[BaseException] = None  # ERR or a broken stream: ends everything
        self._reconnect_task: Optional[asyncio.Task[None]] = None
        self._close_done: Optional[asyncio.Future[None]] = None
        self.connections = 0  # how many times it has connected

    # --- state

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
        """Messages received and not yet handed out: never more than READY's max_unconfirmed."""
        return len(self._queue)

    # --- connecting

    async def _start(self) -> None:
        deadline = time.monotonic() + self._connect_timeout
        delay, attempts = 0.05, 0
        while True:
            attempts += 1
            try:
                self._adopt(await self._dial())
                return
            except _RETRIED as error:
                if time.monotonic() + delay > deadline:
                    raise ConnectionError(
                        f"cannot connect to jetfan at {self.socket_path} as handler {self.name!r}: {error} "
                        f"(tried {attempts} times in {self._connect_timeout:g} s)"
                    ) from error
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _dial(self) -> _Connection:
        _, conn = await self._loop.create_unix_connection(lambda: _Connection(self), self.socket_path)
        try:
            await asyncio.wait_for(asyncio.shield(conn.handshake), _HANDSHAKE_TIMEOUT)
        except asyncio.TimeoutError:
            conn.transport.abort()
            raise EOFError(f"no READY within {_HANDSHAKE_TIMEOUT:g} s") from None
        except BaseException:
            conn.transport.abort()  # made by create_unix_connection() before it returned
            raise
        return conn

    def _adopt(self, conn: _Connection) -> None:
        self._conn = conn
        self._ready = conn.ready
        self.connections += 1
        conn.adopted = True
        conn.drain()  # whatever came right after READY

    def _on_close(self, conn: _Connection) -> None:
        if conn is not self._conn:
            return
        lost = conn.unconfirmed
        self._queue.clear()  # all stale: jetfan redelivers them
        if self._closing:
            self._notify()
            return
        if conn.refusal is not None:
            self._failure = JetfanError(conn.refusal, self.socket_path)
        elif conn.broken is not None:
            self._failure = conn.broken
        elif not self._reconnect:
            self._ended = True
        else:
            why = f"{conn.last_error}" if conn.last_error else "jetfan closed it"
            self._log(
                f"lost the connection to jetfan at {self.socket_path} ({why}); jetfan redelivers the {lost} "
                "message(s) it had unconfirmed; reconnecting"
            )
            self._reconnect_task = self._loop.create_task(self._reconnect_loop())
        self._notify()

    async def _reconnect_loop(self) -> None:
        delay, attempts = self._reconnect_delay, 0
        while not self._closing:
            await asyncio.sleep(delay)
            attempts += 1
            try:
                conn = await self._dial()
            except (JetfanError, ProtocolError) as error:
                self._failure = error
                self._notify()
                return
            except (OSError, EOFError):
                delay = min(delay * 2, self._max_reconnect_delay)
                continue
            if self._closing:
                conn.transport.close()
                return
            self._adopt(conn)
            self._log(f"reconnected to jetfan at {self.socket_path} after {attempts} attempt(s)")
            self._notify()
            return

    # --- handing out

    def _notify(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _shift(self) -> Optional[Message]:
        queue, conn = self._queue, self._conn
        while queue:
            message = queue.popleft()
            if conn is not None and conn.paused:
                conn.drain()  # room again: read on
            if message._link.alive:
                return message
        return None

    async def _take(self) -> Optional[Message]:
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

    async def __anext__(self) -> Message:
        if self._in_body:  # the loop body is done with the last one
            self._in_body = False
            self._done_with()
        message = self._shift() if self._failure is None and not self._closing else None
        if message is None:
            message = await self._take()
            if message is None:
                raise StopAsyncIteration
        self._in_body = True
        self._running += 1
        return message

    async def process(self, fn: Callback, *, concurrency: int = 1) -> None:
        """Calls `fn` for each message, at most `concurrency` at once, until the handler is closed.
        `fn` may be a coroutine function or a plain one. When it returns, the message is ACKed;
        when it raises Term, TERMed with its reason; Nak, NAKed with its delay; anything else,
        NAKed and the error logged. A message fn confirmed itself is left as it is. Returns once
        the handler is closed and every callback has finished; raises JetfanError or
        ProtocolError if the connection ends with one (after the running callbacks finish)."""
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
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
                while len(running) >= concurrency:
                    slot = self._loop.create_future()
                    await slot
                message = await self._take()
                if message is None:
                    break
                self._running += 1
                if concurrency == 1:  # no task per message: the common case, and the fastest
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

    async def _call(self, fn: Callback, message: Message) -> None:
        try:
            result = fn(message)
            if inspect.isawaitable(result):
                await result
        except Exception as error:
            settle(message, error, self._log)
        else:
            settle(message, None, self._log)

    # --- closing

    async def close(self) -> None:
        """Stops handing out messages, waits (up to close_timeout) until those handed out are
        finished (callbacks returned, or the async for loop asked for the next), writes the
        confirmations and closes the connection. Messages received but not handed out are left
        unconfirmed: jetfan redelivers them. Idempotent."""
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
                self._loop.call_later(self._close_timeout, lambda: self._loop.create_task(self._finish_close()))
        await asyncio.shield(self._close_done)

    async def _finish_close(self) -> None:
        done = self._close_done
        if done is None or done.done():
            return
        conn = self._conn
        if conn is not None and conn.alive:
            conn.flush()
            conn.transport.close()
            try:
                await asyncio.wait_for(asyncio.shield(conn.closed), 2.0)
            except asyncio.TimeoutError:
                conn.transport.abort()
        if not done.done():
            done.set_result(None)

    async def __aenter__(self) -> "Handler":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def connect(
    *,
    socket: str,
    handler: str,
    reconnect: bool = True,
    reconnect_delay: float = 0.1,
    max_reconnect_delay: float = 5.0,
    connect_timeout: float = 10.0,
    close_timeout: float = 10.0,
    log: Optional[Log] = None,
) -> Handler:
    """Connects to jetfan's socket as `handler` (a name jetfan's config declares) and waits for
    READY. While the socket is missing or refuses, retries for up to `connect_timeout` seconds,
    then raises ConnectionError; raises JetfanError if jetfan refuses the handler.

    Afterwards, when the connection ends (jetfan restarted, or closed it cleanly) it reconnects by
    itself, waiting `reconnect_delay` seconds and doubling that up to `max_reconnect_delay`, unless
    `reconnect` is False (then iteration ends). Messages unconfirmed at a disconnect are stale:
    jetfan has counted them failed and redelivers them; confirming one does nothing and returns
    False. `log` gets a line for each reconnect and each failed callback (default: stderr)."""
    h = Handler(
        socket,
        handler,
        reconnect=reconnect,
        reconnect_delay=reconnect_delay,
        max_reconnect_delay=max_reconnect_delay,
        connect_timeout=connect_timeout,
        close_timeout=close_timeout,
        log=log,
    )
    await h._start()
    return h
