"""The faults: each injects one fault into a running Run at the moment it is called, heals it, and
returns what it did. The scheduler (scenarios.py) calls them at random moments.

Each returns a dict: name, detail, and optionally stops_jetfan (jetfan could not read or answer
during the fault, so answers handlers gave meanwhile may reach it late)."""

import signal
import time

import records
from proc import read_text, wait_until


def _pause(rng, low, high):
    time.sleep(rng.uniform(low, high))


# --- jetfan ---

def jetfan_kill(run, rng):
    run.kill_jetfan()
    _pause(rng, 0, 1.5)
    run.start_jetfan()
    return {"name": "jetfan SIGKILL", "detail": "restarted"}


def _tails(run):
    out = []
    for h in run.handlers:
        if h.ghost:
            continue
        for (name, index), gen in run.inst_gen.items():
            if name == h.name:
                tail = records.Tail(run.record_path(name, index, gen))
                tail.offset = _size(tail.path)
                out.append((h, tail))
    return out


def _size(path):
    """Bytes of complete records so far (the file itself is preallocated)."""
    return len(records.read(path)) * records.RECORD.size


def _wait_for_fully_confirmed(run, timeout):
    """Watches the handlers' records until some message has been ACKed by every handler it is for
    (its last recipient just confirmed). Returns its id, or None after timeout."""
    tails = _tails(run)
    needed = {}
    acked = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for h, tail in tails:
            for r in tail.poll():
                if r.kind != records.ACKED:
                    continue
                if r.id not in needed:
                    needed[r.id] = {x.name for x in run.handlers
                                    if x.wants(r.id) and not x.ghost and not x.poisoned(r.id)}
                got = acked.setdefault(r.id, set())
                got.add(h.name)
                if needed[r.id] and got >= needed[r.id]:
                    return r.id
        time.sleep(0.0005)
    return None


def jetfan_kill_after_confirm(run, rng):
    ident = _wait_for_fully_confirmed(run, 5)
    run.kill_jetfan()
    _pause(rng, 0, 1.0)
    run.start_jetfan()
    return {"name": "jetfan SIGKILL after last confirm", "detail": f"id {ident}"}


def jetfan_kill_in_ack_window(run, rng):
    """Holds jetfan's bytes to the server in the proxy, waits until a message has been confirmed by
    every recipient (so jetfan has sent, or is about to send, its +ACK), then kills jetfan and drops
    what the proxy held: the server never hears those acks."""
    if not run.proxy:
        return jetfan_kill_after_confirm(run, rng)
    run.proxy.set_mode("up", "stall")
    ident = _wait_for_fully_confirmed(run, 5)
    run.kill_jetfan()
    run.proxy.cut()
    run.proxy.heal()
    _pause(rng, 0, 1.0)
    run.start_jetfan()
    return {"name": "jetfan SIGKILL in the ack window", "detail": f"id {ident}; acks held in the proxy, dropped"}


def jetfan_kill_during_drain(run, rng):
    before = read_text(run.jetfan_log).count("draining")
    run.jetfan.signal(signal.SIGTERM)
    run.event("jetfan_sigterm", gen=run.jetfan_gen)
    wait_until(lambda: read_text(run.jetfan_log).count("draining") > before, 2, poll=0.002)
    _pause(rng, 0, run.settings.drain_timeout_s)
    if run.jetfan.alive():
        run.kill_jetfan()
        how = "killed while draining"
    else:
        run.jetfan_exited("SIGTERM", run.jetfan.wait(1))
        how = "had finished draining"
    run.start_jetfan()
    return {"name": "jetfan SIGKILL during drain", "detail": how}


def jetfan_sigterm(run, rng):
    status = run.term_jetfan()
    _pause(rng, 0, 1.0)
    run.start_jetfan()
    return {"name": "jetfan SIGTERM", "detail": f"exit {status}; restarted"}


def jetfan_stop(run, rng):
    seconds = run.settings.ack_wait_s + rng.uniform(0.5, 3)
    run.jetfan.signal(signal.SIGSTOP)
    time.sleep(seconds)
    run.jetfan.signal(signal.SIGCONT)
    return {"name": "jetfan SIGSTOP > AckWait", "detail": f"{seconds:.1f} s", "stops_jetfan": True}


# --- handlers ---

def _live_instances(run, rng):
    keys = [k for k, p in run.instances.items()
            if p.alive() and not next(h for h in run.handlers if h.name == k[0]).ghost]
    return rng.choice(sorted(keys))


def handler_kill(run, rng):
    key = _live_instances(run, rng)
    run.instances[key].kill()
    _pause(rng, 0, 1.5)
    run.start_instance(*key)
    return {"name": "handler SIGKILL", "detail": f"{key[0]}-{key[1]}"}


def handler_stop(run, rng):
    key = _live_instances(run, rng)
    seconds = rng.uniform(0.5, 7)
    run.instances[key].signal(signal.SIGSTOP)
    time.sleep(seconds)
    run.instances[key].signal(signal.SIGCONT)
    return {"name": "handler SIGSTOP", "detail": f"{key[0]}-{key[1]} for {seconds:.1f} s"}


def ghost_gone(run, rng):
    """The handler declared as G loses its only instance for good."""
    for key, p in run.instances.items():
        if next(h for h in run.handlers if h.name == key[0]).ghost and p.alive():
            p.kill()
            return {"name": "handler gone for good", "detail": f"{key[0]}-{key[1]}"}
    return handler_kill(run, rng)


# --- nats-server ---

def server_kill(run, rng):
    node = run.servers.nodes[0]
    node.kill()
    run.event("server_kill", node=node.name)
    _pause(rng, 0, 2)
    node.start()
    run.event("server_start", node=node.name)
    return {"name": "nats-server SIGKILL", "detail": "restarted on the same store"}


def _kill_nodes(run, rng, names, what):
    before = {}
    for name in names:
        node = run.servers.node(name)
        before[name] = read_text(node.log).count("Server is ready")
        node.kill()
        run.event("server_kill", node=name)
    _pause(rng, 1, 4)
    for name in names:
        run.servers.node(name).start(wait=False)
    for name in names:
        node = run.servers.node(name)
        if not wait_until(lambda: read_text(node.log).count("Server is ready") > before[name], 30):
            run.event("finding", what=f"nats-server {name} did not restart within 30 s")
        run.event("server_start", node=name)
    return {"name": what, "detail": ",".join(names)}


def _leader(run, which):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        stream, consumer = run.tool.leaders()
        leader = stream if which == "stream" else consumer
        if leader:
            return leader
        time.sleep(0.1)
    return None


def kill_consumer_leader(run, rng):
    leader = _leader(run, "consumer") or rng.choice(run.servers.nodes).name
    return _kill_nodes(run, rng, [leader], "cluster: kill consumer leader")


def kill_stream_leader(run, rng):
    leader = _leader(run, "stream") or rng.choice(run.servers.nodes).name
    return _kill_nodes(run, rng, [leader], "cluster: kill stream leader")


def kill_two_nodes(run, rng):
    names = rng.sample([n.name for n in run.servers.nodes], 2)
    return _kill_nodes(run, rng, names, "cluster: kill two nodes")


# --- the network between jetfan and its server ---

def net_stall(run, rng):
    seconds = rng.uniform(0.5, 5)
    run.proxy.set_mode("both", "stall")
    time.sleep(seconds)
    run.proxy.heal()
    return {"name": "network stall", "detail": f"{seconds:.1f} s (idle heartbeat 1 s)", "stops_jetfan": True}


def net_stall_up(run, rng):
    seconds = rng.uniform(0.5, 4)
    run.proxy.set_mode("up", "stall")
    time.sleep(seconds)
    run.proxy.heal()
    return {"name": "network stall jetfan->server", "detail": f"{seconds:.1f} s", "stops_jetfan": True}


def net_cut(run, rng):
    run.proxy.cut()
    return {"name": "network cut", "detail": "connection closed"}


def net_slow(run, rng):
    seconds, delay = rng.uniform(1, 4), rng.uniform(0.02, 0.2)
    run.proxy.set_mode("both", "slow", delay)
    time.sleep(seconds)
    run.proxy.heal()
    return {"name": "network slow", "detail": f"{delay * 1000:.0f} ms per chunk for {seconds:.1f} s",
            "stops_jetfan": True}


# --- SIGTERM in the middle of other faults ---

def sigterm_during(run, rng):
    kind = rng.choice(["stall", "handler stop", "server down"])
    victim = None
    if kind == "stall":
        run.proxy.set_mode("both", "stall")
    elif kind == "handler stop":
        victim = _live_instances(run, rng)
        run.instances[victim].signal(signal.SIGSTOP)
    else:
        run.servers.nodes[0].kill()
        run.event("server_kill", node="n1")
    _pause(rng, 0.2, 1.5)
    run.jetfan.signal(signal.SIGTERM)
    run.event("jetfan_sigterm", gen=run.jetfan_gen)
    _pause(rng, 0.2, 2)
    if kind == "stall":
        run.proxy.heal()
    elif kind == "handler stop":
        run.instances[victim].signal(signal.SIGCONT)
    else:
        run.servers.nodes[0].start()
        run.event("server_start", node="n1")
    timeout = run.settings.drain_timeout_s + 15
    status = run.jetfan.wait(timeout)
    if status is None:
        run.event("finding", what=f"jetfan did not exit within {timeout:.0f} s of SIGTERM during {kind}; killed it")
        run.jetfan.kill()
    run.jetfan_exited("SIGTERM", status)
    run.start_jetfan()
    return {"name": "SIGTERM during a fault", "detail": f"{kind}; exit {status}", "stops_jetfan": kind == "stall"}
