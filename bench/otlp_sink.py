#!/usr/bin/env python3
"""A null OTLP/HTTP collector for the benchmarks (standard library only).

  otlp_sink.py [--port N] [--port-file FILE] [--counts FILE]

Listens on 127.0.0.1, port N (default 0: a free one), prints `port=N` on its first line (and writes N
to --port-file, if given), and answers every POST with 200 and `{}` after reading and discarding the
body. It counts requests, body bytes and spans: the occurrences of `"spanId"` in each body (OTLP JSON
names every span's id so; a parent is `"parentSpanId"`, which does not match, and jetfan's spans have
no links), gunzipped first if the request says Content-Encoding: gzip. Counting bytes rather than
parsing keeps the sink's own CPU small beside the jetfan it measures.

The counts, as `key=value` lines (requests, bytes, spans, bad_requests), are rewritten to --counts
after every request (atomically: a temp file renamed), and printed on stdout when it stops (SIGTERM
or SIGINT), so a script may read them while it runs or after.
"""
import argparse
import gzip
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SPAN_ID = b'"spanId"'


class Counts:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.spans = 0
        self.bad_requests = 0  # bodies that could not be read or gunzipped (still answered 200)

    def text(self):
        return (f"requests={self.requests}\nbytes={self.bytes}\nspans={self.spans}\n"
                f"bad_requests={self.bad_requests}\n")

    def add(self, size, spans, bad):
        with self.lock:
            self.requests += 1
            self.bytes += size
            self.spans += spans
            self.bad_requests += bad
            self.write_locked()

    def write_locked(self):
        if not self.path:
            return
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            f.write(self.text())
        os.replace(tmp, self.path)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counts = None  # set in main

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        size, spans, bad = 0, 0, 0
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            size = len(body)
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            spans = body.count(SPAN_ID)
        except (OSError, ValueError, EOFError):
            bad = 1
        self.counts.add(size, spans, bad)
        answer = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):  # quiet: one line a request would cost more than the rest
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--counts")
    args = parser.parse_args()

    counts = Counts(args.counts)
    Handler.counts = counts
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    with counts.lock:
        counts.write_locked()
    port = server.server_address[1]
    if args.port_file:
        with open(f"{args.port_file}.tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(f"{args.port_file}.tmp", args.port_file)
    print(f"port={port}", flush=True)

    def stop(*_):
        # shutdown() waits for serve_forever to return, which runs in this (the main) thread: do it
        # from another one.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    with counts.lock:
        counts.write_locked()
        sys.stdout.write(counts.text())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
