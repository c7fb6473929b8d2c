"""Fault classes and the run driver: set up a Run, publish at a steady rate, inject the class's
faults at random moments (a seeded RNG decides which and when), heal everything, wait for the
consumer to settle, stop jetfan with SIGTERM, audit what the server still holds, and check."""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time

import adversary
import checker
import faults_lib as F
import records
from mesh import KEYS, Run, Settings, key_of, payload_of, standard_handlers
from proc import die_with_parent, free_port, read_text, wait_until
from servers import DEAD_LETTER_STREAM, DURABLE, FOLLOW_UP_STREAM, STREAM


class Scenario:
    def __init__(self, name, faults, cluster_size=1, first=None, reconnect_loop=False, ghost_instance=False,
                 gap=(1.0, 4.0), doc="", runner=None, settings=None):
        self.name = name
        self.settings = settings  # () -> dict of Settings for each run, or None
        self.runner = runner  # a class with a driver of its own: (seed, build, rate) -> (result, workdir) or (None, why skipped)
        self.faults = faults
        self.cluster_size = cluster_size
        self.first = first
        self.reconnect_loop = reconnect_loop
        self.ghost_instance = ghost_instance
        self.gap = gap
        self.doc = doc

    def handlers(self):
        return standard_handlers(self.reconnect_loop, self.ghost_instance)


CLASSES = {
    "jetfan-kill": Scenario("jetfan-kill", [F.jetfan_kill, F.jetfan_kill_after_confirm, F.jetfan_kill_in_ack_window,
                                            F.jetfan_kill_during_drain],
                            doc="jetfan SIGKILL and restart: at random, right after a message's last recipient "
                                "confirmed, with its +ACKs held and dropped (the ack window), and while draining"),
    "jetfan-stop": Scenario("jetfan-stop", [F.jetfan_stop], gap=(1.0, 3.0),
                            doc="jetfan SIGSTOP for longer than AckWait, then SIGCONT"),
    "handler": Scenario("handler", [F.handler_kill, F.handler_stop], first=F.ghost_gone, reconnect_loop=True,
                        ghost_instance=True,
                        doc="handler SIGKILL and SIGSTOP/SIGCONT, one instance reconnecting every 37 deliveries, "
                            "and one handler gone for good"),
    "server": Scenario("server", [F.server_kill], gap=(2.0, 5.0),
                       doc="nats-server SIGKILL and restart on the same store"),
    "cluster": Scenario("cluster", [F.kill_consumer_leader, F.kill_stream_leader, F.kill_two_nodes], cluster_size=3,
                        gap=(2.0, 5.0),
                        doc="3-node cluster, stream and consumer R3: kill the consumer leader, the stream leader, "
                            "two nodes at once; restart them"),
    "network": Scenario("network", [F.net_stall, F.net_stall_up, F.net_cut, F.net_slow],
                        doc="the connection between jetfan and nats-server through a proxy: stall (up to 5 s, the "
                            "idle heartbeat is 1 s), stall one way, cut, slow"),
    "sigterm": Scenario("sigterm", [F.jetfan_sigterm, F.sigterm_during, F.jetfan_kill, F.handler_kill, F.net_stall,
                                    F.server_kill, F.jetfan_stop],
                        reconnect_loop=True,
                        doc="SIGTERM of jetfan, alone and in the middle of a network stall, a stopped handler or a "
                            "server that is down; mixed with the other single-node faults"),
    "adversary": Scenario("adversary", adversary.FAULTS, first=adversary.open_up, gap=(0.5, 2.0),
                          settings=lambda: {"metrics_port": free_port(), "control_extra": adversary.CONTROL_EXTRA},
                          doc="a hostile local peer at jetfan's edges: metrics-port and control floods, garbage on "
                              "the handler socket, forged dead letters redriven, control and path swaps by other "
                              "uids (those two as root)"),
    "failover": Scenario("failover", [], cluster_size=3, runner=lambda seed, build, rate: _failover().run_failover(
                             seed, build, rate),
                         doc="two jetfans on a pinned_client durable, 3-node cluster: SIGKILL, SIGSTOP and jetfan "
                             "step-down of the pinned one, consumer leader step-down; the time to the new owner's "
                             "first delivery (nats-server 2.12.12+, 2.14.3+, 2.15+; skipped otherwise)"),
}


def _failover():
    import failover  # it builds on this module
    return failover


def heal_all(run):
    if run.proxy:
        run.proxy.heal()
    for node in run.servers.nodes:
        if not node.alive():
            node.start()
            run.event("server_start", node=node.name)
    if run.jetfan and run.jetfan.stopped_signal:
        run.jetfan.signal(signal.SIGCONT)
    if not run.jetfan_alive():
        if run.jetfan and (not run.jetfan_exits or run.jetfan_exits[-1]["gen"] != run.jetfan_gen):
            run.event("jetfan_crash", gen=run.jetfan_gen, status=run.jetfan.wait(0))
        run.start_jetfan()
    for key, p in list(run.instances.items()):
        spec = next(h for h in run.handlers if h.name == key[0])
        if p.stopped_signal:
            p.signal(signal.SIGCONT)
        if not p.alive() and not spec.ghost:
            run.start_instance(*key)


DEAD_LETTER_STORED = re.compile(r'handler "([^"]+)": stream seq (\d+) dead-lettered \(')


def dead_lettered_seqs(log_text):
    """{handler: stream seqs} jetfan logged as dead-lettered and stored, from its log."""
    out = {}
    for handler, seq in DEAD_LETTER_STORED.findall(log_text):
        out.setdefault(handler, set()).add(int(seq))
    return out


def expectations(run, want_ids=False):
    """(every non-ghost handler has all it should, the ids some handler never confirms, as a count
    or, with want_ids, as {id: stream seq}), from the records so far, with the checker's notion of
    what is in the stream."""
    pub = records.read(run.publisher_record)
    attempted = {r.id for r in pub if r.kind == records.ATTEMPT}
    acked = {r.id: r.seq for r in pub if r.kind == records.STORED}
    got, confirmed, seen_seq = {}, {}, {}
    for h in run.handlers:
        got[h.name], confirmed[h.name] = set(), set()
        for path in run.handler_record_files(h.name):
            for r in records.read(path):
                if r.kind == records.DELIVERED:
                    got[h.name].add(r.id)
                    seen_seq[r.seq] = r.id
                elif r.kind == records.ACKED:
                    confirmed[h.name].add(r.id)
    stored, _ = checker.derive_stored(attempted, acked, seen_seq)
    # A handler with dead letters is done with a message once it confirmed it or jetfan stored its
    # dead letter: one it failed goes back to the server and comes again, and the server's counts
    # cannot tell it from one a ghost never confirms.
    logs = run.jetfan_log_paths() if hasattr(run, "jetfan_log_paths") else [run.jetfan_log]
    dead_lettered = {}
    if any(h.dead_letter for h in run.handlers):
        for path in logs:
            for handler, seqs in dead_lettered_seqs(read_text(path)).items():
                dead_lettered.setdefault(handler, set()).update(seqs)
    complete = True
    unconfirmed = set()
    for h in run.handlers:
        wants = {i for i in stored if h.wants(i)}
        if h.ghost:
            unconfirmed |= wants - confirmed[h.name]
        else:
            complete = complete and wants <= got[h.name]
            if h.dead_letter:
                done = confirmed[h.name] | {seen_seq[s] for s in dead_lettered.get(h.name, ()) if s in seen_seq}
                complete = complete and wants <= done
            if not h.dead_letter:  # with a dead letter, jetfan settles its poison too
                unconfirmed |= {i for i in wants if h.poisoned(i)}
    if not want_ids:
        return complete, len(unconfirmed)
    seq_of = dict(acked)
    seq_of.update({i: seq for seq, i in seen_seq.items()})
    return complete, {i: seq_of.get(i) for i in unconfirmed}


def wait_settled(run, timeout):
    """Waits until every handler has what it should and the server agrees: nothing pending, and
    exactly the never-confirmed messages awaiting an ack. True if that happened within timeout."""
    deadline = time.monotonic() + timeout
    streak = 0
    complete, unconfirmed, state = False, None, None
    while time.monotonic() < deadline:
        complete, unconfirmed = expectations(run)
        state = run.consumer_state()
        ok = complete and bool(state) and state["num_pending"] == 0 and state["num_ack_pending"] == unconfirmed
        streak = streak + 1 if ok else 0
        if streak >= 2:
            return True
        time.sleep(0.5)
    run.event("not_settled", complete=complete, unconfirmed=unconfirmed, state=state)
    return False


def final_consumer_state(run, settled, timeout=10):
    """The consumer's state once settled, as the checker judges it. A node restarted just before can
    answer for a moment with its own stale view (num_pending from before it died; seen in the
    leader-resume regression, right after wait_settled saw the leader's settled one): once settled,
    this reads until the server agrees again, at most `timeout` seconds, and gives the last answer."""
    state = run.consumer_state()
    deadline = time.monotonic() + timeout
    while settled and time.monotonic() < deadline and not (state and state["num_pending"] == 0):
        time.sleep(0.25)
        state = run.consumer_state()
    return state


def finish(run, info, settle_timeout, heal=heal_all, stop=None):
    """After the faults: heal, settle, SIGTERM, audit. Fills info. `heal` and `stop` (SIGTERM, the
    exit status) default to those of a run with one jetfan."""
    info["publish_stop"] = time.monotonic_ns()
    heal(run)
    info["settle_timeout_s"] = settle_timeout
    info["settled"] = wait_settled(run, settle_timeout) if settle_timeout > 0 else False
    if info["settled"]:
        run.event("settled")
    info["final_consumer"] = final_consumer_state(run, info["settled"])
    status = stop(run) if stop else run.term_jetfan()
    info["final_exit"] = status
    # Again once jetfan is gone and before the auditor reads: nothing acks in between, so this is
    # what the server still holds unacknowledged (the checker counts with it).
    info["exit_consumer"] = run.consumer_state()
    # What must come back: every message some handler never confirmed, by its stream sequence.
    _, unconfirmed = expectations(run, want_ids=True)
    expect_path = os.path.join(run.dir, "audit-expect.txt")
    with open(expect_path, "w") as f:
        f.writelines(f"{seq}\n" for seq in sorted(s for s in unconfirmed.values() if s))
    info["audit_mode"] = "set"
    audit_path = os.path.join(run.dir, "audit.txt")
    run.event("audit_start")
    audit = subprocess_run([os.path.join(run.build, "tests/faults/faults-nats"), "audit", run.servers.urls,
                            "EVENTS", "faults", expect_path, "45", "3000", audit_path]
                           + ([run.priority_group] if getattr(run, "priority_group", None) else []),
                           os.path.join(run.dir, "audit.log"))
    info["audited"] = audit == 0
    info["dead_letters"] = dump_dead_letters(run)
    info["follow_ups"] = dump_follow_ups(run)


def dump_dead_letters(run):
    """Reads the dead-letter stream, once the audit is done, into dead_letters.txt ("<handler> <id>"
    a dead letter) for the checker's dead-letter rule. A dead letter that is not its message byte for
    byte, or whose headers do not name where it came from, is a finding. Returns how many there are."""
    specs = {h.name: h for h in run.handlers if h.dead_letter}
    if not specs:
        return 0
    letters = run.tool.stream_messages(DEAD_LETTER_STREAM)
    with open(os.path.join(run.dir, "dead_letters.txt"), "w") as out:
        for m in letters:
            handler, headers = m["headers"].get("Jetfan-Handler", "?"), m["headers"]
            digits = m["data"].split(b" ", 1)[0]
            ident = int(digits) if digits.isdigit() else -1
            wrong = []
            if handler not in specs or m["subject"] != specs[handler].dead_letter:
                wrong.append(f"handler {handler!r} on subject {m['subject']}")
            if m["data"] != payload_of(ident, run.settings.size):
                wrong.append(f"payload {m['data'][:40]!r} is not message {ident}'s")
            if headers.get("Jetfan-Subject") != "events." + key_of(ident):
                wrong.append(f"Jetfan-Subject {headers.get('Jetfan-Subject')!r}")
            if headers.get("Jetfan-Stream") != STREAM or headers.get("Jetfan-Consumer") != DURABLE:
                wrong.append(f"Jetfan-Stream/Consumer {headers.get('Jetfan-Stream')!r}/{headers.get('Jetfan-Consumer')!r}")
            if not headers.get("Jetfan-Reason") or not headers.get("Jetfan-Attempts", "").isdigit():
                wrong.append("no Jetfan-Reason or Jetfan-Attempts")
            if wrong:
                run.event("finding", what=f"dead letter {m['seq']} of {DEAD_LETTER_STREAM}: " + "; ".join(wrong))
            out.write(f"{handler} {ident}\n")
    return len(letters)


def dump_follow_ups(run):
    """Reads the follow-up stream, once the audit is done, into follow_ups.txt ("<handler> <id>" a
    follow-up) for the checker's follow-up rule. A follow-up that is not its message's (subject,
    payload) or whose Nats-Msg-Id is not jetfan's for that message is a finding. Returns how many."""
    specs = {h.follow_up: h for h in run.handlers if h.follow_up}
    if not specs:
        return 0
    follow_ups = run.tool.stream_messages(FOLLOW_UP_STREAM)
    with open(os.path.join(run.dir, "follow_ups.txt"), "w") as out:
        for m in follow_ups:
            prefix, _, digits = m["subject"].rpartition(".")
            spec = specs.get(prefix)
            ident = int(digits) if digits.isdigit() else -1
            wrong = []
            if spec is None:
                wrong.append(f"subject {m['subject']} is no handler's")
            if m["data"] != payload_of(ident, run.settings.size):
                wrong.append(f"payload {m['data'][:40]!r} is not message {ident}'s")
            msg_id = m["headers"].get("Nats-Msg-Id", "")
            if not (msg_id.startswith(f"jetfan:{STREAM}:{DURABLE}:") and spec and msg_id.endswith(f":{spec.name}:0")):
                wrong.append(f"Nats-Msg-Id {msg_id!r} is not jetfan's")
            if wrong:
                run.event("finding", what=f"follow-up {m['seq']} of {FOLLOW_UP_STREAM}: " + "; ".join(wrong))
            out.write(f"{spec.name if spec else '?'} {ident}\n")
    return len(follow_ups)


def subprocess_run(argv, log):
    with open(log, "ab") as out:
        return subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=120,
                              preexec_fn=die_with_parent).returncode


def write_info(run, info):
    info.update(keys=KEYS, ack_wait_s=run.settings.ack_wait_s, nak_delay_max_s=run.settings.nak_delay_max_s,
                max_ack_pending=run.settings.max_ack_pending, ledger=run.settings.ledger_info(),
                rate=run.settings.rate,
                cluster_size=run.cluster_size,
                handlers=[{"name": h.name, "patterns": h.patterns, "poison": h.poison, "ghost": h.ghost,
                           "order_by": h.order_by, "max_attempts": h.max_attempts, "dead_letter": h.dead_letter,
                           "follow_up": h.follow_up,
                           "ack_timeout_s": float(h.ack_timeout.rstrip("s")),
                           "record_files": [os.path.basename(p) for p in run.handler_record_files(h.name)]}
                          for h in run.handlers])
    with open(os.path.join(run.dir, "run.json"), "w") as f:
        json.dump(info, f, indent=1)


def new_workdir(name):
    return tempfile.mkdtemp(prefix=f"jetfan-faults-{name}-")


def run_class(scenario, seed, duration, build, rate=1000, settle_timeout=90):
    """One run of a fault class. Returns (result dict, workdir)."""
    workdir = new_workdir(scenario.name)
    rng = random.Random(seed)
    settings = Settings(rate=rate, **(scenario.settings() if scenario.settings else {}))
    run = Run(build, workdir, scenario.handlers(), scenario.cluster_size, settings)
    info = {"name": scenario.name, "seed": seed, "duration_s": duration}
    try:
        run.start()
        run.start_publisher()
        run.start_monitor()
        info["publish_start"] = time.monotonic_ns()
        end = time.monotonic() + duration
        count = 0
        while True:
            gap = rng.uniform(*scenario.gap)
            if time.monotonic() + gap >= end:
                time.sleep(max(0.0, end - time.monotonic()))
                break
            time.sleep(gap)
            fault = scenario.first if (count == 0 and scenario.first) else rng.choice(scenario.faults)
            begin = time.monotonic_ns()
            did = fault(run, rng)
            run.event("fault", name=did["name"], detail=did.get("detail"), begin=begin, end=time.monotonic_ns(),
                      stops_jetfan=did.get("stops_jetfan", False))
            count += 1
        run.stop_publisher()
        run.stop_monitor()
        finish(run, info, settle_timeout)
    except Exception as e:  # the harness itself failed: keep everything and say so
        run.event("finding", what=f"harness error: {type(e).__name__}: {e}")
    finally:
        run.close()
        write_info(run, info)
    return checker.check(workdir), workdir


def discard(workdir):
    shutil.rmtree(workdir, ignore_errors=True)


def wait_for_records(run, condition, timeout):
    return wait_until(condition, timeout, poll=0.05)
