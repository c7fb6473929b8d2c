"""The blocking client, for code without an event loop: the same behaviour as the asyncio one
(jetfan.aio), on a plain socket and threads.

    with jetfan.BlockingHandler(path="/run/jetfan/builder.sock", handler="builder") as h:
        for msg in h:
            msg.ack()

Threads: iterate (or call process()) from one thread. Messages may be confirmed, and publishes made
and waited for, from any thread; close() may be called from any thread. Confirmations made on the
iterating thread are written together just before it waits for input (its own PUBs too, so that a
tied PUB and the ACK behind it go out in one write); those made on other threads, and every WIP, at
once. The socket is read by the iterating thread, or, while that one is busy, by a thread waiting
for a publish's answer: whichever thread waits for input reads, one at a time, and what it reads
that is another's (a message, an answer) it hands over. Reports go to the logger
"jetfan.blocking"."""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import selectors
import socket
import threading
import time
from collections import deque
from typing import Any, Callable, Optional

from ._codec import (
    PONG_LINE,
    Err,
    Frame,
    FrameParser,
    MsgFrame,
    Ping,
    Pong,
    ProtocolError,
    PubErr,
    PubOk,
    Ready,
    encode_hello,
    encode_pub,
)
from ._errors import JetfanError, PublishError
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

__all__ = ["BlockingHandler"]

log = logging.getLogger(__name__)

_RETRIED = (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, BlockingIOError, EOFError)
_FIRST_RETRY, _MAX_FIRST_RETRY = 0.05, 1.0  # seconds between attempts of the first connect
_WAKE, _SOCKET = 0, 1


class _Reading:
    """What a BlockingHandler and its connections share: the lock that confirmations, the output
    buffer and the reading state are under; `settled`, notified when a message is confirmed, a
    connection is dropped, a publish is answered, a frame is handed over or a thread stops reading;
    the iterating thread, and whether it is waiting for input."""

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


BlockingMessage = Message["concurrent.futures.Future[Published]"]  # its publish() gives a Future


class _Publishing(concurrent.futures.Future[Published]):
    """The future of one PUB's answer. result() and exception() read jetfan's answers themselves
    while no other thread reads them, so that waiting works on any thread, the iterating one
    included (concurrent.futures.wait() and as_completed() do not read: on the iterating thread,
    call result()). It cannot be cancelled: a PUB sent is not taken back."""

    def __init__(self, conn: "_Connection") -> None:
        super().__init__()
        self._conn = conn

    def result(self, timeout: Optional[float] = None) -> Published:
        """The Published, once jetfan has answered; raises PublishError when the publish failed,
        concurrent.futures.TimeoutError after `timeout` seconds (None: no limit) without an
        answer."""
        self._conn.wait_for(self, timeout)
        outcome: Published = super().result(0)
        return outcome

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        self._conn.wait_for(self, timeout)
        return super().exception(0)

    def cancel(self) -> bool:
        return False


class _Connection:
    """One socket, from HELLO to close; the Link its messages confirm and publish through.
    Thread-safe: it works under the shared `_Reading` lock, and one thread at a time reads the
    socket and the parser (`_reader`, under the lock): the iterating thread in next_frame(), or a
    thread waiting for a PUB's answer in wait_for(). A reader settles the answers it reads and
    answers PING; the other frames are the iterating thread's, which a thread waiting for an answer
    puts `_aside` for it."""

    def __init__(self, sock: socket.socket, ready: Ready, parser: FrameParser, reading: _Reading, path: str) -> None:
        self.sock = sock
        self.ready = ready
        self.parser = parser
        self.path = path
        self.alive = True
        # Why the stream ended, when a thread waiting for an answer found it (EOFError, OSError,
        # ProtocolError): the iterating thread drops the connection for it. Under the lock.
        self.ended: Optional[BaseException] = None
        self._reading = reading
        self._unconfirmed: set[int] = set()  # under the lock
        self._out = bytearray()  # under the lock
        self._waiting: Waiting[_Publishing] = Waiting(path)  # under the lock
        self._aside: deque[Frame] = deque()  # under the lock: read by another thread for the iterating one
        self._reader: Optional[int] = None  # under the lock: the thread reading the socket and the parser
        self._want_read = 0  # under the lock: threads waiting for the reader to stop
        self._closed = False  # under the lock: the socket is closed
        # A waiting thread's own selector (the iterating thread has the handler's), and one for
        # waiting until the socket takes more.
        self._readable = selectors.DefaultSelector()
        self._readable.register(sock, selectors.EVENT_READ)
        self._writable = selectors.DefaultSelector()  # under the lock
        self._writable.register(sock, selectors.EVENT_WRITE)

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
            refusal_: Optional[str] = None
            while ready is None:
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    raise EOFError(f"no READY within {timeout:g} s") from None
                if not data:
                    if refusal_ is not None:
                        raise JetfanError(refusal_, path)
                    raise EOFError("jetfan closed the connection before READY")
                parser.feed(data)
                while ready is None and (frame := parser.next()) is not None:
                    if isinstance(frame, Ready):
                        ready = frame
                    elif isinstance(frame, Err):
                        refusal_ = frame.reason
                    elif isinstance(frame, Ping):
                        sock.sendall(PONG_LINE)
                    elif isinstance(frame, MsgFrame):
                        raise ProtocolError("unexpected-frame", "MSG before READY")
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        assert ready is not None
        return cls(sock, ready, parser, reading, path)

    @property
    def unconfirmed_count(self) -> int:
        return len(self._unconfirmed)

    @property
    def version(self) -> int:
        """The protocol version this connection speaks: its READY's."""
        return self.ready.version

    def received(self, frame: MsgFrame) -> BlockingMessage:
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

    # --- reading

    def next_frame(self, selector: selectors.BaseSelector) -> Optional[Frame]:
        """For the iterating thread, which waits in `selector` (this socket's and the wake-up's):
        the next frame that is its to handle (MSG, ERR, ...: answers to PUBs and PING are handled
        here), or None when it is to look again (woken up, bytes read, another thread reading).
        Writes what is queued before it waits. Raises ProtocolError when the stream broke, EOFError
        or OSError when it ended."""
        reading = self._reading
        me = threading.get_ident()
        with reading.lock:
            if self._aside:
                return self._aside.popleft()
            if self.ended is not None:
                raise self.ended
            if self._reader is not None:  # a thread waiting for an answer reads: it hands over ours
                self._write_locked()
                reading.waiting = True
                self._want_read += 1
                reading.settled.wait()
                self._want_read -= 1
                reading.waiting = False
                return None
            self._reader = me
        try:
            while True:
                frame = self.parser.next()
                if frame is None:
                    break
                if not self._dispatch(frame):
                    return frame
            self.write_and_wait()
            try:
                events = selector.select()
            finally:
                reading.done_waiting()
            if any(key.data == _WAKE for key, _ in events):
                return None
            try:
                data = self.sock.recv(262144)
            except BlockingIOError:
                return None
            if not data:
                raise EOFError("jetfan closed it")
            self.parser.feed(data)
            return None
        finally:
            with reading.lock:
                self._reader = None
                if self._want_read:
                    reading.settled.notify_all()

    def wait_for(self, future: _Publishing, timeout: Optional[float]) -> None:
        """Returns once `future` is done, or after `timeout` seconds (None: no limit). Reads the
        socket itself while no other thread does (settling answers, handing the iterating thread
        its frames), else waits for the thread that reads. Any thread."""
        deadline = None if timeout is None else time.monotonic() + timeout
        reading = self._reading
        me = threading.get_ident()
        while True:
            with reading.lock:
                if future.done():
                    return
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return
                if self._closed:  # shut: which failed it (it cannot be waiting for an answer)
                    return
                # This thread reads already when a done-callback, run as it settles an answer,
                # waits for another: it reads on, as the reader it is.
                nested = self._reader == me
                if self._reader is not None and not nested:
                    self._want_read += 1
                    reading.settled.wait(remaining)
                    self._want_read -= 1
                    continue
                self._reader = me
            try:
                self._read_for(future, remaining)
            finally:
                if not nested:
                    with reading.lock:
                        self._reader = None
                        reading.settled.notify_all()

    def _read_for(self, future: _Publishing, timeout: Optional[float]) -> None:
        """One read by a thread waiting for `future`, which is the reader: what the parser holds,
        then (unless that settled it) one read of the socket, waiting up to `timeout` seconds."""
        reading = self._reading
        try:
            while True:
                frame = self.parser.next()
                if frame is None:
                    break
                if not self._dispatch(frame):
                    with reading.lock:
                        self._aside.append(frame)
                        reading.settled.notify_all()
            with reading.lock:
                if not self.alive or self.ended is not None:
                    return
                self._write_locked()  # its PUB if it is still queued, a PONG, whatever else is
            if future.done():
                return
            if not self._readable.select(timeout):
                return
            data = self.sock.recv(262144)
        except BlockingIOError:
            return
        except (ProtocolError, OSError, ValueError) as error:  # ValueError: the socket was closed
            self._end(error if not isinstance(error, ValueError) else EOFError(str(error)))
            return
        if not data:
            self._end(EOFError("jetfan closed it"))
            return
        self.parser.feed(data)

    def _dispatch(self, frame: Frame) -> bool:
        """Handles `frame` if it is the reader's to handle: an answer to a PUB (settles its future)
        or PING (queues PONG); True if it did. Raises ProtocolError for an answer to no PUB that
        waits."""
        if type(frame) is MsgFrame:
            return False
        if isinstance(frame, (PubOk, PubErr)):
            reading = self._reading
            with reading.lock:
                future, outcome = self._waiting.answer(frame)
            # Outside the lock: a done-callback may confirm a message.
            if isinstance(outcome, Published):
                future.set_result(outcome)
            else:
                future.set_exception(outcome)
            with reading.lock:
                reading.settled.notify_all()
            return True
        if isinstance(frame, Ping):
            self.queue(PONG_LINE)
            return True
        return isinstance(frame, Pong)  # the answer to a PING we never send: nothing to do

    def _end(self, error: BaseException) -> None:
        """A thread waiting for an answer found the stream ended (or broken): the PUBs waiting fail
        ("connection-lost"), and the iterating thread is told."""
        reading = self._reading
        with reading.lock:
            if self.ended is None:
                self.ended = error
            lost = self._waiting.lost()
        _fail(lost)
        with reading.lock:
            reading.settled.notify_all()

    # --- publishing

    @property
    def publishes_waiting(self) -> int:
        with self._reading.lock:
            return len(self._waiting)

    def settle(self, timeout: float) -> None:
        """Waits (up to `timeout` seconds) until no PUB waits for its answer, or the stream has
        ended."""
        deadline = time.monotonic() + timeout
        while True:
            with self._reading.lock:
                future = self._waiting.oldest() if self.alive and self.ended is None else None
            remaining = deadline - time.monotonic()
            if future is None or remaining <= 0:
                return
            self.wait_for(future, remaining)

    # --- closing

    def shut(self) -> None:
        """Marks it closed (its messages are stale from now on), fails the PUBs still waiting
        ("connection-lost"), drops what is queued, closes the socket (once the thread reading it,
        if another, has stopped). Idempotent."""
        reading = self._reading
        with reading.lock:
            self.alive = False
            self._out.clear()
            lost = self._waiting.lost()
            reading.settled.notify_all()
        _fail(lost)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a thread waiting to read it
        except OSError:
            pass
        me = threading.get_ident()
        with reading.lock:
            # Not while another thread reads it (a done-callback on the reading thread itself may
            # close the handler: that thread finds the socket closed when it reads on).
            while self._reader is not None and self._reader != me:
                self._want_read += 1
                reading.settled.wait()
                self._want_read -= 1
            if self._closed:
                return
            self._closed = True
            reading.settled.notify_all()
        try:
            self.sock.close()
        except OSError:
            pass
        self._readable.close()
        self._writable.close()

    def _write_locked(self) -> None:
        out = self._out
        if not out:
            return
        if self.alive:
            try:
                self._send_all(out)
            except OSError:
                pass  # the connection is going; the reader finds out when it reads
        out.clear()

    def _send_all(self, data: bytearray) -> None:
        """Writes `data` whole, though the socket does not block: waits while it takes no more
        (jetfan stops reading a connection with as many publishes waiting as it allows, until
        answers come). Under the lock."""
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        if sent == len(data):
            return
        rest = memoryview(bytes(data[sent:]))  # a copy: `data` is cleared afterwards
        while rest:
            try:
                rest = rest[self.sock.send(rest) :]
            except BlockingIOError:
                self._writable.select()

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

    def publish(self, subject: str, headers: bytes, payload: bytes, tied_to: Optional[int], index: int) -> _Publishing:
        reading = self._reading
        with reading.lock:
            alive = self.alive and self.ended is None
            problem = cannot_send(alive, self.version, tied_to, self._unconfirmed, subject, self.path)
            if problem is not None:
                raise problem
            id_ = self._waiting.next_id()
            line = encode_pub(id_, subject, headers, payload, tied_to, index)
            future = _Publishing(self)
            self._waiting.add(id_, subject, future)
            # As a confirmation is: on the iterating thread, written when it next waits for input
            # (waiting for this answer is one), so that an ACK behind it goes in the same write.
            self._out += line
            if reading.writes_at_once():
                self._write_locked()
        return future


def _fail(lost: list[tuple[_Publishing, PublishError]]) -> None:
    for future, error in lost:
        future.set_exception(error)


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
        self._shutting = False
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
        """The next frame on a live connection (reconnecting as needed) that is the iterating
        thread's to handle; None once closing or ended. Raises JetfanError or ProtocolError."""
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
                # Confirmations go out before it waits; others write their own meanwhile.
                frame = conn.next_frame(self._selector)
            except ProtocolError as error:
                self._failure = error
                self._drop(str(error))
                raise
            except (OSError, EOFError) as error:
                self._drop(str(error))
                continue
            if frame is not None:
                return frame

    def _next_message(self) -> Optional[BlockingMessage]:
        while True:
            frame = self._next_frame()
            if frame is None:
                return None
            conn = self._conn
            assert conn is not None
            if type(frame) is MsgFrame:  # the common case first, by exact type: the cheapest test
                return conn.received(frame)
            if isinstance(frame, Err):
                self._failure = JetfanError(frame.reason, self.path)  # jetfan closes next
                self._drop(frame.reason)
                raise self._failure
            # PING, PONG and answers to PUBs are the connection's (next_frame); a second READY: nothing.

    def _claim(self, consumer: str) -> None:
        if self._consumer is not None:
            raise RuntimeError(f"this handler is already consumed by {self._consumer}")
        self._consumer = consumer
        self._reading.thread = threading.get_ident()

    def __iter__(self) -> "BlockingHandler":
        self._claim("a for loop")
        return self

    def __next__(self) -> BlockingMessage:
        message = self._next_message()
        if message is None:
            if self._closing:
                self._shut()
            raise StopIteration
        return message

    def process(self, fn: Callable[[Message[Any]], Any], *, concurrency: Optional[int] = None) -> None:
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
        work: queue.SimpleQueue[Optional[BlockingMessage]] = queue.SimpleQueue()
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

    def _call(self, fn: Callable[[Message[Any]], Any], message: BlockingMessage) -> None:
        try:
            fn(message)
        except Exception as error:
            settle(message, error, log, self.name)
        else:
            settle(message, None, log, self.name)

    # --- publishing

    def publish(self, subject: str, payload: Payload, *, headers: Optional[HeadersArg] = None) -> Published:
        """Publishes `payload` (bytes, or a str sent as UTF-8) to `subject` through jetfan, over this
        handler's connection (PROTOCOL.md, "Publishing"), and returns once JetStream has stored it:
        where (Published.stream, .seq). Any thread, the iterating one too (while it waits, it
        reads jetfan's answers itself, and keeps the messages it reads for the loop). Not tied to
        any delivery: from inside a handler, msg.publish() is the one that makes a redelivery's
        publish a duplicate. `headers`: a Headers or a mapping (name: value, or name: [values]); a
        Nats-Msg-Id in them makes the stream drop a copy within its duplicate window
        (Published.duplicate).

        Raises PublishError: jetfan's PUBERR (its `code`: "not-allowed" when jetfan's config gives
        this handler no such publish.subjects, "no-stream", "timeout", ...), "connection-lost" when
        the connection ends before the answer (it may or may not have been stored), and without
        sending, "not-connected" while the handler has no connection (reconnecting, or closed),
        "unsupported" on a connection of protocol version 1 or 2. ValueError or TypeError for
        arguments that cannot be sent."""
        raw_headers = encode_headers(headers)
        body = encode_payload(payload)
        with self._reading.lock:
            conn = self._conn
        if conn is None:
            raise refusal("not-connected", subject, self.path)
        return conn.publish(subject, raw_headers, body, None, 0).result()

    # --- closing

    def flush(self) -> None:
        """Writes the confirmations made on the iterating thread so far (they go out by themselves
        when it next waits for a message)."""
        conn = self._conn
        if conn is not None:
            conn.write()

    def close(self) -> None:
        """Stops handing out messages, writes the confirmations made so far, waits (up to the
        close_timeout option, in seconds) for the answers to the PUBs still waiting (tied
        publishes sent without waiting for their answers, say) and closes the connection; a PUB
        still unanswered then fails with "connection-lost". From another thread, the iterating
        thread returns at its next wait (close() waits for that up to close_timeout). Messages not
        confirmed are redelivered by jetfan. Idempotent."""
        if self._closing:
            return
        self._closing = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        with self._reading.lock:
            self._reading.settled.notify_all()  # the iterating thread may wait for another's read
        if threading.get_ident() == self._reading.thread or self._consumer is None:
            self._shut()
        else:  # the iterating thread shuts the connection once its callbacks are done
            self._shut_done.wait(self.options.close_timeout)

    def _shut(self) -> None:
        if self._shutting:
            return
        self._shutting = True
        self.flush()
        conn = self._conn
        if conn is not None:
            if conn.alive:
                conn.settle(self.options.close_timeout)
            conn.shut()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        self._shut_done.set()

    def __enter__(self) -> "BlockingHandler":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
