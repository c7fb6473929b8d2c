"""The options both clients take, defined once: jetfan.connect() and jetfan.BlockingHandler() are
given these fields as keyword arguments (or one Options), and each handler keeps its Options as
`handler.options`.

Every duration is in seconds, a float (as in nats.py and the asyncio standard library)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ._codec import VERSION, encode_hello

# Old keyword arguments, and what became of them: a clear TypeError rather than a bare "unexpected
# keyword argument".
_RENAMED = {
    "socket": "the socket path is `path=`",
    "log": "the clients report to the `logging` module (logger \"jetfan\"); configure that instead",
}

_DURATIONS = ("reconnect_delay", "max_reconnect_delay", "connect_timeout", "handshake_timeout", "close_timeout")


@dataclass(frozen=True)
class Options:
    """How a handler connects to jetfan and behaves. Durations are seconds (floats)."""

    path: str
    """Path of jetfan's Unix socket (`socket.path` in jetfan's config)."""
    handler: str
    """A handler name declared in jetfan's config; one word."""
    concurrency: int = 1
    """How many process() callbacks run at once (asyncio tasks, or threads for the blocking client),
    unless process() is given its own."""
    reconnect: bool = True
    """Reconnect when the connection ends (jetfan restarted or closed it); never after ERR. False:
    iteration (and process()) ends instead."""
    reconnect_delay: float = 0.1
    """Seconds before the first reconnect attempt; doubled after each failed one."""
    max_reconnect_delay: float = 5.0
    """Seconds: the cap of that doubling."""
    connect_timeout: float = 10.0
    """Seconds the first connect keeps trying while the socket is missing or refuses, before it
    raises ConnectionError."""
    handshake_timeout: float = 10.0
    """Seconds from connecting to jetfan's READY; a connection that takes longer is dropped (and
    counts as a failed attempt)."""
    close_timeout: float = 10.0
    """Seconds close() waits for the messages handed out to be finished."""
    protocol_version: int = VERSION
    """The highest protocol version to ask for (PROTOCOL.md, "Version negotiation"): 1 to 3. With
    the default, 3, jetfan 0.1.0 answers 2 (a NAK's reason is then left out), and a jetfan that
    speaks only version 1 is spoken to in version 1 (a second connection at once); 1 asks for
    version 1. `ready.version` says which one a connection speaks."""

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise ValueError(f"path is the path of jetfan's socket, not {self.path!r}")
        if not isinstance(self.handler, str):
            raise TypeError(f"handler is a name (str), not {self.handler!r}")
        encode_hello(self.handler)  # a name that cannot be sent is a ValueError now, not later
        check_concurrency(self.concurrency)
        if isinstance(self.protocol_version, bool) or not isinstance(self.protocol_version, int):
            raise TypeError(f"protocol_version is an int, not {self.protocol_version!r}")
        if not 1 <= self.protocol_version <= VERSION:
            raise ValueError(f"protocol_version is one this client speaks, 1 to {VERSION}, not {self.protocol_version}")
        for name in _DURATIONS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} is a duration in seconds (a finite float >= 0), not {value!r}")

    @classmethod
    def of(cls, options: Optional["Options"], fields: Mapping[str, Any]) -> "Options":
        """`options` with `fields` replaced, or Options(**fields) when there is none."""
        for old, new in _RENAMED.items():
            if old in fields:
                raise TypeError(f"unexpected keyword argument {old!r}: {new}")
        if options is None:
            return cls(**fields)
        if not isinstance(options, cls):
            raise TypeError(f"options is a jetfan.Options, not {type(options).__name__}")
        return dataclasses.replace(options, **fields) if fields else options


def check_concurrency(concurrency: object) -> int:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    return concurrency
