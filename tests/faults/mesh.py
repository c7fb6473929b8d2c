"""One run's world: nats-server (one node or three), the stream and durable consumer made as a
controller would, the proxy, the real jetfan binary, recording handlers and the publisher, plus
the history of everything the harness did to them (history.jsonl).

Every process is started, signalled and reaped by its own pid; close() ends them all."""

import json
import os
import signal
import threading
import time

import records
from patterns import matches_any
from proc import Proc, read_text, wait_until
from proxy import Proxy
from servers import DURABLE, STREAM, NatsTool, Servers

# The confirmation ledger (issue 39): jetfan's `ledger:` section, its bucket made by the harness as
# a controller would (NatsTool.create). Every run writes one unless its Settings say otherwise;
# faults.py --no-ledger clears ledger_by_default, to measure what the ledger removes (checker.py,
# after_restart_confirmed_long_before).
LEDGER_BUCKET = "FAULTS_LEDGER"
LEDGER_INTERVAL_S = 1.0
ledger_by_default = True

# Keys and how often each is used: message `id` has key KEYS[id % len(KEYS)].
KEYS = (["a.x"] * 4 + ["a.y"] * 3 + ["a.z"] * 2 + ["b.x"] * 3 + ["b.y"] * 2 + ["b.c.d"] * 2 + ["b"]
        + ["c.x"] * 3 + ["c.y.z"] * 2 + ["c"] * 2 + ["g.1"])


def key_of(ident):
    return KEYS[ident % len(KEYS)]


def payload_of(ident, size):
    """What faults-publisher sends as message `ident` (publisher_main.cpp)."""
    text = f"{ident} {key_of(ident)} ".encode()
    return text + b"x" * max(0, size - len(text))


class HandlerSpec:
    """A declared handler: its patterns, and its instances (each a list of faults-handler flags)."""

    def __init__(self, name, patterns, instances=(), poison=None, ghost=False, ack_timeout="5s", order_by=None,
                 max_attempts=None, dead_letter=None, follow_up=None):
        self.name = name
        self.order_by = order_by  # handlers[].order_by, or None: unordered
        self.patterns = list(patterns)
        self.instances = [list(flags) for flags in instances]
        self.poison = poison  # (mod, rem): ids this handler NAKs for ever
        self.ghost = ghost    # disconnected for good at some point (or never connected)
        self.ack_timeout = ack_timeout
        self.max_attempts = max_attempts  # handlers[].retry.max_attempts, or None: unlimited
        self.dead_letter = dead_letter    # handlers[].dead_letter.subject (in DEAD_LETTER_STREAM), or None
        # The prefix of the follow-up it publishes through jetfan for each message, tied to it
        # (faults-handler --follow-up; <prefix>.<id> in FOLLOW_UP_STREAM), or None
        self.follow_up = follow_up
        if follow_up:
            self.instances = [flags + ["--follow-up", follow_up + "."] for flags in self.instances]

    def wants(self, ident):
        return matches_any(self.patterns, key_of(ident))

    def poisoned(self, ident):
        return self.poison is not None and ident % self.poison[0] == self.poison[1]


def standard_handlers(reconnect_loop=False, ghost_instance=False):
    """Handlers whose patterns overlap: most keys go to two or three of them."""
    return [
        HandlerSpec("A", ["a.*"], [[]]),
        HandlerSpec("B", ["*.x"], [[]] + ([["--reconnect-every", "37"]] if reconnect_loop else [])),
        HandlerSpec("C", ["#"], [[], ["--slow-us", "300"]]),
        HandlerSpec("D", ["b.#", "*.y"], [["--poison", "101:7"]], poison=(101, 7)),
        HandlerSpec("G", ["g.*"], [[]] if ghost_instance else [], ghost=True),
        HandlerSpec("O", ["a.*", "c.#"], [[], []], order_by="key"),
        # Fails its poison for ever, like D, but with a retry budget of 3 and dead letters: jetfan
        # publishes each to the dead-letter stream, under the same faults, and only then settles it.
        HandlerSpec("L", ["b.*", "c.x", "a.z"], [["--poison", "23:4"]], poison=(23, 4), max_attempts=3,
                    dead_letter="dlq.faults.L"),
        # Publishes a follow-up of each message through jetfan, tied to it, and ACKs at once: jetfan
        # holds the ACK until the follow-up is stored. Two instances.
        HandlerSpec("F", ["a.y", "b.c.d"], [[], []], follow_up="follow.F"),
    ]


class Settings:
    def __init__(self, **kw):
        self.rate = kw.get("rate", 1000)
        self.size = kw.get("size", 64)
        self.ack_wait_s = kw.get("ack_wait_s", 5.0)
        self.nak_delay_max_s = kw.get("nak_delay_max_s", 2.0)
        self.max_ack_pending = kw.get("max_ack_pending", 20000)
        self.drain_timeout_s = kw.get("drain_timeout_s", 3.0)
        self.log_level = kw.get("log_level", "info")
        self.use_proxy = kw.get("use_proxy", True)
        self.idle_heartbeat = kw.get("idle_heartbeat", "1s")
        self.watch_answers = kw.get("watch_answers", True)
        self.metrics_port = kw.get("metrics_port")  # jetfan's /metrics on 127.0.0.1, if set
        self.consumer_extra = kw.get("consumer_extra")  # more of the durable's config (priority groups)
        self.max_held = kw.get("max_held")  # consumer.max_held, if set
        self.control_extra = kw.get("control_extra", [])  # config lines for control: (the adversary class)
        self.ledger = kw.get("ledger", ledger_by_default)  # jetfan writes the confirmation ledger
        self.ledger_interval_s = kw.get("ledger_interval_s", LEDGER_INTERVAL_S)

    def ledger_info(self):
        """run.json's "ledger": what the checker judges the run's duplicates after a restart by."""
        return {"bucket": LEDGER_BUCKET, "interval_s": self.ledger_interval_s} if self.ledger else None


class Run:
    def __init__(self, build, workdir, handlers, cluster_size=1, settings=None):
        self.build = build
        self.dir = workdir
        self.handlers = handlers
        self.settings = settings or Settings()
        self.cluster_size = cluster_size
        self.history_path = os.path.join(workdir, "history.jsonl")
        self.history = open(self.history_path, "a")
        self.servers = Servers(workdir, cluster_size)
        self.tool = None
        self.proxy = None
        self.jetfan = None
        self.jetfan_gen = 0
        self.jetfan_exits = []
        self.instances = {}   # (name, index) -> Proc
        self.inst_gen = {}    # (name, index) -> generation (record file number)
        self.publisher = None
        self.watcher = None
        self.socket = os.path.join(workdir, "jetfan.sock")
        self.jetfan_log = os.path.join(workdir, "jetfan.log")

    # --- history ---

    def event(self, kind, **fields):
        fields.update(t=time.monotonic_ns(), kind=kind)
        self.history.write(json.dumps(fields) + "\n")
        self.history.flush()
        return fields

    # --- setup ---

    def start(self):
        s = self.settings
        self.servers.start()
        self.tool = NatsTool(os.path.join(self.build, "tests/faults/faults-nats"), self.servers.urls,
                             os.path.join(self.dir, "faults-nats.log"))
        self.tool.create(3 if self.cluster_size > 1 else 1, s.ack_wait_s, s.max_ack_pending,
                         consumer_extra=s.consumer_extra, ledger_bucket=LEDGER_BUCKET if s.ledger else None)
        if s.watch_answers:
            self.start_watcher()
        if self.cluster_size == 1 and s.use_proxy:
            self.proxy = Proxy(self.servers.nodes[0].port)
        self.write_config()
        self.event("setup", servers=self.servers.urls, proxy=self.proxy.port if self.proxy else None)
        self.start_jetfan()
        for h in self.handlers:
            for i in range(len(h.instances)):
                self.start_instance(h.name, i)

    def start_monitor(self, period=0.25):
        """Asks the server for the consumer's info every `period` s and writes when it answered
        (monitor.jsonl): the checker does not count as jetfan's the time the consumer itself could
        not answer (no leader, server down)."""
        self.monitor_stop = threading.Event()
        path = os.path.join(self.dir, "monitor.jsonl")

        def loop():
            with open(path, "a") as out:
                while not self.monitor_stop.is_set():
                    t = time.monotonic_ns()
                    info = self.tool.consumer_info(timeout_ms=500)
                    leader = ((info or {}).get("cluster") or {}).get("leader")
                    out.write(json.dumps({"t": t, "ok": info is not None, "leader": leader,
                                          "err": None if info else self.tool.last_error,
                                          "ack_pending": (info or {}).get("num_ack_pending"),
                                          "pending": (info or {}).get("num_pending")}) + "\n")
                    out.flush()
                    self.monitor_stop.wait(period)
        self.monitor_thread = threading.Thread(target=loop, daemon=True)
        self.monitor_thread.start()

    def stop_monitor(self):
        if getattr(self, "monitor_thread", None):
            self.monitor_stop.set()
            self.monitor_thread.join(5)
            self.monitor_thread = None

    def start_watcher(self):
        """Every answer jetfan gives the server about a message, seen from outside (answers.rec)."""
        self.watcher = Proc([os.path.join(self.build, "tests/faults/faults-nats"), "watch", self.servers.urls,
                             f"$JS.ACK.{STREAM}.{DURABLE}.>", os.path.join(self.dir, "answers.rec")],
                            os.path.join(self.dir, "watch.log"), name="watch")
        wait_until(lambda: "watching" in read_text(self.watcher.log_path), 30)

    def jetfan_urls(self):
        if self.proxy:
            return [f"nats://127.0.0.1:{self.proxy.port}"]
        return [n.url for n in self.servers.nodes]

    def write_config(self):
        s = self.settings
        lines = ["nats:", "  servers: [" + ", ".join(f'"{u}"' for u in self.jetfan_urls()) + "]",
                 "  retry_max: 500ms", "  reconnect_wait: 100ms",
                 "consumer:", f"  stream: {STREAM}", f"  durable: {DURABLE}", "  pull_expires: 5s",
                 f"  idle_heartbeat: {s.idle_heartbeat}"] + ([f"  max_held: {s.max_held}"] if s.max_held else []) + [
                 "key:", '  strip_prefix: "events."',
                 "socket:", f"  path: {self.socket}"]
        if s.metrics_port:
            lines += ["metrics:", f'  listen: "127.0.0.1:{s.metrics_port}"']
        lines += s.control_extra
        lines += ["handlers:"]
        for h in self.handlers:
            pats = ", ".join(f'"{p}"' for p in h.patterns)
            lines += [f"  - name: {h.name}", f"    patterns: [{pats}]", f"    ack_timeout: {h.ack_timeout}"]
            if h.order_by:
                lines.append(f"    order_by: {h.order_by}")
            if h.max_attempts:
                lines.append(f"    retry: {{max_attempts: {h.max_attempts}, backoff: 100ms, backoff_max: 400ms}}")
            if h.dead_letter:
                lines.append(f"    dead_letter: {{subject: {h.dead_letter}}}")
            if h.follow_up:
                lines.append(f"    publish: {{subjects: [\"{h.follow_up}.>\"]}}")
        lines += ["delivery:", "  nak_delay: 200ms", f"  nak_delay_max: {int(s.nak_delay_max_s * 1000)}ms",
                  f"  drain_timeout: {int(s.drain_timeout_s * 1000)}ms"]
        if s.ledger:
            lines += ["ledger:", f"  bucket: {LEDGER_BUCKET}", f"  interval: {int(s.ledger_interval_s * 1000)}ms"]
        self.config_path = os.path.join(self.dir, "jetfan.yaml")
        with open(self.config_path, "w") as f:
            f.write("\n".join(lines) + "\n")

    # --- jetfan ---

    def start_jetfan(self, wait=True):
        before = read_text(self.jetfan_log).count("serving consumer")
        self.jetfan_gen += 1
        with open(self.jetfan_log, "a") as f:
            f.write(f"===== harness: jetfan generation {self.jetfan_gen} =====\n")
        self.jetfan = Proc([os.path.join(self.build, "daemon/jetfan"), "serve", "--config", self.config_path,
                            "--log-level", self.settings.log_level], self.jetfan_log, name="jetfan")
        self.event("jetfan_start", gen=self.jetfan_gen, pid=self.jetfan.pid)
        if wait and not wait_until(lambda: read_text(self.jetfan_log).count("serving consumer") > before, 60):
            self.event("finding", what="jetfan did not start serving within 60 s")
            return False
        return True

    def jetfan_exited(self, how, status):
        self.jetfan_exits.append({"gen": self.jetfan_gen, "how": how, "status": status})
        self.event("jetfan_exit", gen=self.jetfan_gen, how=how, status=status)

    def kill_jetfan(self):
        if not self.jetfan.alive():  # it died by itself before the harness came to kill it
            self.event("jetfan_crash", gen=self.jetfan_gen, status=self.jetfan.wait(0))
        status = self.jetfan.kill()
        self.jetfan_exited("SIGKILL", status)

    def term_jetfan(self, timeout=None):
        """SIGTERM; the exit status, or None if it did not exit in time (then it is killed)."""
        timeout = timeout or self.settings.drain_timeout_s + 15
        self.jetfan.signal(signal.SIGTERM)
        self.event("jetfan_sigterm", gen=self.jetfan_gen)
        status = self.jetfan.wait(timeout)
        if status is None:
            self.event("finding", what=f"jetfan did not exit within {timeout:.0f} s of SIGTERM; killed it")
            self.jetfan.kill()
        self.jetfan_exited("SIGTERM", status)
        return status

    def jetfan_alive(self):
        return self.jetfan is not None and self.jetfan.alive()

    # --- handlers ---

    def record_path(self, name, index, gen):
        return os.path.join(self.dir, f"handler-{name}-{index}-{gen}.rec")

    def start_instance(self, name, index):
        spec = next(h for h in self.handlers if h.name == name)
        gen = self.inst_gen.get((name, index), 0) + 1
        self.inst_gen[(name, index)] = gen
        log = os.path.join(self.dir, f"handler-{name}-{index}.log")
        argv = [os.path.join(self.build, "tests/faults/faults-handler"), self.socket, name,
                self.record_path(name, index, gen)] + spec.instances[index]
        self.instances[(name, index)] = Proc(argv, log, name=f"{name}-{index}")
        self.event("handler_start", handler=name, index=index, gen=gen)

    def handler_record_files(self, name):
        out = []
        for (n, i), g in self.inst_gen.items():
            if n == name:
                out += [self.record_path(n, i, k) for k in range(1, g + 1)]
        return out

    # --- publisher ---

    def start_publisher(self):
        self.publisher_record = os.path.join(self.dir, "publisher.rec")
        self.publisher = Proc([os.path.join(self.build, "tests/faults/faults-publisher"), self.servers.urls,
                               self.publisher_record, self.settings.rate, self.settings.size, ",".join(KEYS)],
                              os.path.join(self.dir, "publisher.log"), name="publisher")
        wait_until(lambda: "publishing" in read_text(self.publisher.log_path), 30)
        self.event("publish_start", rate=self.settings.rate)

    def stop_publisher(self):
        self.publisher.signal(signal.SIGTERM)
        status = self.publisher.wait(30)
        if status is None:
            self.publisher.kill()
        self.event("publish_stop", status=status)

    # --- teardown ---

    def close(self):
        self.stop_monitor()
        for p in list(self.instances.values()):
            p.close()
        if self.publisher:
            self.publisher.close()
        if self.watcher:
            self.watcher.close()
        if self.jetfan:
            self.jetfan.close()
        if self.tool:
            self.tool.close()
        if self.proxy:
            self.proxy.close()
        self.servers.stop()
        self.history.close()

    # --- what the harness knows while running ---

    def consumer_state(self):
        info = self.tool.consumer_info()
        if not info:
            return None
        return {"num_pending": info.get("num_pending"), "num_ack_pending": info.get("num_ack_pending"),
                "num_redelivered": info.get("num_redelivered"),
                "ack_floor": (info.get("ack_floor") or {}).get("stream_seq"),
                "delivered": (info.get("delivered") or {}).get("stream_seq")}
