"""Test support: a whole mesh for one test, made of real parts (as tests/support/mesh.hpp makes it
for the C++ tests): a temp dir; a real nats-server with JetStream on a free port; stream EVENTS on
events.> and durable pull consumer node1_builder, made by the demo controller as a controller
would (and, for publishing handlers, stream OUT on out.>: stream()); the real jetfan. Binaries come from the build directory $JETFAN_BUILD_DIR (default: build/
at the top of the repository)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("JETFAN_BUILD_DIR", ROOT / "build")).resolve()
JETFAN = BUILD / "daemon" / "jetfan"
CONTROLLER = BUILD / "examples" / "jetfan-demo-controller"

BUILDER = '  - name: builder\n    patterns: ["#"]\n'
# A builder that may publish to out.> (stream OUT, made by Mesh.stream()) and nowhere.* (which no
# stream captures).
PUBLISHER = BUILDER + '    publish:\n      subjects: ["out.>", "nowhere.*"]\n'
FAST_RETRY = "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n  drain_timeout: 200ms\n"


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Polls `condition` every few milliseconds until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


class Mesh:
    def __init__(self) -> None:
        for binary in (JETFAN, CONTROLLER):
            if not binary.exists():
                raise FileNotFoundError(f"{binary} is missing: build the tree first (scripts/build.sh)")
        self.dir = Path(tempfile.mkdtemp(prefix="jetfan-pytest."))
        self.socket = str(self.dir / "jetfan.sock")
        self._procs: list[subprocess.Popen[bytes]] = []
        self.jetfan: Optional[subprocess.Popen[bytes]] = None
        log = self.dir / "nats.log"
        binary = os.environ.get("JETFAN_NATS_SERVER") or "nats-server"  # scripts/compat.sh sets it
        server = self._start([binary, "-js", "-sd", str(self.dir / "jetstream"), "-a", "127.0.0.1", "-p", "-1"], log)
        pattern = re.compile(r"Listening for client connections on 127\.0\.0\.1:(\d+)")
        if not wait_until(lambda: pattern.search(log.read_text(errors="replace")) is not None):
            raise RuntimeError(f"nats-server did not start: {log.read_text()}")
        match = pattern.search(log.read_text(errors="replace"))
        assert match and server
        self.url = f"nats://127.0.0.1:{match.group(1)}"
        self.control("setup", "EVENTS", "events.>", "node1_builder")

    def _start(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if not os.environ.get("JETFAN_KEEP_TEST_DIRS"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Mesh":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def control(self, *args: str) -> str:
        done = subprocess.run([str(CONTROLLER), self.url, *args], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"jetfan-demo-controller {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    def publish(self, key: str, payload: str = "x", headers: Optional[dict[str, str]] = None) -> int:
        out = self.control("publish", f"events.{key}", payload, *(f"{k}:{v}" for k, v in (headers or {}).items()))
        match = re.search(r"stream seq (\d+)", out)
        assert match, out
        return int(match.group(1))

    def stream(self, name: str = "OUT", subjects: str = "out.>") -> None:
        """Makes a stream for handlers to publish to (no consumer)."""
        self.control("stream", name, subjects)

    def messages(self, stream: str = "OUT") -> int:
        """How many messages `stream` holds."""
        return int(self.control("messages", stream).strip())

    def state(self) -> dict[str, int]:
        return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", self.control("state", "EVENTS", "node1_builder"))}

    def settled(self) -> bool:
        """Waits (20 s at most) until the consumer has nothing pending or unacked."""
        return wait_until(lambda: (s := self.state())["num_pending"] == 0 and s["num_ack_pending"] == 0)

    def config(self, handlers: str = BUILDER, extra: str = "") -> str:
        return (
            f'nats:\n  servers: ["{self.url}"]\n  retry_max: 500ms\n'
            "consumer:\n  stream: EVENTS\n  durable: node1_builder\n"
            'key:\n  strip_prefix: "events."\n'
            f"socket:\n  path: {self.socket}\n"
            f"handlers:\n{handlers}{extra}"
        )

    def start_jetfan(self, config: Optional[str] = None) -> None:
        path = self.dir / "jetfan.yaml"
        path.write_text(config or self.config())
        log = self.dir / "jetfan.log"
        before = self.log().count("serving consumer")
        self.jetfan = self._start([str(JETFAN), "serve", "--config", str(path), "--log-level", "debug"], log)
        if not wait_until(lambda: self.log().count("serving consumer") > before):
            raise RuntimeError(f"jetfan did not start serving:\n{self.log()}")

    def stop_jetfan(self) -> None:
        """SIGTERM, and waits for it to exit."""
        assert self.jetfan is not None
        self.jetfan.send_signal(signal.SIGTERM)
        self.jetfan.wait(20)

    def log(self) -> str:
        path = self.dir / "jetfan.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_log(self, part: str, count: int = 1) -> bool:
        return wait_until(lambda: self.log().count(part) >= count)
