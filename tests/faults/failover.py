"""The failover class: two jetfans, J1 and J2, on one durable with a `pinned_client` priority group
(docs/OPERATING.md, "Failover"), on a 3-node cluster with the stream and the consumer R3. Each
jetfan has its own handler socket, control socket, log and its own instances of the standard
handlers (O ordered by key, L with a retry budget and dead letters among them): the instances of a
handler with n instances per jetfan are numbered 0..n-1 on J1 and n..2n-1 on J2 (run.json,
"instance_side"). A steady publisher runs throughout. Each run takes the five faults below, in an
order the seed picks, each against the jetfan that is pinned then:

  kill        SIGKILL the pinned jetfan; once the other one delivers, start it again (the new standby)
  stop        SIGSTOP it for longer than priority_timeout (until the other one delivers, and at
              least priority_timeout + 1-2.5 s), then SIGCONT
  step-down   `jetfan step-down --control` on it
  leader      the consumer's leader steps down ($JS.API.CONSUMER.LEADER.STEPDOWN): the documented
              expectation is that the owner is pinned again, not a failover; what happened is
              measured and reported (a failover there is not a finding: it is at least once too)
  leader-full the same, while the owner is full: handler C (every key) is paused on it until it
              holds max_held (MAX_HELD, below MaxAckPending so that the server still takes pulls:
              about 14 s), so it has no pull of the ledger's waiting and learns of the new leader
              from a refused keep-alive. It must be pinned again (NOT RE-PINNED otherwise); then C
              is resumed

Before each fault the harness waits until exactly one jetfan says it is active and the other that it
stands by (STATUS JSON, polled every 0.1 s: "pin" events in history.jsonl) and marks a steady
window, in which the standby must deliver nothing (the checker's STANDBY DELIVERED). After each it
measures the time from the fault to the first delivery by the new owner (for `leader`: the first
delivery of a message published after the fault, by either, and whose it was), waits until
the roles are settled again (PIN NOT SETTLED otherwise) and until every handler has what was stored
before the fault (NOT CAUGHT UP otherwise). The checker judges the histories of both jetfans'
handlers together: nothing lost, order per key for O, dead letters of L, the ack rule, and two
copies of a message at once only where a failover explains them (checker.py).

Needs nats-server 2.12.12+, 2.14.3+ or 2.15+ ($JETFAN_NATS_SERVER, as every class): with an older one
the class is skipped with a `skipped:` line."""

import json
import os
import random
import signal
import socket
import subprocess
import threading
import time

import records
import scenarios
from mesh import LEDGER_BUCKET, Run, Settings, standard_handlers
from proc import Proc, read_text, wait_until
from servers import DURABLE, STREAM, nats_server_binary, server_version

GROUP = "faults"
PRIORITY_TIMEOUT_S = 3.0
ACK_WAIT_S = 5.0
# jetfan's max_held: below MaxAckPending (20,000), and above the restart hold's backlog (about 600
# msg/s of ordered keys for 8.7 s). $JETFAN_FAILOVER_MAX_HELD sets another: 8000 makes the new owner
# full during that hold (docs/RELIABILITY.md, the order finding a full restart hold made).
MAX_HELD = int(os.environ.get("JETFAN_FAILOVER_MAX_HELD", "14000"))
SIDES = ("J1", "J2")


def pins_well(version):
    """Whether a nats-server version has pinned_client groups without the known pin bugs (as
    tests/pinned_test.cpp and jetfan itself judge it)."""
    if version is None:
        return False
    major, minor, patch = version
    return (major, minor) >= (2, 15) or (major, minor) == (2, 14) and patch >= 3 or (major, minor) == (2, 12) and patch >= 12


def skip_reason():
    """None when the class can run; otherwise why it is skipped."""
    binary = nats_server_binary()
    version = server_version(binary)
    if pins_well(version):
        return None
    shown = ".".join(map(str, version)) if version else "unknown version"
    return (f"nats-server {shown} ({binary}) has no pinned_client groups, or pins with known bugs; set "
            f"JETFAN_NATS_SERVER to 2.12.12+, 2.14.3+ or 2.15+ (scripts/nats_servers.sh forky fetches one)")


def control_request(path, line, timeout=0.5):
    """One command on a jetfan control socket (daemon/CONTROL.md); its reply, or None."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(line.encode() + b"\n")
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None


class Side:
    """One of the two jetfans: its files, its process and how often it was started."""

    def __init__(self, name, workdir):
        self.name = name
        self.socket = os.path.join(workdir, f"jetfan-{name}.sock")
        self.control = os.path.join(workdir, f"jetfan-{name}.ctl")  # control.path's default
        self.log = os.path.join(workdir, f"jetfan-{name}.log")
        self.config = os.path.join(workdir, f"jetfan-{name}.yaml")
        self.proc = None
        self.gen = 0

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def answers(self):
        return self.alive() and not self.proc.stopped_signal


class FailoverRun(Run):
    def __init__(self, build, workdir, settings):
        handlers = standard_handlers()
        self.per_side = {}
        for h in handlers:
            self.per_side[h.name] = len(h.instances)
            h.instances = h.instances + [list(flags) for flags in h.instances]
        super().__init__(build, workdir, handlers, 3, settings)
        self.sides = {name: Side(name, workdir) for name in SIDES}
        self.event_lock = threading.Lock()
        self.pin = {name: None for name in SIDES}  # the latest STATUS JSON pin of each, with its time
        self.pollers = []
        self.poll_stop = threading.Event()
        self.priority_group = GROUP  # the auditor pulls with it

    def event(self, kind, **fields):
        with self.event_lock:
            return super().event(kind, **fields)

    def jetfan_log_paths(self):
        return [s.log for s in self.sides.values()]

    def side_of_instance(self, name, index):
        return SIDES[0] if index < self.per_side[name] else SIDES[1]

    def instance_side(self):
        return {f"{h.name}-{i}": self.side_of_instance(h.name, i) for h in self.handlers for i in range(len(h.instances))}

    # --- setup ---

    def start(self):
        s = self.settings
        self.servers.start()
        from servers import NatsTool
        self.tool = NatsTool(os.path.join(self.build, "tests/faults/faults-nats"), self.servers.urls,
                             os.path.join(self.dir, "faults-nats.log"))
        self.tool.create(3, s.ack_wait_s, s.max_ack_pending, consumer_extra=s.consumer_extra,
                         ledger_bucket=LEDGER_BUCKET if s.ledger else None)
        self.start_watcher()
        urls = [n.url for n in self.servers.nodes]
        for k, side in enumerate(self.sides.values()):
            # Each its own config, and each starts with another node (as two hosts would).
            self.socket, self._urls = side.socket, urls[k:] + urls[:k]
            self.write_config()
            os.replace(self.config_path, side.config)
        self.event("setup", servers=self.servers.urls, proxy=None)
        for side in self.sides.values():
            self.start_side(side.name)
            for h in self.handlers:
                for i in range(len(h.instances)):
                    if self.side_of_instance(h.name, i) == side.name:
                        self.start_instance(h.name, i)
        self.pollers = [threading.Thread(target=self._poll_loop, args=(name,), daemon=True) for name in SIDES]
        for p in self.pollers:
            p.start()

    def jetfan_urls(self):
        return self._urls

    def start_instance(self, name, index):
        self.socket = self.sides[self.side_of_instance(name, index)].socket
        super().start_instance(name, index)

    # --- the two jetfans ---

    def start_side(self, name, wait=True):
        side = self.sides[name]
        before = read_text(side.log).count("serving consumer")
        side.gen += 1
        with open(side.log, "a") as f:
            f.write(f"===== harness: jetfan {name} generation {side.gen} =====\n")
        side.proc = Proc([os.path.join(self.build, "daemon/jetfan"), "serve", "--config", side.config,
                          "--log-level", self.settings.log_level], side.log, name=f"jetfan-{name}")
        self.event("jetfan_start", side=name, gen=side.gen, pid=side.proc.pid)
        if wait and not wait_until(lambda: read_text(side.log).count("serving consumer") > before, 60):
            self.event("finding", what=f"jetfan {name} did not start serving within 60 s")
            return False
        return True

    def kill_side(self, name):
        side = self.sides[name]
        if not side.alive():
            self.event("jetfan_crash", side=name, gen=side.gen, status=side.proc.wait(0))
        status = side.proc.kill()
        self.jetfan_exits.append({"side": name, "gen": side.gen, "how": "SIGKILL", "status": status})
        self.event("jetfan_exit", side=name, gen=side.gen, how="SIGKILL", status=status)

    def term_all(self, run=None):
        """SIGTERM to both at once (a standby left running would be pinned and take what the other
        hands back); the worst exit status."""
        timeout = self.settings.drain_timeout_s + 15
        live = [s for s in self.sides.values() if s.alive()]
        for side in live:
            side.proc.signal(signal.SIGTERM)
            self.event("jetfan_sigterm", side=side.name, gen=side.gen)
        worst = 0
        for side in live:
            status = side.proc.wait(timeout)
            if status is None:
                self.event("finding", what=f"jetfan {side.name} did not exit within {timeout:.0f} s of SIGTERM; killed it")
                side.proc.kill()
            self.jetfan_exits.append({"side": side.name, "gen": side.gen, "how": "SIGTERM", "status": status})
            self.event("jetfan_exit", side=side.name, gen=side.gen, how="SIGTERM", status=status)
            worst = status if status != 0 else worst
        return worst

    def heal(self, run=None):
        for side in self.sides.values():
            if side.alive() and side.proc.stopped_signal:
                side.proc.signal(signal.SIGCONT)
            if not side.alive():
                if side.proc is not None and not any(e["side"] == side.name and e["gen"] == side.gen
                                                     for e in self.jetfan_exits):
                    self.event("jetfan_crash", side=side.name, gen=side.gen, status=side.proc.wait(0))
                self.start_side(side.name)

    # --- the pin, as each jetfan reports it ---

    def _poll_loop(self, name):
        """One per jetfan: STATUS JSON every 0.1 s (each may take a while: jetfan asks the server for
        the consumer's info first), a "pin" event whenever its role or counts changed."""
        side = self.sides[name]
        last, last_t = None, None
        while not self.poll_stop.is_set():
            if side.answers():
                gen = side.gen
                asked = time.monotonic_ns()
                reply = control_request(side.control, "STATUS JSON", timeout=5)
                try:
                    pin = json.loads(reply).get("pin") if reply else None
                except ValueError:
                    pin = None
                if isinstance(pin, dict):
                    state = (gen, pin.get("role"), pin.get("gained"), pin.get("lost"))
                    self.pin[name] = dict(pin, t=asked, gen=gen)
                    if state != last:
                        # It changed after the previous question to the same process: since.
                        since = last_t if last and last[0] == gen else None
                        self.event("pin", side=name, gen=gen, role=pin.get("role"), gained=pin.get("gained"),
                                   lost=pin.get("lost"), keepalives=pin.get("keepalives"), since=since,
                                   answered_ms=(time.monotonic_ns() - asked) // 1_000_000)
                        last = state
                    last_t = asked
            self.poll_stop.wait(0.1)

    def roles(self, after_ns):
        """{side: role} as reported after `after_ns`; None for a side that has not answered since."""
        return {n: (p["role"] if p and p["t"] > after_ns else None) for n, p in self.pin.items()}

    def wait_roles(self, timeout):
        """Waits until one jetfan says it is active and the other that it stands by, both running.
        Returns the active one's name, or None."""
        out = []

        def settled():
            start = time.monotonic_ns()
            if not wait_until(lambda: all(p and p["t"] > start for p in self.pin.values()), 10, poll=0.05):
                return False
            r = self.roles(start)
            active = [n for n, role in r.items() if role == "active"]
            if len(active) == 1 and all(role == "standby" for n, role in r.items() if n != active[0]):
                out.append(active[0])
                return True
            return False
        if wait_until(settled, timeout, poll=0.1):
            return out[-1]
        return None

    # --- teardown ---

    def close(self):
        self.poll_stop.set()
        for p in self.pollers:
            p.join(10)
        for side in self.sides.values():
            if side.proc:
                side.proc.close()
        super().close()


class Deliveries:
    """What the handler instances of each jetfan receive, as it is recorded (records.Tail)."""

    def __init__(self, run):
        self.run = run
        self.tails = []
        for h in run.handlers:
            for i in range(len(h.instances)):
                tail = records.Tail(run.record_path(h.name, i, run.inst_gen[(h.name, i)]))
                self.tails.append((run.side_of_instance(h.name, i), tail))
        self.max_seq = 0

    def poll(self):
        out = []
        for side, tail in self.tails:
            for r in tail.poll():
                if r.kind == records.DELIVERED:
                    out.append((side, r))
        for _, r in out:
            self.max_seq = max(self.max_seq, r.seq)
        return out

    def wait_first(self, condition, timeout):
        """The first (side, record) delivered from now on for which condition(side, record) holds,
        or None after timeout. Earlier records are read and passed over."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for side, r in self.poll():
                if condition(side, r):
                    return side, r
            time.sleep(0.005)
        return None


def other(name):
    return SIDES[1] if name == SIDES[0] else SIDES[0]


# --- the faults, each against the pinned jetfan `owner` ---

def fault_kill(run, rng, owner, seen, begin):
    run.kill_side(owner)
    got = seen.wait_first(lambda side, r: side == other(owner) and r.t > begin, 30)
    end = time.monotonic_ns()
    run.start_side(owner)  # the new standby
    return got, {"name": "failover: SIGKILL the pinned jetfan", "detail": f"{owner}; restarted", "end": end}


def fault_stop(run, rng, owner, seen, begin):
    seconds = PRIORITY_TIMEOUT_S + rng.uniform(1.0, 2.5)
    side = run.sides[owner]
    side.proc.signal(signal.SIGSTOP)
    got = seen.wait_first(lambda s, r: s == other(owner) and r.t > begin, 30)
    time.sleep(max(0.0, begin / 1e9 + seconds - time.monotonic()))
    side.proc.signal(signal.SIGCONT)
    stopped = (time.monotonic_ns() - begin) / 1e9
    return got, {"name": "failover: SIGSTOP the pinned jetfan", "detail": f"{owner} for {stopped:.1f} s",
                 "stops_jetfan": True, "stopped_s": stopped}


def fault_step_down(run, rng, owner, seen, begin):
    out = subprocess.run([os.path.join(run.build, "daemon/jetfan"), "step-down", "--control", run.sides[owner].control],
                         capture_output=True, text=True, timeout=30)
    said = (out.stdout + out.stderr).strip()
    if out.returncode != 0 or "stepped down" not in said:
        run.event("finding", what=f"jetfan step-down on the pinned {owner}: exit {out.returncode}: {said[:200]}")
    got = seen.wait_first(lambda side, r: side == other(owner) and r.t > begin, 30)
    return got, {"name": "failover: jetfan step-down", "detail": f"{owner}: {said[:120]}"}


def step_down_leader(run):
    """Asks the consumer's leader to step down; returns the leader before."""
    before = ((run.tool.consumer_info() or {}).get("cluster") or {}).get("leader")
    try:
        run.tool.request(f"$JS.API.CONSUMER.LEADER.STEPDOWN.{STREAM}.{DURABLE}", "", 5000)
    except RuntimeError as e:
        run.event("finding", what=f"consumer leader step-down refused: {e}")
    return before


def new_leader(run, before):
    def leader():
        return ((run.tool.consumer_info(timeout_ms=500) or {}).get("cluster") or {}).get("leader")
    wait_until(lambda: leader() not in (None, before), 10, poll=0.1)
    return leader()


def fault_leader(run, rng, owner, seen, begin):
    # The first delivery of a message the publisher had not yet stored when the leader stepped down.
    newest = max((r.id for r in records.read(run.publisher_record) if r.kind == records.STORED and r.t < begin), default=0)
    before = step_down_leader(run)
    got = seen.wait_first(lambda side, r: r.id > newest and r.t > begin, 30)
    end = time.monotonic_ns()
    after = new_leader(run, before)
    return got, {"name": "failover: consumer leader step-down", "detail": f"{before} -> {after}; owner {owner}",
                 "end": end}


def full(run, name):
    reply = control_request(run.sides[name].control, "STATUS JSON", timeout=5)
    try:
        messages = (json.loads(reply).get("messages") or {}) if reply else {}
    except ValueError:
        return False
    return messages.get("max_held", 0) > 0 and messages.get("held", 0) >= messages["max_held"]


def fault_leader_full(run, rng, owner, seen, begin):
    jetfan = os.path.join(run.build, "daemon/jetfan")
    control = run.sides[owner].control

    def pause(verb):
        out = subprocess.run([jetfan, verb, "--handler", "C", "--control", control], capture_output=True, text=True,
                             timeout=30)
        if out.returncode != 0:
            run.event("finding", what=f"jetfan {verb} --handler C on {owner}: exit {out.returncode}: "
                                      f"{(out.stdout + out.stderr).strip()[:200]}")
    pause("pause")
    filled = wait_until(lambda: full(run, owner), 60, poll=0.2)
    if not filled:
        run.event("finding", what=f"leader-full: {owner} did not fill to max_held within 60 s")
    before = step_down_leader(run)
    stepped = time.monotonic_ns()
    # Whether the pin stayed: the other must not become active while the owner is full.
    moved = wait_until(lambda: (run.pin[other(owner)] or {}).get("role") == "active", PRIORITY_TIMEOUT_S + 3, poll=0.1)
    after = new_leader(run, before)
    if moved:
        run.event("finding", what=f"NOT RE-PINNED: after a consumer leader step-down ({before} -> {after}) with "
                                  f"{owner} full, {other(owner)} became the pinned one")
    pause("resume")
    return None, {"name": "failover: consumer leader step-down while the owner is full",
                  "detail": f"{before} -> {after}; owner {owner}, full: {filled}", "re_pinned": not moved,
                  "full_after_s": round((stepped - begin) / 1e9, 2)}


FAULTS = {"kill": fault_kill, "stop": fault_stop, "step-down": fault_step_down, "leader": fault_leader,
          "leader-full": fault_leader_full}


def caught_up(run, stored_before_ns):
    """Every non-ghost handler has received every message it wants that the publisher had stored
    before `stored_before_ns`."""
    stored = {r.id for r in records.read(run.publisher_record)
              if r.kind == records.STORED and r.t < stored_before_ns}
    for h in run.handlers:
        if h.ghost:
            continue
        got = set()
        for path in run.handler_record_files(h.name):
            got |= {r.id for r in records.read(path) if r.kind == records.DELIVERED}
        if any(h.wants(i) and i not in got for i in stored):
            return False
    return True


def run_failover(seed, build, rate, settle_timeout=90):
    """One run of the class. Returns (result, workdir), or (None, why) when skipped."""
    why = skip_reason()
    if why:
        return None, why
    workdir = scenarios.new_workdir("failover")
    rng = random.Random(seed)
    settings = Settings(rate=rate, ack_wait_s=ACK_WAIT_S, max_held=MAX_HELD, consumer_extra={
        "priority_groups": [GROUP], "priority_policy": "pinned_client",
        "priority_timeout": int(PRIORITY_TIMEOUT_S * 1e9)})
    run = FailoverRun(build, workdir, settings)
    order = list(FAULTS)
    rng.shuffle(order)
    info = {"name": "failover", "seed": seed, "duration_s": 0, "failover": [], "order": order,
            "priority_timeout_s": PRIORITY_TIMEOUT_S}
    try:
        run.start()
        run.start_publisher()
        run.start_monitor()
        info["publish_start"] = time.monotonic_ns()
        seen = Deliveries(run)
        for kind in order:
            owner = run.wait_roles(30)
            if owner is None:
                run.event("finding", what=f"PIN NOT SETTLED before {kind}: roles {run.roles(0)}")
                break
            # A steady window: the owner delivers, the standby must not.
            steady = time.monotonic_ns()
            if not seen.wait_first(lambda side, r: r.t > steady, 10):
                run.event("finding", what=f"nothing delivered within 10 s before {kind} (owner {owner})")
            time.sleep(rng.uniform(1.0, 2.5))
            begin = time.monotonic_ns()
            run.event("steady", begin=steady, end=begin, owner=owner)
            got, did = FAULTS[kind](run, rng, owner, seen, begin)
            end = did.pop("end", time.monotonic_ns())
            run.event("fault", name=did.pop("name"), detail=did.pop("detail"), begin=begin, end=end,
                      stops_jetfan=did.pop("stops_jetfan", False), scenario=kind, victim=owner)
            new_owner = run.wait_roles(30)
            measured = {"scenario": kind, "owner_before": owner, "owner_after": new_owner,
                        "first_delivery_by": got[0] if got else None,
                        "first_delivery_s": (got[1].t - begin) / 1e9 if got else None}
            measured.update(did)
            leaderish = kind in ("leader", "leader-full")
            if not leaderish and not got:
                run.event("finding", what=f"NO TAKEOVER: {kind}: {other(owner)} delivered nothing within 30 s")
            if leaderish:
                measured["failed_over"] = new_owner is not None and new_owner != owner
            if new_owner is None:
                run.event("finding", what=f"PIN NOT SETTLED after {kind}: within 30 s no one jetfan active and the "
                                          f"other standing by: {run.roles(0)}")
            elif not leaderish and new_owner == owner:
                run.event("finding", what=f"NO FAILOVER: after {kind} of {owner} it is still the active one")
            t0 = time.monotonic()
            if not wait_until(lambda: caught_up(run, begin), 2 * ACK_WAIT_S + 20, poll=0.5):
                run.event("finding", what=f"NOT CAUGHT UP: after {kind}, within {2 * ACK_WAIT_S + 20:.0f} s not every "
                                          f"handler had what was stored before the fault")
            measured["caught_up_s"] = round(time.monotonic() - t0, 2)
            info["failover"].append(measured)
            run.event("failover_measured", **measured)
        run.stop_publisher()
        run.stop_monitor()
        scenarios.finish(run, info, settle_timeout, heal=run.heal, stop=run.term_all)
    except Exception as e:  # the harness itself failed: keep everything and say so
        run.event("finding", what=f"harness error: {type(e).__name__}: {e}")
    finally:
        info["instance_side"] = run.instance_side()
        info["pin_final"] = {n: {k: v for k, v in (p or {}).items() if k != "t"} for n, p in run.pin.items()}
        run.close()
        scenarios.write_info(run, info)
    import checker
    return checker.check(workdir), workdir
