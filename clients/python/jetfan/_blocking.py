"""The blocking client, for code without an event loop: the same behaviour as the asyncio Handler,
on a plain socket and threads.

Threads: iterate (or call process()) from one thread. Messages may be confirmed from any thread;
close() may be called from any thread. Confirmations made on the iterating thread are written
together just before it waits for input; those made on other threads, and every WIP, at once."""

from __future__ import annotations

import queue
import selectors
import socket as _socket
import threading
import time
from typing import Any, Callable, Optional

from ._blocking_connection import Connection as _Connection
from ._codec import PONG_LINE, Err, MsgFrame, Ping, ProtocolError, Ready, encode_hello
from ._errors import JetfanError
from ._message import Message
from ._outcome import Log, settle, stderr_log

_HANDSHAKE_TIMEOUT = 10.0
_RETRIED = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BlockingIOError, EOFError)
_WAKE, _SOCKET = 0, 1


class BlockingHandler:
    """A handler's connection to jetfan, blocking. Connects in the constructor (same arguments
    and rules as jetfan.connect()); `for msg in handler` or process() take the messages; `with`
    closes it at the end."""

    def __init__(
        self,
        *,
        socket: str,
        handler: str,
        reconnect: bool = True,
        reconnect_delay: float = 0.1,
        max_reconnect_delay: float = 5.0,
        connect_timeout: float = 10.0,
        close_timeout: float = 10.0,
        log: Optional[Log] = None,
    ) -> None:
        encode_hello(handler)
        self.socket_path = socket
        self.name = handler
        self._reconnect = reconnect
        self._reconnect_delay = reconnect_delay
        self._max_reconnect_delay = max_reconnect_delay
        self._close_timeout = close_timeout
        self._log = log or stderr_log(handler)
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a message was confirmed
        self._reader = threading.get_ident()
        self._reader_waiting = False
        self._closing = False
        self._shut_done = threading.Event()
        self._ended = False
        self._failure: Optional[BaseException] = None
        self._consumer: Optional[str] = None
        self._wake_r, self._wake_w = _socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._conn: Optional[_Connection] = None
        self._ready: Optional[Ready] = None
        self.connections = 0
        try:
            self._connect_first(connect_timeout)
        except BaseException:
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()
            raise

    # --- state

    @property
    def ready(self) -> Ready:
        assert self._ready is not None
        return self._ready

    @property
    def connected(self) -> bool:
        return self._conn is not None and self._conn.alive

    # --- connecting

    def _connect_first(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay, attempts = 0.05, 0
        while True:
            attempts += 1
            try:
                self._dial()
                return
            except _RETRIED as error:
                if time.monotonic() + delay > deadline:
                    raise ConnectionError(
                        f"cannot connect to jetfan at {self.socket_path} as handler {self.name!r}: {error} "
                        f"(tried {attempts} times in {timeout:g} s)"
                    ) from error
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _dial(self) -> None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(_HANDSHAKE_TIMEOUT)
            sock.connect(self.socket_path)
            sock.sendall(encode_hello(self.name))
            conn = _Connection(sock, self)
            refusal: Optional[str] = None
            while conn.ready is None:
                try:
                    data = sock.recv(65536)
                except _socket.timeout:
                    raise EOFError(f"no READY within {_HANDSHAKE_TIMEOUT:g} s") from None
                if not data:
                    if refusal is not None:
                        raise JetfanError(refusal, self.socket_path)
                    raise EOFError("jetfan closed the connection before READY")
                conn.parser.feed(data)
                while conn.ready is None and (frame := conn.parser.next()) is not None:
                    if isinstance(frame, Ready):
                        conn.ready = frame
                    elif isinstance(frame, Err):
                        refusal = frame.reason
                    elif isinstance(frame, Ping):
                        sock.sendall(PONG_LINE)
                    elif isinstance(frame, MsgFrame):
                        raise ProtocolError("unexpected-frame", "MSG before READY")
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        with self._lock:
            self._conn = conn
            self._ready = conn.ready
            self.connections += 1
        self._selector.register(sock, selectors.EVENT_READ, _SOCKET)

    def _drop(self, why: str) -> None:
        conn = self._conn
        if conn is None:
            return
        with self._lock:
            conn.alive = False
            conn.out.clear()
            self._settled.notify_all()
        self._selector.unregister(conn.sock)
        conn.sock.close()
        if self._closing:
            return
        if self._reconnect and self._failure is None:
            self._log(
                f"lost the connection to jetfan at {self.socket_path} ({why}); jetfan redelivers the "
                f"{conn.unconfirmed} message(s) it had unconfirmed; reconnecting"
            )
        elif self._failure is None:
            self._ended = True

    def _reconnect_loop(self) -> bool:
        """False: closed while waiting."""
        delay, attempts = self._reconnect_delay, 0
        while not self._closing:
            if self._wait_wake(delay):
                return False
            attempts += 1
            try:
                self._dial()
            except (OSError, EOFError):
                delay = min(delay * 2, self._max_reconnect_delay)
                continue
            self._log(f"reconnected to jetfan at {self.socket_path} after {attempts} attempt(s)")
            return True
        return False

    def _wait_wake(self, timeout: float) -> bool:
        """Sleeps up to `timeout`; True if close() woke it."""
        for key, _ in self._selector.select(timeout):
            if key.data == _WAKE:
                return True
        return self._closing

    # --- reading

    def _next_frame(self) -> Optional[Any]:
        """The next frame on a live connection (reconnecting as needed); None once closing or
        ended. Raises JetfanError or ProtocolError."""
        while True:
            if self._failure is not None:
                raise self._failure
            if self._closing or self._ended:
                return None
            conn = self._conn
            if conn is None or not conn.alive:
                if not self._reconnect_loop():
                    return None
                continue
            try:
                frame = conn.parser.next()
            except ProtocolError as error:
                self._failure = error
                self._drop(str(error))
                raise
            if frame is not None:
                return frame
            with self._lock:  # confirmations out before we wait; others write their own meanwhile
                conn.write_locked()
                self._reader_waiting = True
            try:
                events = self._selector.select()
            finally:
                with self._lock:
                    self._reader_waiting = False
            if any(key.data == _WAKE for key, _ in events):
                continue
            try:
                data = conn.sock.recv(262144)
            except BlockingIOError:
                continue
            except OSError as error:
                self._drop(str(error))
                continue
            if not data:
                self._drop("jetfan closed it")
                continue
            conn.parser.feed(data)

    def _next_message(self) -> Optional[Message]:
        while True:
            frame = self._next_frame()
            if frame is None:
                return None
            kind = type(frame)
            conn = self._conn
            assert conn is not None
            if kind is MsgFrame:
                with self._lock:
                    conn.unconfirmed += 1
                return Message(frame, conn)
            if kind is Ping:
                with self._lock:
                    conn.out += PONG_LINE
            elif kind is Err:
                self._failure = JetfanError(frame.reason, self.socket_path)  # jetfan closes next
                self._drop(frame.reason)
                raise self._failure

    def _claim(self, consumer: str) -> None:
        if self._consumer is not None:
            raise RuntimeError(f"this handler is already consumed by {self._consumer}")
        self._consumer = consumer
        self._reader = threading.get_ident()

    def __iter__(self) -> "BlockingHandler":
        self._claim("a for loop")
        return self

    def __next__(self) -> Message:
        message = self._next_message()
        if message is None:
            if self._closing:
                self._shut()
            raise StopIteration
        return message

    def process(self, fn: Callable[[Message], Any], *, concurrency: int = 1) -> None:
        """Calls `fn` for each message on `concurrency` threads (1: this one) until close(); the
        outcome of each call as in the asyncio process(). Returns once closed and every callback
        has finished; raises JetfanError or ProtocolError if the connection ends with one, after
        the running callbacks finish. While it holds (queued or in a callback) as many messages as
        READY's max_unconfirmed, nothing more is read."""
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
        self._claim("process()")
        if concurrency == 1:
            while (message := self._next_message()) is not None:
                self._call(fn, message)
            if self._closing:
                self._shut()
            return
        work: queue.SimpleQueue[Optional[Message]] = queue.SimpleQueue()
        held = [0]  # read and not yet done with: queued, or in a callback (under _lock)

        def worker() -> None:
            while (message := work.get()) is not None:
                try:
                    if not message.stale:  # its connection is gone: it can no longer be confirmed
                        self._call(fn, message)
                finally:
                    with self._lock:
                        held[0] -= 1
                        self._settled.notify_all()

        threads = [threading.Thread(target=worker, name=f"jetfan-{self.name}-{i}", daemon=True) for i in range(concurrency)]
        for thread in threads:
            thread.start()
        try:
            while True:
                with self._lock:
                    while (
                        not self._closing
                        and self._ready is not None
                        and held[0] >= self._ready.max_unconfirmed
                    ):
                        self._settled.wait(0.1)
                message = self._next_message()
                if message is None:
                    break
                with self._lock:
                    held[0] += 1
                work.put(message)
        finally:
            for _ in threads:
                work.put(None)
            for thread in threads:
                thread.join()
            self.flush()
            if self._closing:
                self._shut()

    def _call(self, fn: Callable[[Message], Any], message: Message) -> None:
        try:
            fn(message)
        except Exception as error:
            settle(message, error, self._log)
        else:
            settle(message, None, self._log)

    # --- closing

    def flush(self) -> None:
        """Writes the confirmations made on the iterating thread so far (they go out by themselves
        when it next waits for a message)."""
        with self._lock:
            if self._conn is not None:
                self._conn.write_locked()

    def close(self) -> None:
        """Stops handing out messages, writes the confirmations made so far and closes the
        connection; from another thread, the iterating thread returns at its next wait. Messages
        not confirmed are redelivered by jetfan. Idempotent."""
        if self._closing:
            return
        self._closing = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if threading.get_ident() == self._reader or self._consumer is None:
            self._shut()
        else:  # the iterating thread shuts the connection once its callbacks are done
            self._shut_done.wait(self._close_timeout)

    def _shut(self) -> None:
        if self._shut_done.is_set():
            return
        self._shut_done.set()
        self.flush()
        conn = self._conn
        if conn is not None and conn.alive:
            with self._lock:
                conn.alive = False
            try:
                conn.sock.close()
            except OSError:
                pass
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> "BlockingHandler":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
