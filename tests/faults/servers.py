"""nats-server for a run: one node, or a 3-node JetStream cluster on loopback; each node
restartable on the same port and the same store. The harness talks to them through faults-nats
serve (NatsTool), never with a NATS client of its own."""

import base64
import json
import os
import subprocess
import threading
import time
import urllib.parse

from proc import Proc, die_with_parent, free_port, read_text, wait_until

STREAM = "EVENTS"
DURABLE = "faults"
DEAD_LETTER_STREAM = "FAULTS_DLQ"  # captures dlq.>: the handlers' dead-letter subjects
FOLLOW_UP_STREAM = "FAULTS_FOLLOW"  # captures follow.>: what handlers publish through jetfan (tied)


def nats_server_binary():
    """The nats-server a run starts: $JETFAN_NATS_SERVER when set (scripts/compat.sh points it at
    another release), otherwise nats-server on PATH."""
    return os.environ.get("JETFAN_NATS_SERVER") or "nats-server"


def server_version(binary=None):
    """(major, minor, patch) of a nats-server binary (`nats-server --version`), or None if it does
    not run or says something else."""
    binary = binary or nats_server_binary()
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    digits = out.strip().rsplit("v", 1)[-1].split("-")[0].split(".")
    if len(digits) < 3 or not all(d.isdigit() for d in digits[:3]):
        return None
    return tuple(int(d) for d in digits[:3])


def ledger_bucket_config(bucket, replicas):
    """The stream of key-value bucket `bucket` as `nats kv add BUCKET --history 1 --ttl 1h
    --replicas N` makes it (what jetfan's startup error and docs/OPERATING.md tell an operator to
    run; nats.go's CreateKeyValue, cnats' js_CreateKeyValue as examples/mesh_controller.cpp calls
    it): KV_<bucket> on $KV.<bucket>.>, one value per key, rollups allowed, deletes only the
    key-value way (a DEL marker), new writes refused when full, direct gets, the duplicate window
    the shorter of 2 minutes and the TTL. Replicas: the cluster's size, at most 3."""
    ttl_ns = 3600 * 10**9
    return {"name": f"KV_{bucket}", "subjects": [f"$KV.{bucket}.>"], "storage": "file",
            "num_replicas": min(replicas, 3), "retention": "limits", "discard": "new",
            "max_msgs_per_subject": 1, "max_msgs": -1, "max_bytes": -1, "max_msg_size": -1, "max_consumers": -1,
            "max_age": ttl_ns, "duplicate_window": min(2 * 60 * 10**9, ttl_ns),
            "deny_delete": True, "deny_purge": False, "allow_rollup_hdrs": True, "allow_direct": True}


class Node:
    def __init__(self, name, workdir, port, cluster_port=None, routes=()):
        self.name = name
        self.port = port
        self.url = f"nats://127.0.0.1:{port}"
        self.log = os.path.join(workdir, f"{name}.log")
        self.conf = os.path.join(workdir, f"{name}.conf")
        text = [f"server_name: {name}", f"listen: 127.0.0.1:{port}",
                f'jetstream {{ store_dir: "{os.path.join(workdir, name + "-store")}" }}']
        if cluster_port:
            route_list = ", ".join(f"nats-route://127.0.0.1:{p}" for p in routes)
            text.append(f"cluster {{ name: faults, listen: 127.0.0.1:{cluster_port}, routes: [{route_list}] }}")
        with open(self.conf, "w") as f:
            f.write("\n".join(text) + "\n")
        self.proc = None

    def start(self, wait=True):
        before = read_text(self.log).count("Server is ready")
        self.proc = Proc([nats_server_binary(), "-c", self.conf], self.log, name=self.name)
        if wait and not wait_until(lambda: read_text(self.log).count("Server is ready") > before, 30):
            raise RuntimeError(f"nats-server {self.name} did not start; see {self.log}")

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def kill(self):
        if self.proc:
            self.proc.kill()


class Servers:
    """One node (size 1) or a cluster of three with R3 stream and consumer."""

    def __init__(self, workdir, size):
        self.size = size
        if size == 1:
            self.nodes = [Node("n1", workdir, free_port())]
        else:
            ports = [free_port() for _ in range(size)]
            cports = [free_port() for _ in range(size)]
            self.nodes = [Node(f"n{i + 1}", workdir, ports[i], cports[i], [p for j, p in enumerate(cports) if j != i])
                          for i in range(size)]
        self.urls = ",".join(n.url for n in self.nodes)

    def start(self):
        if self.size == 1:
            self.nodes[0].start()
        else:
            for n in self.nodes:
                n.start(wait=False)
            for n in self.nodes:
                if not wait_until(lambda: "Server is ready" in read_text(n.log), 30):
                    raise RuntimeError(f"nats-server {n.name} did not start; see {n.log}")

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)

    def stop(self):
        for n in self.nodes:
            n.kill()


class NatsTool:
    """Requests to the servers through `faults-nats serve` (cnats). Thread-safe.

    One connection serves the whole run and reconnects through every fault. Once its requests have
    all failed for RENEW_AFTER_S, it starts a new `faults-nats serve` and says so in its log with
    the last error: harmless while the servers are down, and the way out if that connection is
    stuck (a cluster run once had no answer here for its whole settle time, while the audit's new
    connection was answered at once)."""

    RENEW_AFTER_S = 15

    def __init__(self, binary, urls, log_path, clock=time.monotonic):
        self.binary, self.urls, self.log_path, self.clock = binary, urls, log_path, clock
        self.lock = threading.Lock()
        self.failing_since = None
        self.last_error = None
        self.proc = self._spawn()

    def _spawn(self):
        with open(self.log_path, "ab") as log:
            return subprocess.Popen([self.binary, "serve", self.urls], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1,
                                    preexec_fn=die_with_parent)

    def _end(self):
        """Under self.lock, or once no one else uses the tool: the process gone, its pipes closed."""
        try:
            self.proc.stdin.close()
            self.proc.wait(5)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def _renew(self, now):
        """Under self.lock: a new connection, once requests have failed for RENEW_AFTER_S."""
        with open(self.log_path, "a") as log:
            log.write(f"harness: every request failed for {now - self.failing_since:.1f} s "
                      f"(last: {self.last_error}); starting a new faults-nats serve\n")
        self.proc.kill()
        self._end()
        self.proc = self._spawn()
        self.failing_since = now

    def request(self, subject, body="", timeout_ms=2000, headers=None):
        """The reply as a dict; raises RuntimeError on no reply or a JetStream error. headers: a dict
        of header fields to send with it."""
        if headers:
            fields = "|".join(f"{name}={urllib.parse.quote(value, safe='')}" for name, value in headers.items())
            line = f"hreq {timeout_ms} {subject} {fields} {body}\n"
        else:
            line = f"req {timeout_ms} {subject} {body}\n"
        with self.lock:
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except (BrokenPipeError, ValueError):
                line = ""
            now = self.clock()
            if line.startswith("ok "):
                self.failing_since = None
            else:
                self.last_error = line.strip() or "faults-nats exited"
                if self.failing_since is None:
                    self.failing_since = now
                elif now - self.failing_since >= self.RENEW_AFTER_S:
                    self._renew(now)
        if not line.startswith("ok "):
            raise RuntimeError(f"{subject}: {line.strip() or 'faults-nats exited'}")
        reply = json.loads(line[3:])
        if "error" in reply:
            self.last_error = f"JetStream: {reply['error']}"
            raise RuntimeError(f"{subject}: {reply['error']}")
        return reply

    def try_request(self, subject, body="", timeout_ms=2000):
        try:
            return self.request(subject, body, timeout_ms)
        except (RuntimeError, ValueError):
            return None

    def close(self):
        with self.lock:
            self._end()

    # --- JetStream, as a controller would do it ---

    def create(self, replicas, ack_wait_s, max_ack_pending, timeout=60, consumer_extra=None, ledger_bucket=None):
        """The stream, the dead-letter and follow-up streams, the durable, and with ledger_bucket the
        confirmation ledger's key-value bucket (jetfan never creates it: ledger_bucket_config)."""
        stream = {"name": STREAM, "subjects": ["events.>"], "storage": "file", "num_replicas": replicas,
                  "retention": "limits", "discard": "old"}
        consumer = {"stream_name": STREAM, "config": {
            "durable_name": DURABLE, "ack_policy": "explicit", "ack_wait": int(ack_wait_s * 1e9),
            "max_deliver": -1, "max_ack_pending": max_ack_pending, "deliver_policy": "all",
            "replay_policy": "instant"}}
        consumer["config"].update(consumer_extra or {})
        dead_letters = {"name": DEAD_LETTER_STREAM, "subjects": ["dlq.>"], "storage": "file",
                        "num_replicas": replicas, "retention": "limits", "discard": "old"}
        # The default duplicate window (2 minutes) outlasts any run: a follow-up a redelivery publishes
        # again is always dropped.
        follow_ups = {"name": FOLLOW_UP_STREAM, "subjects": ["follow.>"], "storage": "file",
                      "num_replicas": replicas, "retention": "limits", "discard": "old"}
        deadline = time.monotonic() + timeout
        last = None
        requests = [(f"$JS.API.STREAM.CREATE.{STREAM}", stream),
                    (f"$JS.API.STREAM.CREATE.{DEAD_LETTER_STREAM}", dead_letters),
                    (f"$JS.API.STREAM.CREATE.{FOLLOW_UP_STREAM}", follow_ups),
                    (f"$JS.API.CONSUMER.DURABLE.CREATE.{STREAM}.{DURABLE}", consumer)]
        if ledger_bucket:
            ledger = ledger_bucket_config(ledger_bucket, replicas)
            requests.append((f"$JS.API.STREAM.CREATE.{ledger['name']}", ledger))
        for subject, body in requests:
            while True:
                try:
                    self.request(subject, json.dumps(body), 5000)
                    break
                except (RuntimeError, ValueError) as e:  # a cluster electing its meta leader
                    last = e
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"cannot create {subject}: {last}")
                    time.sleep(0.25)

    def stream_messages(self, stream, timeout=60):
        """Every message in `stream`, oldest first, each as {"seq", "subject", "headers" (name ->
        value), "data" (bytes)}, read by sequence (STREAM.MSG.GET), as `jetfan dlq` reads them."""
        deadline = time.monotonic() + timeout
        while (info := self.try_request(f"$JS.API.STREAM.INFO.{stream}", "", 5000)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no info of stream {stream}")
            time.sleep(0.25)
        state = info["state"]
        out = []
        for seq in range(state["first_seq"], state["last_seq"] + 1) if state["messages"] else ():
            while True:
                try:
                    message = self.request(f"$JS.API.STREAM.MSG.GET.{stream}", json.dumps({"seq": seq}), 5000)["message"]
                    break
                except RuntimeError as e:
                    if "no message found" in str(e):  # deleted
                        message = None
                        break
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.25)
            if message is None:
                continue
            headers = {}
            for line in base64.b64decode(message.get("hdrs", "")).decode(errors="replace").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name:
                    headers[name.strip()] = value.strip()
            out.append({"seq": seq, "subject": message["subject"], "headers": headers,
                        "data": base64.b64decode(message.get("data", ""))})
        return out

    def consumer_info(self, timeout_ms=2000):
        return self.try_request(f"$JS.API.CONSUMER.INFO.{STREAM}.{DURABLE}", "", timeout_ms)

    def stream_info(self, timeout_ms=2000):
        return self.try_request(f"$JS.API.STREAM.INFO.{STREAM}", "", timeout_ms)

    def leaders(self):
        """(stream leader, consumer leader) server names, or None where unknown."""
        s = self.stream_info() or {}
        c = self.consumer_info() or {}
        return (s.get("cluster") or {}).get("leader"), (c.get("cluster") or {}).get("leader")
