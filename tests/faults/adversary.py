"""The adversary class's faults (issue 34): a hostile local peer tries each of jetfan's edges while
the workload runs, and the checker then says whether anything owed to a handler was lost. Each
fault also checks its own edge held, and records a finding when it did not:

  metrics_flood     hundreds of connections to the metrics port, some with half a request: past
                    metrics.max_connections one is answered 503 at once, and /metrics serves after
  control_flood     forty idle control connections: the operator's `jetfan status` still gets in
  garbage_peer      garbage, an overlong line, a HELLO of version 0, a forged name, and confirmations
                    before any HELLO on the handler socket: each such peer gets ERR and is closed
  forged_letter     a dead letter published by hand on handler L's dead-letter subject: `jetfan
                    redrive --seq` refuses it (NOT REDRIVABLE, exit 1) and it stays in the stream;
                    the fault then deletes it, so that the checker's audit of the stream sees only
                    jetfan's own
  foreign_control   (root) a uid on no allow list, and one on control.allow_read, against the
                    control socket: the first may do nothing, the second read but not pause
  path_swap         (root) another uid tries to move jetfan's socket aside and put its own there

SETTINGS is what the class's runs need in jetfan's config (scenarios.py passes it to Settings)."""

import json
import os
import socket
import subprocess
import time

from servers import DEAD_LETTER_STREAM

FOREIGN_UID = 4242   # on no allow list
READER_UID = 4243    # on control.allow_read
CONTROL_EXTRA = ["control:", '  mode: "0666"', f"  allow_read: {{uids: [{READER_UID}]}}"]


def _finding(run, what):
    run.event("finding", what=f"adversary: {what}")


def _jetfan(run, args, runner=()):
    argv = list(runner) + [os.path.join(run.build, "daemon/jetfan")] + args + ["--control", _control_path(run)]
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    return done.returncode, done.stdout.decode(errors="replace")


def _control_path(run):
    return run.socket[:-len(".sock")] + ".ctl"


def _as_uid(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


def _is_root():
    return os.geteuid() == 0


def _read_to_close(sock, timeout):
    sock.settimeout(timeout)
    out = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return out, True
            out += chunk
    except (socket.timeout, ConnectionResetError):
        return out, False


def metrics_flood(run, rng):
    port = run.settings.metrics_port
    count = rng.randint(100, 400)
    flood = []
    try:
        for i in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i % 3 == 0 and i < count - 1:  # the last stays silent: its answer is read below
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end of it
            flood.append(s)
        last, closed = _read_to_close(flood[-1], 10)
        if not (closed and last.startswith(b"HTTP/1.1 503")):
            _finding(run, f"connection {count} to the metrics port was not answered 503 and closed: {last[:60]!r}")
        time.sleep(rng.uniform(0.2, 1.5))
    finally:
        for s in flood:
            s.close()
    served = False
    deadline = time.monotonic() + 15
    while not served and time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                served = _read_to_close(s, 5)[0].startswith(b"HTTP/1.1 200")
        except OSError:
            pass
        if not served:
            time.sleep(0.1)
    if not served:
        _finding(run, "the metrics port did not serve /live again after a flood")
    return {"name": "adversary: metrics flood", "detail": f"{count} connections"}


def control_flood(run, rng):
    flood = []
    try:
        for _ in range(40):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(_control_path(run))
            flood.append(s)
        code, said = _jetfan(run, ["status"])
        if "ERR busy" in said or code not in (0, 1, 75):
            _finding(run, f"jetfan status during a control flood: exit {code}: {said[:200]!r}")
    except OSError as e:
        return {"name": "adversary: control flood", "detail": f"the control socket was not there: {e}"}
    finally:
        for s in flood:
            s.close()
    return {"name": "adversary: control flood", "detail": "40 idle control connections"}


GARBAGE = [
    b"\x00\xff\x1b[2J\r\n",
    b"HELLO C 0\r\n",
    b"ACK 1\r\nACK 2\r\n",
    b"HELLO " + b"x" * 20000 + b" 1\r\n",
    b"MSG 1 a.x 1 1 0 0 0 1 2 3\r\n",
    b"HELLO C\x1b]0;owned\x07 1\r\n",
]


def garbage_peer(run, rng):
    what = rng.choice(GARBAGE)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(run.socket)
            s.sendall(what)
        except OSError as e:  # jetfan restarting (another class's fault), or it closed at once
            return {"name": "adversary: garbage peer", "detail": f"not sent: {e}"}
        said, closed = _read_to_close(s, 10)
        if not closed or not said.startswith(b"ERR"):
            _finding(run, f"a peer that sent {what[:40]!r} was not told ERR and closed: {said[:80]!r}")
    return {"name": "adversary: garbage peer", "detail": repr(what[:40])}


FORGED_SUBJECTS = [
    "events.payroll.secret",           # a key not among L's patterns
    "events.b.x 4242 1 0 0 0 1 91 126",  # fields of its own on the MSG line
    "events.b." + "x" * 20000,         # a line past the protocol's limit
    "events.b.x\rMSG 5 f.x",           # a bare CR
]


def forged_letter(run, rng):
    subject = rng.choice(FORGED_SUBJECTS)
    headers = {"Jetfan-Handler": "L", "Jetfan-Reason": "forged", "Jetfan-Attempts": "3", "Jetfan-Subject": subject,
               "Jetfan-Stream": "EVENTS", "Jetfan-Sequence": "1", "Jetfan-Consumer": "x", "Jetfan-Deliveries": "3"}
    try:
        stored = run.tool.request("dlq.faults.L", "forged-by-hand", headers=headers)
    except RuntimeError as e:
        return {"name": "adversary: forged dead letter", "detail": f"not published: {e}"}
    seq = stored["seq"]
    try:
        code, said = _jetfan(run, ["redrive", "--handler", "L", "--seq", str(seq)])
        if code != 1 or "NOT REDRIVABLE" not in said.upper():
            _finding(run, f"a forged dead letter (seq {seq}) was not refused by redrive: exit {code}: {said[:300]!r}")
    finally:
        run.tool.request(f"$JS.API.STREAM.MSG.DELETE.{DEAD_LETTER_STREAM}", json.dumps({"seq": seq}))
    return {"name": "adversary: forged dead letter", "detail": f"seq {seq}: Jetfan-Subject {subject[:40]!r}"}


def foreign_control(run, rng):
    if not _is_root():
        return {"name": "adversary: foreign control", "detail": "skipped: running as another uid needs root"}
    code, said = _jetfan(run, ["status"], _as_uid(FOREIGN_UID))
    if code == 0 or "not allowed" not in said:
        _finding(run, f"uid {FOREIGN_UID} (on no allow list) got status: exit {code}: {said[:200]!r}")
    code, said = _jetfan(run, ["pause", "--handler", "C"], _as_uid(READER_UID))
    if code == 0 or "may only read" not in said:
        _finding(run, f"uid {READER_UID} (allow_read only) could pause: exit {code}: {said[:200]!r}")
    code, said = _jetfan(run, ["status"], _as_uid(READER_UID))
    if "not allowed" in said:
        _finding(run, f"uid {READER_UID} (on allow_read) was refused status: {said[:200]!r}")
    return {"name": "adversary: foreign control", "detail": f"uids {FOREIGN_UID} and {READER_UID}"}


SWAP = """
import os, socket, sys
path = sys.argv[1]
for step in (lambda: os.rename(path, path + ".moved"), lambda: os.unlink(path),
             lambda: socket.socket(socket.AF_UNIX).bind(path + ".theirs")):
    try:
        step()
        print("DONE", flush=True)
    except OSError as e:
        print("REFUSED", e.errno, flush=True)
"""


def path_swap(run, rng):
    if not _is_root():
        return {"name": "adversary: path swap", "detail": "skipped: running as another uid needs root"}
    done = subprocess.run(_as_uid(FOREIGN_UID) + ["python3", "-c", SWAP, run.socket], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=30)
    said = done.stdout.decode(errors="replace")
    if "DONE" in said or said.count("REFUSED") != 3:
        _finding(run, f"uid {FOREIGN_UID} could touch jetfan's socket or its directory: {said!r}")
    return {"name": "adversary: path swap", "detail": said.replace("\n", "; ")}


def open_up(run, rng):
    """The first fault: the run's directory made reachable by other users (0711, as /run is), so
    that the foreign uids meet jetfan's own checks and not only the directory's mode."""
    os.chmod(run.dir, 0o711)
    return foreign_control(run, rng)


FAULTS = [metrics_flood, control_flood, garbage_peer, forged_letter, foreign_control, path_swap]
