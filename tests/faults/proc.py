"""Child processes of the harness: started with stdout and stderr to a log file, killed with the
harness if it dies (PR_SET_PDEATHSIG), signalled and reaped by pid only."""

import ctypes
import os
import signal
import socket
import subprocess
import time

_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_PR_SET_PDEATHSIG = 1
_children = []


def die_with_parent():
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Proc:
    def __init__(self, argv, log_path, name=None, stdin=None):
        self.argv = [str(a) for a in argv]
        self.log_path = log_path
        self.name = name or os.path.basename(self.argv[0])
        self.log = open(log_path, "ab")
        self.popen = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=stdin,
                                      preexec_fn=die_with_parent)
        self.pid = self.popen.pid
        self.started = time.monotonic_ns()
        self.stopped_signal = False
        _children.append(self)

    def alive(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            if sig == signal.SIGSTOP:
                self.stopped_signal = True
            elif sig == signal.SIGCONT:
                self.stopped_signal = False
            os.kill(self.pid, sig)

    def kill(self):
        if self.alive():
            if self.stopped_signal:
                os.kill(self.pid, signal.SIGCONT)
            os.kill(self.pid, signal.SIGKILL)
        return self.wait(10)

    def wait(self, timeout):
        """Exit status (negative: killed by that signal), or None if still running after timeout."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self):
        self.kill()
        self.log.close()


def kill_all():
    for child in _children:
        try:
            child.kill()
        except Exception:
            pass
    _children.clear()


def free_port():
    """A port nothing listens on now, from the kernel (bind to 0 and release)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_text(path):
    try:
        with open(path, "r", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_until(condition, timeout, poll=0.02):
    """Polls condition until it is true (returns True) or timeout seconds pass (returns False)."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
