"""One blocking connection to jetfan, and the Link its messages confirm through. Confirmations are
thread-safe: they take the handler's lock, and a confirmation made on a thread other than the
iterating one (or while that thread waits for input) is written at once."""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Optional

from ._codec import FrameParser, Ready
from ._message import Message

if TYPE_CHECKING:
    from ._blocking import BlockingHandler


class Connection:
    """One socket, from HELLO to close; the Link its messages confirm through."""

    def __init__(self, sock: socket.socket, owner: "BlockingHandler") -> None:
        self.sock = sock
        self.owner = owner
        self.parser = FrameParser()
        self.alive = True
        self.ready: Optional[Ready] = None
        self.unconfirmed = 0
        self.out = bytearray()  # under owner._lock

    def confirm(self, message: Message, line: bytes) -> bool:
        owner = self.owner
        with owner._lock:
            if message._confirmed or not self.alive:
                return False
            message._confirmed = True
            self.unconfirmed -= 1
            self.out += line
            if owner._reader_waiting or threading.get_ident() != owner._reader:
                self.write_locked()
            owner._settled.notify_all()
        return True

    def wip(self, message: Message, line: bytes) -> bool:
        with self.owner._lock:
            if message._confirmed or not self.alive:
                return False
            self.out += line
            self.write_locked()
        return True

    def write_locked(self) -> None:
        if not self.out:
            return
        if self.alive:
            try:
                self.sock.sendall(self.out)
            except OSError:
                pass  # the connection is going; the reader finds out when it reads
        self.out.clear()
