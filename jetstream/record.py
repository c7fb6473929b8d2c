#!/usr/bin/env python3
"""Records what nats-server answers to the JetStream API requests jetfan makes.

Starts the given nats-server with JetStream (-js) on a free port of 127.0.0.1 with its store in a
temporary folder, speaks the NATS text protocol to it over a plain socket (Python's standard library
only), makes a stream and consumers, and writes each answer's JSON, as the server sent it and with a
newline after it, to jetstream/recorded/<server version>/<name>.json. recorded_answers_test.cpp
reads every file of every version; the names, and what leads to each answer, are in ANSWERS below.
An answer a server cannot give (priority groups and pausing before 2.11) is left out, and said so.

    jetstream/record.py [NATS_SERVER...]     default: nats-server on PATH

The stream is EVENTS (events.>, memory); it holds, in order:
    1 events.a  "one"                       4 events.b  "" (empty payload)
    2 events.b  "two"                       5 events.a  "five", Nats-Msg-Id: five (sent twice)
    3 events.a  "three", header Tenant: t1
Consumer "worker" (durable, explicit acks, ack_wait 30s, max_deliver 5, max_ack_pending 1000) has
had 1 and 2 delivered and 1 acked. Then seq 2 is deleted.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECOND = 1_000_000_000  # nanoseconds


class Nats:
    """A minimal client of the NATS text protocol: publish, request, and read what comes."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.inbox = "_INBOX.record"
        self.next_id = 0
        info = self._line()
        if not info.startswith(b"INFO "):
            raise RuntimeError(f"not a NATS server: {info!r}")
        self.info = json.loads(info[5:])
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "protocol": 1}
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nSUB " + self.inbox.encode() + b".* 1\r\nPING\r\n")
        while self._line() != b"PONG":
            pass

    def _line(self):
        while b"\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the server closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _bytes(self, count):
        while len(self.buffer) < count + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the server closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count + 2 :]
        return data

    def send(self, subject, body=b"", reply=None, headers=None):
        body = body if isinstance(body, bytes) else body.encode()
        reply_part = f" {reply}" if reply else ""
        if headers:
            block = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            block = block.encode()
            line = f"HPUB {subject}{reply_part} {len(block)} {len(block) + len(body)}\r\n".encode()
            self.sock.sendall(line + block + body + b"\r\n")
        else:
            self.sock.sendall(f"PUB {subject}{reply_part} {len(body)}\r\n".encode() + body + b"\r\n")

    def receive(self):
        """The next message: (subject, reply subject or None, headers block or None, payload)."""
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            if line.startswith(b"-ERR"):
                raise RuntimeError(line.decode())
            parts = line.decode().split()
            if parts[0] == "MSG":  # MSG <subject> <sid> [reply] <size>
                reply = parts[3] if len(parts) == 5 else None
                return parts[1], reply, None, self._bytes(int(parts[-1]))
            if parts[0] == "HMSG":  # HMSG <subject> <sid> [reply] <header size> <size>
                reply = parts[3] if len(parts) == 6 else None
                header_size, total = int(parts[-2]), int(parts[-1])
                data = self._bytes(total)
                return parts[1], reply, data[:header_size], data[header_size:]

    def request(self, subject, body=b"", headers=None):
        """The answer's payload, or None when the server answered with a status alone."""
        self.next_id += 1
        reply = f"{self.inbox}.{self.next_id}"
        self.send(subject, body if not isinstance(body, dict) else json.dumps(body), reply, headers)
        while True:
            got, _, header_block, payload = self.receive()
            if got != reply:
                continue  # a late answer to an earlier request
            if header_block and not payload:
                return None
            return payload


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"v?(\d+\.\d+\.\d+)", out)
    if not found:
        raise RuntimeError(f"{binary} --version says {out!r}")
    return found.group(1)


def start(binary, store):
    port = free_port()
    log = open(Path(store) / "server.log", "w")
    process = subprocess.Popen([binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store], stdout=log, stderr=log)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            return process, Nats(port)
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{binary} did not listen on {port}")


def consumer_config(name, **extra):
    config = {
        "durable_name": name,
        "ack_policy": "explicit",
        "ack_wait": 30 * SECOND,
        "max_deliver": 5,
        "max_ack_pending": 1000,
        "filter_subject": "events.>",
        "deliver_policy": "all",
    }
    config.update(extra)
    return config


def record(binary, out_root):
    version = server_version(binary)
    store = tempfile.mkdtemp(prefix="jetfan-record-")
    process, nats = start(binary, store)
    answers = {}
    skipped = []
    try:

        def api(subject, body=b"", headers=None):
            answer = nats.request(subject, body, headers)
            if answer is None:
                raise RuntimeError(f"{subject}: a status without a body")
            return answer

        created = json.loads(
            api("$JS.API.STREAM.CREATE.EVENTS", {"name": "EVENTS", "subjects": ["events.>"], "storage": "memory"})
        )
        if "error" in created:
            raise RuntimeError(f"stream not created: {created}")

        answers["publish_ack"] = api("events.a", b"one")
        api("events.b", b"two")
        api("events.a", b"three", headers={"Tenant": "t1"})
        api("events.b", b"")
        api("events.a", b"five", headers={"Nats-Msg-Id": "five"})
        answers["publish_ack_duplicate"] = api("events.a", b"five", headers={"Nats-Msg-Id": "five"})
        answers["publish_ack_error"] = api("events.a", b"six", headers={"Nats-Expected-Stream": "OTHER"})

        made = json.loads(
            api(
                "$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.worker",
                {"stream_name": "EVENTS", "config": consumer_config("worker")},
            )
        )
        if "error" in made:
            raise RuntimeError(f"consumer not created: {made}")
        # Two delivered (1 and 2), the first acked.
        pull_reply = nats.inbox + ".pull"
        nats.send("$JS.API.CONSUMER.MSG.NEXT.EVENTS.worker", json.dumps({"batch": 2, "no_wait": True}), pull_reply)
        acks = []
        while len(acks) < 2:
            # A message comes under its own subject, to the subscription of the pull's reply subject.
            _, reply, _, _ = nats.receive()
            if reply and reply.startswith("$JS.ACK.EVENTS.worker."):
                acks.append(reply)
        # Acked with a request (+ACK's own answer): the server has taken it before the info is asked.
        nats.request(acks[0], b"+ACK")
        answers["consumer_info"] = api("$JS.API.CONSUMER.INFO.EVENTS.worker")
        answers["consumer_info_not_found"] = api("$JS.API.CONSUMER.INFO.EVENTS.nobody")
        answers["consumer_info_no_stream"] = api("$JS.API.CONSUMER.INFO.NOSTREAM.worker")

        # Priority groups (2.11 on): an older server refuses the config or ignores its fields.
        pinned = json.loads(
            api(
                "$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.pinned",
                {
                    "stream_name": "EVENTS",
                    "config": consumer_config(
                        "pinned", priority_groups=["jobs"], priority_policy="pinned_client", priority_timeout=120 * SECOND
                    ),
                },
            )
        )
        if "error" not in pinned and pinned.get("config", {}).get("priority_groups"):
            pinned_reply = nats.inbox + ".pinned"
            nats.send(
                "$JS.API.CONSUMER.MSG.NEXT.EVENTS.pinned",
                json.dumps({"batch": 1, "expires": 2 * SECOND, "group": "jobs"}),
                pinned_reply,
            )
            while not (nats.receive()[1] or "").startswith("$JS.ACK.EVENTS.pinned."):
                pass
            answers["consumer_info_pinned"] = api("$JS.API.CONSUMER.INFO.EVENTS.pinned")
        else:
            skipped.append("consumer_info_pinned (no priority groups: " + (pinned.get("error", {}).get("description") or "fields ignored") + ")")
        overflow = json.loads(
            api(
                "$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.overflow",
                {
                    "stream_name": "EVENTS",
                    "config": consumer_config("overflow", priority_groups=["jobs", "more"], priority_policy="overflow"),
                },
            )
        )
        if "error" not in overflow and overflow.get("config", {}).get("priority_groups"):
            answers["consumer_info_overflow"] = api("$JS.API.CONSUMER.INFO.EVENTS.overflow")
        else:
            skipped.append("consumer_info_overflow (no priority groups)")

        # Paused (2.11 on) until a fixed time far ahead.
        paused = json.loads(
            api(
                "$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.paused",
                {"stream_name": "EVENTS", "config": consumer_config("paused", pause_until="2100-01-01T00:00:00Z")},
            )
        )
        if "error" not in paused and paused.get("config", {}).get("pause_until"):
            answers["consumer_info_paused"] = api("$JS.API.CONSUMER.INFO.EVENTS.paused")
        else:
            skipped.append("consumer_info_paused (no pausing)")

        answers["stream_info"] = api("$JS.API.STREAM.INFO.EVENTS")
        answers["stream_info_no_stream"] = api("$JS.API.STREAM.INFO.NOSUCH")
        answers["stream_names"] = api("$JS.API.STREAM.NAMES", {"subject": "events.a"})
        answers["stream_names_none"] = api("$JS.API.STREAM.NAMES", {"subject": "nothing.here"})

        answers["msg_get"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"seq": 1})
        answers["msg_get_headers"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"seq": 3})
        answers["msg_get_empty"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"seq": 4})
        answers["msg_get_next"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"seq": 2, "next_by_subj": "events.a"})
        answers["msg_get_last"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"last_by_subj": "events.a"})
        answers["msg_delete"] = api("$JS.API.STREAM.MSG.DELETE.EVENTS", {"seq": 2})
        answers["msg_delete_error"] = api("$JS.API.STREAM.MSG.DELETE.EVENTS", {"seq": 2})
        answers["msg_get_not_found"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"seq": 2})
        answers["msg_get_next_not_found"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"seq": 6, "next_by_subj": "events.>"})
        answers["msg_get_last_not_found"] = api("$JS.API.STREAM.MSG.GET.EVENTS", {"last_by_subj": "events.none"})
        answers["msg_get_no_stream"] = api("$JS.API.STREAM.MSG.GET.NOSUCH", {"seq": 1})
    finally:
        nats.sock.close()
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(store, ignore_errors=True)

    out = out_root / version
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, answer in answers.items():
        json.loads(answer)  # each is JSON
        (out / f"{name}.json").write_bytes(answer + b"\n")
    print(f"{version}: {len(answers)} answers in {out.relative_to(HERE.parent)}")
    for why in skipped:
        print(f"{version}: left out {why}")


def main():
    binaries = sys.argv[1:] or [shutil.which("nats-server") or "/usr/sbin/nats-server"]
    for binary in binaries:
        record(binary, HERE / "recorded")


if __name__ == "__main__":
    main()
