"""The blocking client, for code without an event loop: the same behaviour as the asyncio one
(jetfan.aio), on a plain socket and threads.

    with jetfan.BlockingHandler(path="/run/jetfan/builder.sock", handler="builder") as h:
        for msg in h:
            msg.ack()

Threads: iterate (or call process()) from one thread. Messages may be confirmed from any thread;
close() may be called from any thread. Confirmations made on the iterating thread are written
together just before it waits for input; those made on other threads, and every WIP, at once.
Reports go to the logger "jetfan.blocking"."""

from __future__ import annotations

import logging
import queue
import selectors
import socket
import threading
import time
from typing import Any, Callable, Optional

from ._codec import PONG_LINE, Err, FrameParser, Frame, MsgFrame, Ping, ProtocolError, PubErr, PubOk, Ready, encode_hello
from ._errors import JetfanError
from ._message import Message
from ._options import Options, check_concurrency
from ._outcome import settle

__all__ = ["BlockingHandler"]

log = logging.getLogger(__name__)

_RETRIED = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BlockingIOError, EOFError)
_FIRST_RETRY, _MAX_FIRST_RETRY = 0.05, 1.0  # seconds between attempts of the first connect
_WAKE, _SOCKET = 0, 1


class _Reading:
    """What a BlockingHandler and its connections share: the lock that confirmations, the output
    buffer and the reading state are under; `settled`, notified when a message is confirmed or a
    connection is dropped; the iterating thread, and whether it is waiting for input."""

    __slots__ = ("lock", "settled", "thread", "waiting")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.settled = threading.Condition(self.lock)
        self.thread = threading.get_ident()
        self.waiting = False  # under lock

    def done_waiting(self) -> None:
        with self.lock:
            self.waiting = False

    def writes_at_once(self) -> bool:
        """A confirmation made now is written at once (and not when the iterating thread next
        waits): it is made on another thread, or while the iterating thread waits. Under lock."""
        return self.waiting or threading.get_ident() != self.thread


class _Connection:
    """One socket, from HELLO to close; the Link its messages confirm through. Thread-safe: it
    works under the shared `_Reading` lock."""

    def __init__(self, sock: socket.socket, ready: Ready, parser: FrameParser, reading: _Reading) -> None:
        self.sock = sock
        self.ready = ready
        self.parser = parser
        self.alive = True
        self._reading = reading
        self._unconfirmed: set[int] = set()  # under the lock
        self._out = bytearray()  # under the lock

    @classmethod
    def open(cls, path: str, hello: bytes, timeout: float, reading: _Reading) -> "_Connection":
        """Connects, says HELLO and waits (up to `timeout` seconds) for READY. Raises OSError or
        EOFError for what is worth another try, JetfanError or ProtocolError for what is not."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(hello)
            parser = FrameParser()
            ready: Optional[Ready] = None
            refusal: Optional[str] = None
            while ready is None:
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    raise EOFError(f"no READY within {timeout:g} s") from None
                if not data:
                    if refusal is not None:
                        raise JetfanError(refusal, path)
                    raise EOFError("jetfan closed the connection before READY")
                parser.feed(data)
                while ready is None and (frame := parser.next()) is not None:
                    if isinstance(frame, Ready):
                        ready = frame
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
        assert ready is not None
        return cls(sock, ready, parser, reading)

    @property
    def unconfirmed_count(self) -> int:
        return len(self._unconfirmed)

    @property
    def version(self) -> int:
        """The protocol version this connection speaks: its READY's."""
        return self.ready.version

    def received(self, frame: MsgFrame) -> Message:
        with self._reading.lock:
            self._unconfirmed.add(frame.id)
        return Message(frame, self)

    def queue(self, line: bytes) -> None:
        """Queues `line` for the next write."""
        with self._reading.lock:
            if self.alive:
                self._out += line

    def write(self) -> None:
        """Writes what is queued."""
        with self._reading.lock:
            self._write_locked()

    def write_and_wait(self) -> None:
        """Writes what is queued, as the iterating thread is about to wait for input: until it is
        done waiting (_Reading.done_waiting()), confirmations made meanwhile are written at once."""
        with self._reading.lock:
            self._write_locked()
            self._reading.waiting = True

    def shut(self) -> None:
        """Marks it closed (its messages are stale from now on), drops what is queued, closes the
        socket. Idempotent."""
        with self._reading.lock:
            self.alive = False
            self._out.clear()
            self._reading.settled.notify_all()
        try:
            self.sock.close()
        except OSError:
            pass

    def _write_locked(self) -> None:
        if not self._out:
            return
        if self.alive:
            try:
                self.sock.sendall(self._out)
            except OSError:
                pass  # the connection is going; the reader finds out when it reads
        self._out.clear()

    # --- Link (_message.py)

    def confirm(self, id_: int, line: bytes) -> bool:
        reading = self._reading
        with reading.lock:
            if id_ not in self._unconfirmed or not self.alive:
                return False
            self._unconfirmed.discard(id_)
            self._out += line
            if reading.writes_at_once():
                self._write_locked()
            reading.settled.notify_all()
        return True

    def wip(self, id_: int, line: bytes) -> bool:
        with self._reading.lock:
            if id_ not in self._unconfirmed or not self.alive:
                return False
            self._out += line
            self._write_locked()
        return True

    def unconfirmed(self, id_: int) -> bool:
        return id_ in self._unconfirmed


class BlockingHandler:
    """A handler's connection to jetfan, blocking. Connects in the constructor, which takes what
    jetfan.connect() takes: the fields of jetfan.Options as keyword arguments (path, handler,
    concurrency, reconnect, reconnect_delay, ...; durations in seconds), or an Options.
    `for msg in handler` or process() take the messages; `with` closes it at the end."""

    def __init__(self, options: Optional[Options] = None, /, **fields: Any) -> None:
        self.options = Options.of(options, fields)
        self.connections = 0
        self._hello = encode_hello(self.options.handler, self.options.protocol_version)
        self._reading = _Reading()
        self._closing = False
        self._shut_done = threading.Event()
        self._ended = False
        self._failure: Optional[BaseException] = None
        self._consumer: Optional[str] = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._conn: Optional[_Connection] = None
        try:
            self._connect_first()
        except BaseException:
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()
            raise

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
        assert self._conn is not None
        return self._conn.ready

    @property
    def connected(self) -> bool:
        return self._conn is not None and self._conn.alive

    # --- connecting

    def _connect_first(self) -> None:
        timeout = self.options.connect_timeout
        deadline = time.monotonic() + timeout
        delay, attempts = _FIRST_RETRY, 0
        while True:
            attempts += 1
            try:
                self._dial()
                return
            except _RETRIED as error:
                if time.monotonic() + delay > deadline:
                    raise ConnectionError(
                        f"cannot connect to jetfan at {self.path} as handler {self.name!r}: {error} "
                        f"(tried {attempts} times in {timeout:g} s)"
                    ) from error
            time.sleep(delay)
            delay = min(delay * 2, _MAX_FIRST_RETRY)

    def _dial(self) -> None:
        timeout = self.options.handshake_timeout
        try:
            conn = _Connection.open(self.path, self._hello, timeout, self._reading)
        except JetfanError as error:
            # A jetfan that speaks only version 1 refuses a higher one before delivering anything
            # (PROTOCOL.md, "Version negotiation"): speak version 1 with it.
            if self.options.protocol_version <= 1 or "protocol version" not in error.reason:
                raise
            conn = _Connection.open(self.path, encode_hello(self.options.handler, 1), timeout, self._reading)
        with self._reading.lock:
            self._conn = conn
            self.connections += 1
        self._selector.register(conn.sock, selectors.EVENT_READ, _SOCKET)

    def _drop(self, why: str) -> None:
        conn = self._conn
        if conn is None or not conn.alive:
            return
        self._selector.unregister(conn.sock)
        conn.shut()
        if self._closing:
            return
        if isinstance(self._failure, JetfanError):
            log.error("handler %s: %s", self.name, self._failure)
        elif self._failure is not None:
            log.error("handler %s: jetfan at %s broke the protocol: %s", self.name, self.path, self._failure)
        elif self.options.reconnect:
            log.warning(
                "handler %s: lost the connection to jetfan at %s (%s); jetfan redelivers the %d message(s) "
                "it had unconfirmed; reconnecting",
                self.name, self.path, why, conn.unconfirmed_count,
            )
        else:
            self._ended = True
            log.info("handler %s: jetfan at %s closed the connection; not reconnecting", self.name, self.path)

    def _reconnect_loop(self) -> bool:
        """False: closed while waiting."""
        delay, attempts = self.options.reconnect_delay, 0
        while not self._closing:
            if self._wait_wake(delay):
                return False
            attempts += 1
            try:
                self._dial()
            except (OSError, EOFError):
                delay = min(delay * 2, self.options.max_reconnect_delay)
                continue
            except (JetfanError, ProtocolError) as error:
                log.error("handler %s: reconnecting to jetfan at %s failed for good: %s", self.name, self.path, error)
                self._failure = error
                raise
            log.info("handler %s: reconnected to jetfan at %s after %d attempt(s)", self.name, self.path, attempts)
            return True
        return False

    def _wait_wake(self, timeout: float) -> bool:
        """Sleeps up to `timeout` seconds; True if close() woke it."""
        for key, _ in self._selector.select(timeout):
            if key.data == _WAKE:
                return True
        return self._closing

    # --- reading

    def _next_frame(self) -> Optional[Frame]:
        """The next frame on a live connection (reconnecting as needed); None once closing or
        ended. Raises JetfanError or ProtocolError."""
        reading = self._reading
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
            conn.write_and_wait()  # confirmations out before we wait; others write their own meanwhile
            try:
                events = self._selector.select()
            finally:
                reading.done_waiting()
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
            conn = self._conn
            assert conn is not None
            if type(frame) is MsgFrame:  # the common case first, by exact type: the cheapest test
                return conn.received(frame)
            if isinstance(frame, Ping):
                conn.queue(PONG_LINE)
            elif isinstance(frame, Err):
                self._failure = JetfanError(frame.reason, self.path)  # jetfan closes next
                self._drop(frame.reason)
                raise self._failure
            elif isinstance(frame, (PubOk, PubErr)):  # answers to a PUB, which this client never sends
                verb = "PUBOK" if isinstance(frame, PubOk) else "PUBERR"
                self._failure = ProtocolError("unexpected-frame", f"{verb} {frame.id}, but this client sent no PUB")
                self._drop(str(self._failure))
                raise self._failure

    def _claim(self, consumer: str) -> None:
        if self._consumer is not None:
            raise RuntimeError(f"this handler is already consumed by {self._consumer}")
        self._consumer = consumer
        self._reading.thread = threading.get_ident()

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

    def process(self, fn: Callable[[Message], Any], *, concurrency: Optional[int] = None) -> None:
        """Calls `fn` for each message on `concurrency` threads (default: the handler's
        `concurrency` option, 1; 1 is this thread) until close(); the outcome of each call as in
        the asyncio process() (an exception's text the NAK's reason), failures logged to
        "jetfan.blocking". Returns once closed and every callback has finished; raises JetfanError
        or ProtocolError if the connection ends with one, after the running callbacks finish. While
        it holds (queued or in a callback) as many messages as READY's max_unconfirmed, nothing
        more is read."""
        threads_wanted = check_concurrency(self.options.concurrency if concurrency is None else concurrency)
        self._claim("process()")
        if threads_wanted == 1:
            while (message := self._next_message()) is not None:
                self._call(fn, message)
            if self._closing:
                self._shut()
            return
        reading = self._reading
        work: queue.SimpleQueue[Optional[Message]] = queue.SimpleQueue()
        held = [0]  # read and not yet done with: queued, or in a callback (under the lock)

        def worker() -> None:
            while (message := work.get()) is not None:
                try:
                    if not message.stale:  # its connection is gone: it can no longer be confirmed
                        self._call(fn, message)
                finally:
                    with reading.lock:
                        held[0] -= 1
                        reading.settled.notify_all()

        threads = [
            threading.Thread(target=worker, name=f"jetfan-{self.name}-{i}", daemon=True) for i in range(threads_wanted)
        ]
        for thread in threads:
            thread.start()
        try:
            while True:
                with reading.lock:
                    while not self._closing and self._conn is not None and held[0] >= self._conn.ready.max_unconfirmed:
                        reading.settled.wait(0.1)
                message = self._next_message()
                if message is None:
                    break
                with reading.lock:
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
            settle(message, error, log, self.name)
        else:
            settle(message, None, log, self.name)

    # --- closing

    def flush(self) -> None:
        """Writes the confirmations made on the iterating thread so far (they go out by themselves
        when it next waits for a message)."""
        conn = self._conn
        if conn is not None:
            conn.write()

    def close(self) -> None:
        """Stops handing out messages, writes the confirmations made so far and closes the
        connection; from another thread, the iterating thread returns at its next wait (close()
        waits for that up to the close_timeout option, in seconds). Messages not confirmed are
        redelivered by jetfan. Idempotent."""
        if self._closing:
            return
        self._closing = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if threading.get_ident() == self._reading.thread or self._consumer is None:
            self._shut()
        else:  # the iterating thread shuts the connection once its callbacks are done
            self._shut_done.wait(self.options.close_timeout)

    def _shut(self) -> None:
        if self._shut_done.is_set():
            return
        self._shut_done.set()
        self.flush()
        conn = self._conn
        if conn is not None:
            conn.shut()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> "BlockingHandler":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
