#!/usr/bin/env python3
"""Unit tests of the harness's request tool (servers.NatsTool), with a stand-in for `faults-nats
serve` that answers as told: a connection whose every request fails is replaced, one that answers
is kept."""

import json
import os
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import servers  # noqa: E402

# Answers "ok {}" while the file named by its second argument (the first is "serve") exists, else "err Timeout"; says on
# stderr (the tool's log) that it started, and each request it got.
STAND_IN = """#!/bin/sh
echo "started $$" >&2
while read -r line; do
  echo "got $line" >&2
  if [ -e "$2" ]; then echo 'ok {"num_pending": 0}'; else echo 'err Timeout'; fi
done
"""


class NatsToolTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="faults-tool-test-")
        self.binary = os.path.join(self.dir, "serve")
        with open(self.binary, "w") as f:
            f.write(STAND_IN)
        os.chmod(self.binary, stat.S_IRWXU)
        self.answering = os.path.join(self.dir, "answering")
        self.log = os.path.join(self.dir, "tool.log")
        self.now = 0.0  # the tool's clock, moved by hand
        self.tool = servers.NatsTool(self.binary, self.answering, self.log, clock=lambda: self.now)
        self.addCleanup(self.tool.close)

    def starts(self):
        with open(self.log) as f:
            return sum(line.startswith("started") for line in f)

    def test_a_connection_whose_requests_all_fail_is_replaced_and_says_why(self):
        first = self.tool.proc.pid
        for self.now in (0.0, 5.0, 14.9):
            self.assertIsNone(self.tool.consumer_info())
        self.assertEqual(self.tool.proc.pid, first)  # not yet RENEW_AFTER_S
        self.now = 15.0
        self.assertIsNone(self.tool.consumer_info())
        self.assertNotEqual(self.tool.proc.pid, first)
        self.assertEqual(self.tool.last_error, "err Timeout")
        with open(self.log) as f:
            self.assertIn("every request failed for 15.0 s (last: err Timeout); starting a new faults-nats serve",
                          f.read())
        open(self.answering, "w").close()
        self.assertEqual(self.tool.consumer_info(), {"num_pending": 0})
        self.assertEqual(self.starts(), 2)

    def test_a_connection_that_answers_in_between_is_kept(self):
        # Failures 20 s apart, more than RENEW_AFTER_S, with an answer between them.
        first = self.tool.proc.pid
        self.assertIsNone(self.tool.consumer_info())
        self.now = 10.0
        open(self.answering, "w").close()
        self.assertIsNotNone(self.tool.consumer_info())
        os.remove(self.answering)
        self.now = 20.0
        self.assertIsNone(self.tool.consumer_info())
        self.assertEqual(self.tool.proc.pid, first)
    def requests(self):
        with open(self.log) as f:
            return [line.rstrip("\n").split(" ", 4)[3:] for line in f if line.startswith("got ")]

    def test_the_ledger_bucket_is_made_only_when_asked_as_nats_kv_add_makes_it(self):
        open(self.answering, "w").close()
        self.tool.create(1, 5.0, 100)
        self.assertFalse(any("KV_" in subject for subject, _ in self.requests()))
        self.tool.create(3, 5.0, 100, ledger_bucket="B")
        made = [json.loads(body) for subject, body in self.requests() if subject == "$JS.API.STREAM.CREATE.KV_B"]
        self.assertEqual(len(made), 1)
        self.assertEqual(made[0], servers.ledger_bucket_config("B", 3))
        self.assertEqual((made[0]["subjects"], made[0]["max_msgs_per_subject"], made[0]["discard"],
                          made[0]["num_replicas"], made[0]["deny_delete"], made[0]["allow_rollup_hdrs"]),
                         (["$KV.B.>"], 1, "new", 3, True, True))


if __name__ == "__main__":
    unittest.main()
