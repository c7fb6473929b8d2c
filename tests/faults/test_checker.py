#!/usr/bin/env python3
"""Unit tests of the checker, the pattern rules and the soak's leak rule on made-up histories:
each failure the checker exists to catch must be caught, and a clean history must pass."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import records  # noqa: E402
import soak  # noqa: E402
from patterns import matches  # noqa: E402

KEYS = ["a.x", "b.y"]  # id % 2: even -> a.x, odd -> b.y
HANDLERS = [{"name": "A", "patterns": ["a.*"], "poison": None, "ghost": False, "ack_timeout_s": 5.0},
            {"name": "C", "patterns": ["#"], "poison": [5, 3], "ghost": False, "ack_timeout_s": 5.0}]
MS = 1_000_000


def write(path, recs):
    with open(path, "wb") as f:
        for r in recs:
            f.write(records.RECORD.pack(*r))


class World:
    """A clean run of ids 1..6: A gets the even ones, C all; C NAKs id 3 for ever (poison 5:3)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="faults-checker-test-")
        self.pub = []
        self.handler = {"A": [], "C": []}
        self.more_instances = {}  # (name, instance) -> records of that instance
        self.answers = []
        self.audit = []
        self.history = [{"kind": "jetfan_start", "t": 1}, {"kind": "audit_start", "t": 10**12}]
        t = 1000 * MS
        for i in range(1, 7):
            self.pub += [(t, 0, i, 0, records.ATTEMPT, 0, 0), (t + 1, i, i, 0, records.STORED, 0, 0)]
            for name in ("A", "C"):
                if name == "A" and i % 2:
                    continue
                poison = name == "C" and i == 3
                self.deliver(name, i, t + 2 * MS, answer=records.NAKED if poison else records.ACKED)
            if i != 3:
                self.answers.append((t + 5 * MS, i, 0, 1, 1, 0, 0))
            t += 10 * MS
        self.audit = [(3, 3, 7)]
        self.final = {"num_pending": 0, "num_ack_pending": 1}
        self.exit = None  # the consumer once jetfan is gone; None: not read
        self.handlers = HANDLERS
        self.run_extra = {}  # more of run.json

    def came_back_unacked(self, ident, deliveries):
        """No +ACK of ident on the wire, and the auditor got it back with that delivery count."""
        self.answers = [a for a in self.answers if a[1] != ident]
        self.audit.append((ident, ident, deliveries))

    def deliver(self, name, ident, t, answer=records.ACKED, deliveries=1, conn=1, flags=0):
        self.handler[name].append((t, ident, ident, deliveries, records.DELIVERED, flags, conn))
        if answer:
            self.handler[name].append((t + MS, ident, ident, deliveries, answer, 0, conn))

    def check(self):
        write(os.path.join(self.dir, "publisher.rec"), self.pub)
        files = {}
        for name, recs in self.handler.items():
            files[name] = [f"handler-{name}-0-1.rec"]
            write(os.path.join(self.dir, files[name][0]), sorted(recs))
        for (name, instance), recs in self.more_instances.items():
            files[name].append(f"handler-{name}-{instance}-1.rec")
            write(os.path.join(self.dir, files[name][-1]), sorted(recs))
        write(os.path.join(self.dir, "answers.rec"), self.answers)
        with open(os.path.join(self.dir, "audit.txt"), "w") as f:
            f.writelines(f"{s} {i} {d}\n" for s, i, d in self.audit)
        with open(os.path.join(self.dir, "history.jsonl"), "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in self.history)
        run = {"name": "t", "seed": 1, "keys": KEYS, "ack_wait_s": 5, "settled": True, "audited": True,
               "final_consumer": self.final, "exit_consumer": self.exit, "publish_start": 900 * MS, "publish_stop": 1100 * MS,
               "handlers": [dict(h, record_files=files[h["name"]]) for h in self.handlers]}
        run.update(self.run_extra)
        with open(os.path.join(self.dir, "run.json"), "w") as f:
            json.dump(run, f)
        return checker.check(self.dir)


class CheckerTest(unittest.TestCase):
    def test_clean_history_passes(self):
        r = World().check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["C"]["poison"], 1)

    def test_lost(self):
        w = World()
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 4]
        r = w.check()
        self.assertEqual(r["handlers"]["A"]["lost"], 1)
        self.assertEqual(r["handlers"]["A"]["lost_sample"], [4])

    def test_unexpected_key_and_never_published(self):
        w = World()
        w.deliver("A", 5, 2000 * MS)       # b.y: not A's
        w.deliver("C", 99, 2000 * MS)      # never published
        w.deliver("C", 2, 2000 * MS, flags=1)  # key differs from the payload's
        r = w.check()
        self.assertEqual(r["handlers"]["A"]["unexpected"], 1)
        self.assertEqual(r["handlers"]["C"]["unexpected"], 2)

    def test_duplicate_after_ack_in_one_jetfan_run_is_a_finding(self):
        w = World()
        w.deliver("A", 2, 3000 * MS, deliveries=2)
        r = w.check()
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"].get("after_ack"), 1)
        self.assertTrue(any("DUPLICATE AFTER ACK" in f for f in r["findings"]))

    def test_duplicate_after_jetfan_restart_or_nak_is_allowed(self):
        w = World()
        w.history.append({"kind": "jetfan_start", "t": 2500 * MS})
        w.deliver("A", 2, 3000 * MS, deliveries=2)
        w.handler["A"].append((4000 * MS, 4, 4, 1, records.DELIVERED, 0, 1))  # no answer: killed
        w.deliver("A", 4, 5000 * MS, deliveries=2)
        r = w.check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_jetfan_restart": 2, "after_failure": 1})

    def test_exit_0_after_sigterm_that_beat_the_drain_kill_is_not_a_bad_exit(self):
        w = World()
        w.history += [{"kind": "jetfan_sigterm", "gen": 1, "t": 2000 * MS},
                      {"kind": "jetfan_exit", "gen": 1, "how": "SIGKILL", "status": 0, "t": 2100 * MS}]
        self.assertEqual(w.check()["findings"], [])

    def test_exit_of_its_own_before_a_sigkill_without_sigterm_is_a_bad_exit(self):
        w = World()
        w.history += [{"kind": "jetfan_exit", "gen": 1, "how": "SIGKILL", "status": 0, "t": 2100 * MS},
                      {"kind": "jetfan_exit", "gen": 2, "how": "SIGKILL", "status": -6, "t": 2200 * MS}]
        self.assertEqual(sum("BAD EXIT" in f for f in w.check()["findings"]), 2)

    def test_ack_read_after_a_long_sigstop_is_late_when_jetfan_failed_the_delivery(self):
        w = World()
        w.history.append({"kind": "fault", "name": "handler SIGSTOP", "detail": "A-0 for 6.0 s",
                          "begin": 1500 * MS, "end": 7500 * MS, "t": 7500 * MS, "stops_jetfan": False})
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 4]
        w.deliver("A", 4, 7600 * MS)                 # read from the socket after SIGCONT, acked
        w.answers = [a for a in w.answers if a[1] != 4]
        w.answers.append((6600 * MS, 4, 0, 1, 2, 0, 0))  # jetfan had NAKed it: A timed out
        w.deliver("A", 4, 8000 * MS, deliveries=2)
        w.answers.append((8100 * MS, 4, 0, 2, 1, 0, 0))
        r = w.check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_failure": 1})

    def test_ack_read_after_a_long_sigstop_still_counts_when_jetfan_did_not_fail_it(self):
        w = World()
        w.history.append({"kind": "fault", "name": "handler SIGSTOP", "detail": "A-0 for 6.0 s",
                          "begin": 1500 * MS, "end": 7500 * MS, "t": 7500 * MS, "stops_jetfan": False})
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 4]
        w.deliver("A", 4, 7600 * MS)
        w.answers = [a for a in w.answers if a[1] != 4]
        w.deliver("A", 4, 8000 * MS, deliveries=2)
        w.answers.append((8100 * MS, 4, 0, 2, 1, 0, 0))
        r = w.check()
        self.assertTrue(any("DUPLICATE AFTER ACK" in f for f in r["findings"]))

    def test_an_older_delivery_read_after_a_long_sigstop_is_a_stale_copy_not_a_duplicate_after_ack(self):
        w = World()
        w.history.append({"kind": "fault", "name": "handler SIGSTOP", "detail": "A-1 for 6.0 s",
                          "begin": 1500 * MS, "end": 7500 * MS, "t": 7500 * MS, "stops_jetfan": False})
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 4]
        w.answers = [a for a in w.answers if a[1] != 4]
        w.answers.append((6500 * MS, 4, 0, 1, 2, 0, 0))  # jetfan failed delivery 1 (timeout)
        w.deliver("A", 4, 7000 * MS, deliveries=2)  # instance 0 got delivery 2 and acked it
        w.answers.append((7100 * MS, 4, 0, 2, 1, 0, 0))
        # instance 1, stopped, reads delivery 1 from its socket after SIGCONT
        w.more_instances[("A", 1)] = [(7600 * MS, 4, 4, 1, records.DELIVERED, 0, 1)]
        r = w.check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_failure": 1})

    @staticmethod
    def a1_stopped_holding_id_4(order_by):
        """A (ordered by `order_by`) with A-1 stopped for 6 s from 1.5 s, and id 4 left out of A-0's
        and the answers' histories for the case to write."""
        w = World()
        w.handlers = [dict(h, order_by=order_by) if h["name"] == "A" else h for h in HANDLERS]
        w.history.append({"kind": "fault", "name": "handler SIGSTOP", "detail": "A-1 for 6.0 s",
                          "begin": 1500 * MS, "end": 7500 * MS, "t": 7500 * MS, "stops_jetfan": False})
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 4]
        w.answers = [a for a in w.answers if a[1] != 4]
        return w

    def stale_copy_of_a_retry_inside_jetfan(self, order_by):
        """A-1 is stopped for 6 s holding delivery 1 of id 4; jetfan fails it and gives it to A-0
        itself, as it does for an ordered handler: the server's delivery count stays 1."""
        w = self.a1_stopped_holding_id_4(order_by)
        w.deliver("A", 4, 7000 * MS, deliveries=1)
        w.answers.append((7100 * MS, 4, 0, 1, 1, 0, 0))
        w.more_instances[("A", 1)] = [(7600 * MS, 4, 4, 1, records.DELIVERED, 0, 1)]
        return w.check()

    def test_a_stale_copy_of_an_ordered_handlers_retry_in_jetfan_is_not_a_duplicate_after_ack(self):
        r = self.stale_copy_of_a_retry_inside_jetfan("key")
        # (The made-up history has id 6, of 4's key, before 4: an order finding, beside the point.)
        self.assertEqual([f for f in r["findings"] if not f.startswith("ORDER")], [])
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_failure": 1})

    def retry_inside_jetfan_after_a_stale_copy_was_acked(self, order_by):
        """A-1 is stopped for 6 s holding delivery 1 of id 4; jetfan fails it by ack_timeout, and its
        retry (inside jetfan for an ordered handler, after the retry delay) reaches A-1 itself only
        after A-1, resumed, read the stale copy and acked it."""
        w = self.a1_stopped_holding_id_4(order_by)
        w.more_instances[("A", 1)] = [(7500 * MS + 25000, 4, 4, 1, records.DELIVERED, 0, 1),
                                      (7500 * MS + 50000, 4, 4, 1, records.ACKED, 0, 1),
                                      (7624 * MS, 4, 4, 1, records.DELIVERED, 0, 1),
                                      (7625 * MS, 4, 4, 1, records.ACKED, 0, 1)]
        w.answers.append((7700 * MS, 4, 0, 1, 1, 0, 0))
        return w.check()

    def test_an_ordered_handlers_retry_after_a_stale_copy_was_acked_is_not_a_duplicate_after_ack(self):
        r = self.retry_inside_jetfan_after_a_stale_copy_was_acked("key")
        self.assertEqual([f for f in r["findings"] if not f.startswith("ORDER")], [])
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_failure": 1})

    def test_that_retry_for_an_unordered_handler_stays_a_finding(self):
        r = self.retry_inside_jetfan_after_a_stale_copy_was_acked(None)
        self.assertTrue(any("DUPLICATE AFTER ACK" in f for f in r["findings"]), r["findings"])

    def test_the_same_delivery_count_again_for_an_unordered_handler_stays_a_finding(self):
        r = self.stale_copy_of_a_retry_inside_jetfan(None)
        self.assertTrue(any("DUPLICATE AFTER ACK" in f for f in r["findings"]), r["findings"])

    def test_two_copies_at_once(self):
        w = World()
        # a second copy of 6 on another connection, before the first was answered
        w.handler["C"] = [x for x in w.handler["C"] if x[2] != 6]
        w.handler["C"] += [(1050 * MS, 6, 6, 1, records.DELIVERED, 0, 1), (1090 * MS, 6, 6, 1, records.ACKED, 0, 1),
                           (1060 * MS, 6, 6, 2, records.DELIVERED, 0, 2), (1061 * MS, 6, 6, 2, records.ACKED, 0, 2)]
        r = w.check()
        self.assertEqual(r["handlers"]["C"]["concurrent"], 1)

    def test_poison_acked_at_server_breaks_the_ack_rule(self):
        w = World()
        w.answers.append((1500 * MS, 3, 0, 2, 1, 0, 0))
        w.audit = []
        w.final = {"num_pending": 0, "num_ack_pending": 0}
        r = w.check()
        self.assertTrue(any("ACK RULE BROKEN (seen on the wire)" in f for f in r["findings"]))
        self.assertEqual(r["ack_rule"]["acked_although_unconfirmed"], 1)

    def test_acked_before_every_recipient_confirmed(self):
        w = World()
        w.answers = [(1001 * MS if a[1] == 2 else a[0],) + a[1:] for a in w.answers]
        w.handler["A"] = [(x[0] + 2000 * MS,) + x[1:] if x[2] == 2 else x for x in w.handler["A"]]
        r = w.check()
        self.assertTrue(any("ACKED BEFORE ALL CONFIRMED" in f for f in r["findings"]))

    def test_left_unacked(self):
        w = World()
        w.came_back_unacked(4, 2)
        w.final = {"num_pending": 0, "num_ack_pending": 2}
        r = w.check()
        self.assertEqual(r["ack_rule"]["left_unacked"], 1)
        self.assertFalse(r["consumer_settled"])

    def test_acked_message_offered_anew_is_not_left_unacked_when_the_server_holds_only_the_unconfirmed(self):
        # nats-server 2.9's o.sseq-- offers the last one again as a first delivery, and the
        # watcher of answers was reconnecting when jetfan acked it.
        w = World()
        w.came_back_unacked(6, 1)
        w.exit = {"num_pending": 0, "num_ack_pending": 1}
        r = w.check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["ack_rule"]["reoffered_by_server_after_ack"], 1)

    def test_left_unacked_when_the_server_holds_more_than_the_unconfirmed(self):
        w = World()
        w.came_back_unacked(6, 1)
        w.exit = {"num_pending": 0, "num_ack_pending": 2}
        r = w.check()
        self.assertEqual(r["ack_rule"]["left_unacked_sample"], [6])
        self.assertTrue(any("NOT SETTLED" in f for f in r["findings"]))

    @staticmethod
    def killed_after_delivery(after_ms):
        """A-0 got id 4 at 1032 ms, recorded no answer, and was killed after_ms later."""
        w = World()
        w.handler["A"] = [x for x in w.handler["A"] if not (x[2] == 4 and x[4] == records.ACKED)]
        w.history.append({"kind": "fault", "name": "handler SIGKILL", "detail": "A-0",
                          "begin": (1032 + after_ms) * MS, "end": 2000 * MS, "t": 2000 * MS, "stops_jetfan": False})
        return w

    def test_an_unanswered_delivery_just_before_its_instance_was_killed_may_have_been_acked(self):
        # The handler writes its ACK before its record; killed in between, jetfan has the ACK.
        r = self.killed_after_delivery(10).check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["A"]["answer_unknown"], 1)

    def test_an_unanswered_delivery_long_before_its_instance_was_killed_was_not_redelivered(self):
        r = self.killed_after_delivery(500).check()
        self.assertTrue(any("NEVER REDELIVERED" in f for f in r["findings"]), r["findings"])

    def test_unanswered_publish_stored_after_the_run_is_late_not_lost(self):
        w = World()
        t = 3000 * MS
        w.pub.append((t, 0, 8, 0, records.ATTEMPT, 0, 0))  # no answer: the publisher stopped
        w.audit.append((8, 8, 1))  # the auditor alone finds it, unacknowledged
        w.history.append({"kind": "settled", "t": 2000 * MS})
        r = w.check()
        self.assertEqual(r["findings"], [])
        self.assertTrue(any("LATE STORE" in f for f in r["server_findings"]))

    def test_unanswered_publish_some_handlers_got_after_the_run_settled_is_late_not_lost(self):
        w = World()
        w.pub.append((3000 * MS, 0, 7, 0, records.ATTEMPT, 0, 0))
        w.history.append({"kind": "settled", "t": 2000 * MS})
        w.deliver("C", 7, 3100 * MS, answer=None)  # C got it, then jetfan stopped; A never did
        w.audit.append((7, 7, 2))
        r = w.check()
        self.assertEqual(r["handlers"]["C"]["lost"], 0)
        self.assertTrue(any("LATE STORE" in f for f in r["server_findings"]))

    def test_unanswered_publish_a_handler_got_before_the_run_settled_counts(self):
        w = World()
        w.pub.append((1500 * MS, 0, 9, 0, records.ATTEMPT, 0, 0))  # b.y: C only
        w.deliver("C", 9, 1600 * MS, answer=None)  # before the run settled, C got it and never answered
        w.audit.append((9, 9, 2))
        w.history.append({"kind": "settled", "t": 2000 * MS})
        w.final = {"num_pending": 0, "num_ack_pending": 2}
        r = w.check()
        self.assertFalse(any("LATE STORE" in f for f in r["server_findings"]))

    def test_unanswered_publish_the_consumer_had_when_settled_is_still_lost(self):
        w = World()
        w.pub.append((3000 * MS, 0, 8, 0, records.ATTEMPT, 0, 0))
        w.audit.append((8, 8, 1))
        w.final = {"num_pending": 0, "num_ack_pending": 2}  # jetfan held it and gave it to no one
        r = w.check()  # the run never settled with it missing: it counts
        self.assertEqual(r["handlers"]["A"]["lost_sample"], [8])
        self.assertEqual(r["server_findings"], [])

    def test_acknowledged_publish_no_handler_got_is_lost(self):
        w = World()
        w.pub += [(3000 * MS, 0, 8, 0, records.ATTEMPT, 0, 0), (3001 * MS, 8, 8, 0, records.STORED, 0, 0)]
        w.audit.append((8, 8, 1))
        w.final = {"num_pending": 0, "num_ack_pending": 2}
        r = w.check()
        self.assertEqual(r["handlers"]["A"]["lost_sample"], [8])


def delivery(ident, t_ms, answer="ack", answer_ms=None, conn=1, seq=None):
    """One delivery as check() builds them: arrived at t_ms, answered `answer_ms` later (1 ms)."""
    return {"t": t_ms * MS, "id": ident, "seq": ident if seq is None else seq, "aux": 1, "flags": 0,
            "file": f"handler-O-0-{conn}.rec", "conn": conn, "answer": answer,
            "answer_t": None if answer is None else (t_ms + (1 if answer_ms is None else answer_ms)) * MS}


class OrderCheckTest(unittest.TestCase):
    """check_order on made-up deliveries of an ordered handler: ids 1..4 alternate keys a.x / b.y."""

    @staticmethod
    def order(items, wants=(1, 2, 3, 4), order_by="key", **kw):
        return checker.check_order(order_by, items, lambda i: KEYS[i % 2], set(wants), 5000 * MS, **kw)

    def test_in_order_one_at_a_time_passes(self):
        # Keys interleave (2 and 1 at once are of different keys); each key's next comes after the ACK.
        items = [delivery(2, 0, answer_ms=1000), delivery(1, 10, answer_ms=1000),
                 delivery(4, 1500), delivery(3, 1600)]
        entry, findings = self.order(items)
        self.assertEqual(findings, [])
        self.assertEqual(entry["keys"], 2)

    def test_two_of_one_key_at_once_fails(self):
        # 4 arrives on another connection while 2 (same key) is unanswered.
        items = [delivery(2, 0, answer_ms=3000), delivery(4, 1000, conn=2), delivery(1, 0), delivery(3, 100)]
        entry, findings = self.order(items)
        self.assertEqual(entry["two_in_flight"], 1)
        self.assertTrue(any("in flight at once" in f for f in findings))

    def test_later_before_earlier_confirmed_fails(self):
        # 4 (seq 4) first arrives before 2 (seq 2, same key) came at all: 2 was NAKed, then retried late.
        items = [delivery(2, 0, answer="nak"), delivery(4, 1000), delivery(2, 3000), delivery(1, 0), delivery(3, 100)]
        entry, findings = self.order(items)
        self.assertEqual(entry["before_earlier_confirmed"], 1)
        self.assertEqual(entry["before_earlier_confirmed_sample"][0]["id"], 4)
        self.assertTrue(any("before an earlier one" in f for f in findings))

    def test_earlier_never_confirmed_fails_unless_settled_otherwise(self):
        items = [delivery(2, 0, answer="nak"), delivery(4, 1000), delivery(1, 0), delivery(3, 100)]
        self.assertEqual(self.order(items)[0]["before_earlier_confirmed"], 1)
        self.assertEqual(self.order(items, exempt={2})[1], [])

    def test_unanswered_and_stale_deliveries_are_not_in_flight(self):
        # 2's instance was killed (no answer): jetfan gave it again at once; 4 follows its ACK.
        items = [delivery(2, 0, answer=None), delivery(2, 100, conn=2), delivery(4, 200, conn=2),
                 delivery(1, 0), delivery(3, 100)]
        self.assertEqual(self.order(items)[1], [])
        # A copy read late by a stopped instance overlaps; `stale` says so.
        items = [delivery(2, 0, answer_ms=10), delivery(4, 1000, answer_ms=10), delivery(2, 1005, answer_ms=3000),
                 delivery(1, 0), delivery(3, 100)]
        items[2]["aux"] = 2
        self.assertEqual(self.order(items, stale=lambda d: d["t"] == 1005 * MS)[1], [])

    def test_order_by_token(self):
        self.assertEqual(checker.order_key_of("token:1", "a.x"), "a")
        self.assertIsNone(checker.order_key_of("token:3", "a.x"))
        self.assertEqual(checker.order_key_of("key", "a.x"), "a.x")

    def test_check_reports_order_for_an_ordered_handler(self):
        HANDLERS[0]["order_by"] = "key"
        try:
            w = World()
            r = w.check()
            self.assertEqual(r["findings"], [])
            self.assertEqual(r["handlers"]["A"]["order"]["keys"], 1)
            # A gets 4 before it confirmed 2.
            w = World()
            w.handler["A"] = [x for x in w.handler["A"] if not (x[2] == 2 and x[4] == records.ACKED)]
            w.deliver("A", 2, 2000 * MS)
            r = w.check()
            self.assertTrue(any(f.startswith("ORDER:") for f in r["findings"]))
            self.assertGreater(r["order_violations"], 0)
        finally:
            del HANDLERS[0]["order_by"]


def _two_kills(s):
    """A run with jetfan killed at 10 s and 14 s, each back a second later."""
    run = {"publish_start": 1, "publish_stop": 100 * s}
    faults = [{"name": "jetfan SIGKILL", "begin": 10 * s, "end": 11 * s},
              {"name": "jetfan SIGKILL", "begin": 14 * s, "end": 15 * s}]
    return run, faults, [0, 11 * s, 15 * s]


class OrderedResumeTest(unittest.TestCase):
    """progress_figures: an ordered handler's resume after a fault counts from the latest restart."""

    def test_resume_counts_from_the_latest_restart_for_an_ordered_handler_only(self):
        from progress import progress_figures
        s = 1_000_000_000
        run, faults, restarts = _two_kills(s)
        # Each gets id 1 at 1 s, then nothing new until 19 s (id 2, stored at 9 s).
        deliveries = {name: [delivery(1, 1000), delivery(2, 19000)] for name in ("O", "U")}
        stored_at = {1: 1 * s, 2: 9 * s}
        handlers = [{"name": "O", "order_by": "key"}, {"name": "U"}]
        first = progress_figures(run, deliveries, handlers, faults, stored_at, (), restarts)["per_fault"][0]
        self.assertEqual(first["slowest"], "U")
        self.assertAlmostEqual(first["resume_s"], 8.0)
        self.assertAlmostEqual(first["unordered_resume_s"], 8.0)
        self.assertAlmostEqual(first["ordered_resume_s"], 4.0)
        ordered_only = progress_figures(run, deliveries, handlers[:1], faults, stored_at, (), restarts)
        self.assertAlmostEqual(ordered_only["per_fault"][0]["resume_s"], 4.0)
        self.assertAlmostEqual(ordered_only["max_ordered_resume_s"], 4.0)
        self.assertAlmostEqual(ordered_only["max_resume_s"], 0.0)

    def test_an_unordered_handler_behind_a_full_consumer_waits_as_an_ordered_one(self):
        """While the consumer sits at MaxAckPending, what an ordered handler has not confirmed stops
        the server from sending anything new: the unordered handler's wait counts from the latest
        restart as the ordered one's does. Not without an ordered handler, nor if it was not full
        while the handler waited."""
        from progress import progress_figures
        s = 1_000_000_000
        run, faults, restarts = _two_kills(s)
        deliveries = {name: [delivery(1, 1000), delivery(2, 19000)] for name in ("O", "U")}
        stored_at = {1: 1 * s, 2: 9 * s}
        handlers = [{"name": "O", "order_by": "key"}, {"name": "U"}]
        behind = progress_figures(run, deliveries, handlers, faults, stored_at, (), restarts, [12 * s])
        first = behind["per_fault"][0]
        self.assertAlmostEqual(first["unordered_resume_s"], 0.0)
        self.assertAlmostEqual(first["ordered_resume_s"], 4.0)
        self.assertAlmostEqual(behind["per_fault"][1]["unordered_resume_s"], 4.0)  # not full after that one
        alone = progress_figures(run, {"U": deliveries["U"]}, handlers[1:], faults, stored_at, (), restarts, [12 * s])
        self.assertAlmostEqual(alone["per_fault"][0]["unordered_resume_s"], 8.0)
        not_then = progress_figures(run, deliveries, handlers, faults, stored_at, (), restarts, [20 * s])
        self.assertAlmostEqual(not_then["per_fault"][0]["unordered_resume_s"], 8.0)


class PatternTest(unittest.TestCase):
    def test_rules(self):
        self.assertTrue(matches("a.*", "a.x"))
        self.assertFalse(matches("a.*", "a.x.y"))
        self.assertTrue(matches("#", ""))
        self.assertTrue(matches("#", "a.b.c"))
        self.assertTrue(matches("a.#.c", "a.c"))
        self.assertTrue(matches("a.#.c", "a.b.b.c"))
        self.assertTrue(matches("b.#", "b"))
        self.assertTrue(matches("a.>", "a.b.c"))
        self.assertFalse(matches("a.>", "a"))
        self.assertTrue(matches("*.y", "b.y"))
        self.assertFalse(matches("*.y", "c.y.z"))


class TwoJetfansTest(unittest.TestCase):
    """The failover class's rules: instance 0 of each handler on jetfan J1, instance 1 on J2."""

    def world(self):
        w = World()
        w.run_extra = {"instance_side": {"A-0": "J1", "C-0": "J1", "A-1": "J2", "C-1": "J2"}}
        w.history = [{"kind": "jetfan_start", "side": "J1", "gen": 1, "t": 1},
                     {"kind": "jetfan_start", "side": "J2", "gen": 1, "t": 2},
                     {"kind": "pin", "side": "J1", "gen": 1, "role": "active", "gained": 1, "since": 3, "t": 4},
                     {"kind": "audit_start", "t": 10**12}]
        w.more_instances[("A", 1)] = []
        return w

    def test_a_duplicate_on_the_other_jetfan_after_a_failover_is_allowed(self):
        w = self.world()
        w.more_instances[("A", 1)].append((3000 * MS, 2, 2, 2, records.DELIVERED, 0, 1))
        w.more_instances[("A", 1)].append((3001 * MS, 2, 2, 2, records.ACKED, 0, 1))
        r = w.check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_failover": 1})

    def test_a_duplicate_after_the_same_jetfan_lost_and_regained_its_pin_is_allowed_without_it_not(self):
        for regained in (True, False):
            w = self.world()
            if regained:
                w.history.insert(3, {"kind": "pin", "side": "J1", "gen": 1, "role": "active", "gained": 2,
                                     "since": 2500 * MS, "t": 2600 * MS})
            w.deliver("A", 2, 3000 * MS, deliveries=2)
            r = w.check()
            self.assertEqual(any("DUPLICATE AFTER ACK" in f for f in r["findings"]), not regained)

    def test_two_copies_at_once_on_two_jetfans(self):
        """With the same delivery count the server cannot have given both: a finding. With a higher one
        the new owner got it again while the former one still had its copy out: counted, allowed."""
        for deliveries, finding in ((1, True), (2, False)):
            w = self.world()
            w.deliver("A", 8, 5000 * MS, answer=None)
            w.handler["A"].append((5100 * MS, 8, 8, 1, records.ACKED, 0, 1))
            w.more_instances[("A", 1)] += [(5050 * MS, 8, 8, deliveries, records.DELIVERED, 0, 1),
                                           (5060 * MS, 8, 8, deliveries, records.ACKED, 0, 1)]
            w.pub += [(4900 * MS, 0, 8, 0, records.ATTEMPT, 0, 0), (4900 * MS + 1, 8, 8, 0, records.STORED, 0, 0)]
            w.answers.append((5200 * MS, 8, 0, 1, 1, 0, 0))
            w.deliver("C", 8, 5000 * MS)
            r = w.check()
            self.assertEqual(any("CONCURRENT COPIES" in f for f in r["findings"]), finding, r["findings"])
            self.assertEqual(r["two_copies_across_failover"], 0 if finding else 1)

    def test_the_standby_delivering_in_a_steady_window_is_a_finding(self):
        w = self.world()
        w.history.insert(3, {"kind": "steady", "begin": 900 * MS, "end": 1100 * MS, "owner": "J2", "t": 1100 * MS})
        r = w.check()
        self.assertTrue(any("STANDBY DELIVERED" in f for f in r["findings"]), r["findings"])
        w = self.world()
        w.history.insert(3, {"kind": "steady", "begin": 900 * MS, "end": 1100 * MS, "owner": "J1", "t": 1100 * MS})
        self.assertEqual(w.check()["findings"], [])


class LedgerSplitTest(unittest.TestCase):
    """Duplicates after a jetfan restart split by how long before it the handler had confirmed: more
    than the ledger's interval + checker.LEDGER_MARGIN_S (the confirmation ledger must remove those)
    or not. A finding only with the ledger on, in checker.LEDGER_CLASSES."""

    KILL = 4013 * MS  # 3.0 s after A confirmed id 2 (at 1013 ms)
    LEDGER = {"bucket": "FAULTS_LEDGER", "interval_s": 1.0}

    def world(self, name="t", ledger=None):
        """Ids 2 and 4 (a.x: A and C) are still held for C, which never answered them, when jetfan
        generation 1 is killed: A confirmed id 2 3.0 s and id 4 0.2 s before. After the restart both
        come again to both, who ACK them, and jetfan acks them at the server."""
        w = World()
        w.run_extra = {"name": name, "ledger": ledger}
        w.handler["C"] = [x for x in w.handler["C"] if x[2] not in (2, 4) or x[4] == records.DELIVERED]
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 4]
        w.deliver("A", 4, self.KILL - 201 * MS)
        w.answers = [a for a in w.answers if a[1] not in (2, 4)]
        w.history[1:1] = [{"kind": "jetfan_exit", "gen": 1, "how": "SIGKILL", "status": -9, "t": self.KILL},
                          {"kind": "jetfan_start", "gen": 2, "t": self.KILL + 300 * MS}]
        for ident in (2, 4):
            for name in ("A", "C"):
                w.deliver(name, ident, self.KILL + (500 + 10 * ident) * MS, deliveries=2)
            w.answers.append((self.KILL + 600 * MS, ident, 0, 2, 1, 0, 0))
        return w

    def test_confirmed_3_s_before_the_kill_is_split_from_confirmed_0_2_s_before(self):
        r = self.world().check()
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"],
                         {checker.LONG_BEFORE: 1, "after_jetfan_restart": 1})
        self.assertEqual(r["handlers"]["C"]["duplicate_causes"], {"after_failure": 2})
        sample = r["handlers"]["A"]["confirmed_long_before_sample"]
        self.assertEqual([(x["id"], x["age_s"], x["jetfan_ended_t"]) for x in sample], [(2, 3.0, self.KILL)])
        self.assertEqual(r[checker.LONG_BEFORE], 1)
        # No ledger in the run: judged with the default interval, reported only (the "before" figure).
        self.assertEqual(r["ledger"], {"on": False, "bucket": None, "interval_s": 1.0, "margin_s": 0.5})
        self.assertEqual(r["findings"], [])

    def test_with_the_ledger_on_it_is_a_finding_in_the_classes_that_end_or_stop_jetfan_only(self):
        for name, ledger, finding in (("jetfan-kill", self.LEDGER, True), ("jetfan-stop", self.LEDGER, True),
                                      ("sigterm", self.LEDGER, True), ("failover", self.LEDGER, True),
                                      ("jetfan-kill", None, False), ("server", self.LEDGER, False)):
            r = self.world(name, ledger).check()
            self.assertEqual(r[checker.LONG_BEFORE], 1, name)
            self.assertEqual(r["ledger"]["on"], ledger is not None)
            found = [f for f in r["findings"] if f.startswith("CONFIRMED BEFORE THE RESTART")]
            self.assertEqual(len(found), 1 if finding else 0, (name, ledger))
            self.assertEqual(len(r["findings"]), len(found), r["findings"])
            if finding:
                self.assertIn("handler A was given again 1 message(s)", found[0])
                self.assertIn("FAULTS_LEDGER", found[0])
        # A run with none confirmed long before passes with the ledger on.
        w = self.world("jetfan-kill", self.LEDGER)
        w.handler["A"] = [x for x in w.handler["A"] if x[2] != 2 or x[0] > self.KILL]
        w.deliver("A", 2, self.KILL - 301 * MS)
        r = w.check()
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_jetfan_restart": 2})
        self.assertEqual(r["findings"], [])

    def test_the_interval_is_the_runs(self):
        r = self.world("jetfan-kill", {"bucket": "B", "interval_s": 3.0}).check()  # 3.0 s < 3.0 + 0.5
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_jetfan_restart": 2})
        self.assertEqual(r["findings"], [])

    def test_a_sigterm_ends_the_jetfan_that_drains(self):
        w = self.world()
        w.history.insert(1, {"kind": "jetfan_sigterm", "gen": 1, "t": 2013 * MS})  # 1.0 s after id 2's confirmation
        r = w.check()
        self.assertEqual(r["handlers"]["A"]["duplicate_causes"], {"after_jetfan_restart": 2})

    def test_a_write_due_while_the_server_was_down_is_not_counted_on_until_tried_again(self):
        """Id 2's write was due at 2013 ms. A server down then (or within the margin of it) may have
        taken it in flight: it fails after the answer timeout (5 s) and goes again an interval later,
        after the kill at 4013 ms. A server down and back before it does not matter."""
        for kill_ms, start_ms, split in ((1500, 3700, False), (1800, 1900, False), (2400, 2450, False),
                                         (1200, 1400, True), (2600, 2700, True)):
            w = self.world()
            w.history[1:1] = [{"kind": "server_kill", "node": "n1", "t": kill_ms * MS},
                              {"kind": "server_start", "node": "n1", "t": start_ms * MS}]
            causes = w.check()["handlers"]["A"]["duplicate_causes"]
            self.assertEqual(causes.get(checker.LONG_BEFORE, 0), 1 if split else 0, (kill_ms, start_ms))

    def test_a_write_due_while_jetfan_was_stopped_counts_from_the_sigcont(self):
        # Id 2's write, due at 2013 ms, goes out an interval after the SIGCONT at the latest.
        for stop_ms, cont_ms, split in ((1900, 2400, True), (1900, 3000, False)):  # 2400 + 1000 + 500 < 4013
            w = self.world()
            w.history.insert(1, {"kind": "fault", "name": "jetfan SIGSTOP > AckWait", "begin": stop_ms * MS,
                                 "end": cont_ms * MS, "stops_jetfan": True})
            causes = w.check()["handlers"]["A"]["duplicate_causes"]
            self.assertEqual(causes.get(checker.LONG_BEFORE, 0), 1 if split else 0, cont_ms)

    def test_a_write_held_and_dropped_with_the_kill_in_the_ack_window_is_not_counted(self):
        w = self.world()
        w.history.insert(1, {"kind": "fault", "name": "jetfan SIGKILL in the ack window", "begin": 1800 * MS,
                             "end": self.KILL + 300 * MS, "stops_jetfan": False})
        self.assertEqual(w.check()["handlers"]["A"]["duplicate_causes"], {"after_jetfan_restart": 2})

    def test_a_message_acked_on_the_wire_before_it_came_again_is_the_servers_doing(self):
        w = self.world()
        w.answers.append((2000 * MS, 2, 0, 1, 1, 0, 0))
        self.assertEqual(w.check()["handlers"]["A"]["duplicate_causes"], {"after_jetfan_restart": 2})

    def test_after_a_failover_the_takeover_or_the_fault_against_the_owner_ends_its_hold(self):
        """A-0 on J1 confirmed id 2 at 1013 ms; A-1 on J2 gets it again at 5000 ms. J2 read the ledger when
        it gained the pin: one gained before the record was due (1800 ms), or not seen at all (J2's last
        read is its start), could not have kept the copy."""
        for fault, gain_ms, split in ((None, 1800, False), ("kill", 3000, True), ("kill", None, False),
                                      ("leader", None, False), ("leader", 4500, True)):
            w = TwoJetfansTest().world()
            w.answers = [a for a in w.answers if a[1] != 2]
            w.more_instances[("A", 1)] += [(5000 * MS, 2, 2, 2, records.DELIVERED, 0, 1),
                                           (5001 * MS, 2, 2, 2, records.ACKED, 0, 1)]
            if fault:
                w.history.insert(3, {"kind": "fault", "name": fault, "scenario": fault, "victim": "J1",
                                     "begin": self.KILL, "end": self.KILL + 100 * MS, "stops_jetfan": False})
            if gain_ms:
                w.history.insert(3, {"kind": "pin", "side": "J2", "gen": 1, "role": "active", "gained": 1,
                                     "since": gain_ms * MS, "t": gain_ms * MS + 50 * MS})
            causes = w.check()["handlers"]["A"]["duplicate_causes"]
            self.assertEqual(causes, {checker.LONG_BEFORE: 1} if split else {"after_failover": 1}, (fault, gain_ms))


class DeadLetterRuleTest(unittest.TestCase):
    """The dead-letter rule (dead_letter_rule.py) on made-up deliveries of one handler with
    max_attempts 2: generation 1 before t=100, 2 from then on."""

    @staticmethod
    def gen(d):
        return 1 if d["t"] < 100 else 2

    @staticmethod
    def d(t, answer):
        return {"t": t, "answer": answer}

    def verdict(self, received, dead, wants=None):
        import dead_letter_rule
        wants = set(received) if wants is None else wants
        return dead_letter_rule.check_dead_letters(wants, received, dead, 2, self.gen)

    def test_confirmed_or_dead_lettered_once_passes(self):
        v = self.verdict({1: [self.d(1, "ack")], 2: [self.d(1, "nak"), self.d(2, "nak")]}, {2: 1})
        import dead_letter_rule
        self.assertEqual(dead_letter_rule.broken(v), [])
        self.assertEqual(v["dead_lettered"], 1)

    def test_neither_confirmed_nor_dead_lettered_fails(self):
        v = self.verdict({2: [self.d(1, "nak"), self.d(2, "nak")]}, {})
        self.assertEqual(v["unsettled"], 1)
        self.assertEqual(v["unsettled_sample"], [2])

    def test_a_message_never_received_and_not_dead_lettered_fails(self):
        v = self.verdict({}, {}, wants={7})
        self.assertEqual(v["unsettled"], 1)

    def test_dead_lettered_though_confirmed_fails(self):
        v = self.verdict({1: [self.d(1, "ack")]}, {1: 1})
        self.assertEqual(v["dead_but_confirmed"], 1)

    def test_two_dead_letters_for_one_used_up_budget_fail(self):
        v = self.verdict({2: [self.d(1, "nak"), self.d(2, "drop")]}, {2: 2})
        self.assertEqual(v["too_many_dead_letters"], 1)

    def test_a_budget_used_up_in_each_generation_allows_one_dead_letter_each(self):
        ds = [self.d(1, "nak"), self.d(2, None), self.d(150, "nak"), self.d(160, "nak")]
        v = self.verdict({2: ds}, {2: 2})
        import dead_letter_rule
        self.assertEqual(dead_letter_rule.broken(v), [])

    def test_a_budget_cut_short_by_a_restart_allows_no_dead_letter(self):
        v = self.verdict({2: [self.d(1, "nak"), self.d(150, "nak")]}, {2: 1})
        self.assertEqual(v["too_many_dead_letters"], 1)


class DeadLetteringHandlerTest(unittest.TestCase):
    """The World's C with a retry budget of 2 and dead letters: its poison, id 3, NAKed twice."""

    def world(self, dead_lettered, second_nak_ms=1025):
        w = World()
        w.handlers = [dict(h, max_attempts=2, dead_letter="dlq.C") if h["name"] == "C" else h for h in HANDLERS]
        w.deliver("C", 3, second_nak_ms * MS, answer=records.NAKED, deliveries=2)
        w.answers.append(((second_nak_ms + 5) * MS, 3, 0, 1, 1, 0, 0))  # jetfan's +ACK of id 3, once its budget was used up
        w.audit = []
        w.final = {"num_pending": 0, "num_ack_pending": 0}
        if dead_lettered:
            with open(os.path.join(w.dir, "dead_letters.txt"), "w") as f:
                f.write("C 3\n")
        return w

    def test_poison_dead_lettered_then_acked_at_the_server_passes(self):
        r = self.world(dead_lettered=True).check()
        self.assertEqual(r["findings"], [])
        self.assertEqual(r["handlers"]["C"]["dead_letter_rule"]["dead_lettered"], 1)

    def test_poison_acked_at_the_server_before_its_budget_was_used_up_is_premature(self):
        w = self.world(dead_lettered=True, second_nak_ms=3000)
        w.answers[-1] = (1100 * MS, 3, 0, 1, 1, 0, 0)  # after the first NAK, 1.9 s before the second
        r = w.check()
        self.assertTrue(any("ACKED BEFORE ALL CONFIRMED" in f for f in r["findings"]), r["findings"])

    def stopped_world(self, acked_ms):
        """C stopped from 1.1 s to 7.5 s: its second delivery, sent meanwhile, failed by ack_timeout
        (5 s) at about 6.1 s, and C read it, and NAKed it, only after SIGCONT. jetfan acked at acked_ms."""
        w = self.world(dead_lettered=True, second_nak_ms=7600)
        w.history.append({"kind": "fault", "name": "handler SIGSTOP", "detail": "C-0 for 6.4 s",
                          "begin": 1100 * MS, "end": 7500 * MS, "t": 7500 * MS, "stops_jetfan": False})
        w.answers[-1] = (acked_ms * MS, 3, 0, 1, 1, 0, 0)
        return w

    def test_a_last_attempt_read_after_a_long_sigstop_used_up_the_budget_when_it_timed_out(self):
        r = self.stopped_world(acked_ms=6200).check()
        self.assertEqual(r["findings"], [])

    def test_an_ack_before_the_last_attempt_read_after_a_sigstop_could_have_timed_out_is_premature(self):
        r = self.stopped_world(acked_ms=4000).check()  # under an ack_timeout after the stop began
        self.assertTrue(any("ACKED BEFORE ALL CONFIRMED" in f for f in r["findings"]), r["findings"])

    def test_poison_acked_at_the_server_without_its_dead_letter_breaks_both_rules(self):
        r = self.world(dead_lettered=False).check()
        self.assertTrue(any("ACK RULE BROKEN" in f for f in r["findings"]), r["findings"])
        self.assertTrue(any("DEAD LETTERS: handler C" in f for f in r["findings"]), r["findings"])


class SoakMemoryRuleTest(unittest.TestCase):
    """The soak's leak rule (soak.py): the heap in use decides; RSS only beyond what the heap explains."""

    @staticmethod
    def figures(rss_mib, heap_mib=None):
        def thirds(first, last):
            return {"median_first_third": first * 1024, "median_last_third": last * 1024}
        out = {"rss_kib": thirds(*rss_mib)}
        if heap_mib:
            out["heap_kib"] = thirds(*heap_mib)
        return out

    def test_rss_kept_by_the_allocator_after_peaks_is_no_leak_while_the_heap_is_flat(self):
        # The 2026-12-02 soak: RSS 13.4 -> 17.0 MiB in three steps at bursts of held messages.
        self.assertEqual(soak.memory_findings(self.figures((13.4, 17.0), (6.0, 6.1))), [])

    def test_a_growing_heap_is_a_leak_whatever_rss_does(self):
        findings = soak.memory_findings(self.figures((13.4, 13.5), (6.0, 9.0)))
        self.assertEqual(len(findings), 1)
        self.assertIn("heap in use grew by 3.0 MiB", findings[0])

    def test_a_heap_that_stepped_up_at_a_burst_and_stayed_below_its_peak_is_no_leak(self):
        # The 2026-12-05 soak on a busy machine: 2.0 MiB, 6.2 at a burst of 6,800 held, then 4.6 flat.
        figures = self.figures((14.6, 19.4), (2.0, 4.6))
        figures["heap_kib"]["max_before_last_third"] = 6.2 * 1024
        self.assertEqual(soak.memory_findings(figures), [])
        # Growing past every earlier peak is a leak.
        figures = self.figures((14.6, 19.4), (2.0, 6.5))
        figures["heap_kib"]["max_before_last_third"] = 6.2 * 1024
        self.assertEqual(len(soak.memory_findings(figures)), 1)

    def test_a_heap_flat_since_a_burst_in_the_last_third_is_no_leak(self):
        # The 2026-12-06 soak: 1.9 MiB, 6.3 at a burst of 6,435 held 45 s in, then 4.3 flat for 15 s.
        figures = self.figures((15.5, 18.9), (1.9, 4.3))
        figures["heap_kib"]["max_before_last_third"] = 2.5 * 1024
        figures["heap_kib"]["after_peak"] = {"samples": 13, "median_first_half": 4.34 * 1024,
                                             "median_second_half": 4.35 * 1024}
        self.assertEqual(soak.memory_findings(figures), [])
        # Still growing after the peak, or too few samples after it to tell, is a leak.
        figures["heap_kib"]["after_peak"] = {"samples": 13, "median_first_half": 4.3 * 1024,
                                             "median_second_half": 5.0 * 1024}
        self.assertEqual(len(soak.memory_findings(figures)), 1)
        figures["heap_kib"]["after_peak"] = {"samples": 5, "median_first_half": 4.3 * 1024,
                                             "median_second_half": 4.3 * 1024}
        self.assertEqual(len(soak.memory_findings(figures)), 1)

    def test_rss_growing_far_beyond_the_heap_is_memory_outside_it(self):
        findings = soak.memory_findings(self.figures((13.4, 30.0), (6.0, 6.1)))
        self.assertEqual(len(findings), 1)
        self.assertIn("memory outside the heap", findings[0])

    def test_without_the_heap_figure_rss_is_judged_as_the_heap_would_be(self):
        findings = soak.memory_findings(self.figures((13.4, 17.0)))
        self.assertEqual(len(findings), 1)
        self.assertIn("RSS grew by 3.6 MiB", findings[0])


class DeadLetteredSeqsTest(unittest.TestCase):
    """The settle wait reads which dead letters jetfan stored from its log; a changed log line must
    not make it wait for ever or stop waiting too soon."""

    def test_reads_the_stored_lines_only(self):
        import scenarios
        log = ('2026-12-04T14:42:14.743+00:00 info handler "L": stream seq 15483 dead-lettered '
               '(max_attempts 3 used up; last: nak): stored in stream "FAULTS_DLQ" at seq 268\n'
               '2026-12-04T14:42:14.744+00:00 info handler "L": publishing stream seq 15460 to dead-letter '
               'subject "dlq.faults.L" (max_attempts 3 used up; last: nak)\n'
               '2026-12-04T14:42:14.747+00:00 info handler "M": stream seq 7 dead-lettered (TERM): stored in '
               'stream "FAULTS_DLQ" at seq 269\n')
        self.assertEqual(scenarios.dead_lettered_seqs(log), {"L": {15483}, "M": {7}})

    def test_matches_what_the_daemon_logs(self):
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../daemon/dead_letter_publisher.cpp")
        with open(source) as f:
            self.assertIn('"handler \\"{}\\": stream seq {} dead-lettered ({}): stored in stream', f.read())



class FollowUpRuleTest(unittest.TestCase):
    """The follow-up rule (follow_up_rule.py): every message acknowledged at the server has its
    follow-up stored, none more than once, none for a message the handler does not match."""

    @staticmethod
    def verdict(wants, settled, copies):
        import follow_up_rule
        result = follow_up_rule.check_follow_ups(set(wants), set(settled), copies)
        return result, follow_up_rule.broken(result)

    def test_one_follow_up_of_each_settled_message_passes(self):
        result, broken = self.verdict({1, 2, 3}, {1, 2}, {1: 1, 2: 1, 3: 1})
        self.assertEqual(broken, [])
        self.assertEqual(result["stored"], 3)

    def test_a_message_settled_without_its_follow_up_fails(self):
        result, broken = self.verdict({1, 2}, {1, 2}, {1: 1})
        self.assertEqual(result["missing_sample"], [2])
        self.assertIn("without their follow-up stored", broken[0])

    def test_an_unsettled_message_may_lack_its_follow_up(self):
        self.assertEqual(self.verdict({1, 2}, {1}, {1: 1})[1], [])

    def test_a_follow_up_stored_twice_fails(self):
        result, broken = self.verdict({1}, {1}, {1: 2})
        self.assertEqual(result["doubled_sample"], [1])
        self.assertIn("more than once", broken[0])

    def test_a_follow_up_of_a_message_not_matched_fails(self):
        self.assertEqual(self.verdict({1}, {1}, {1: 1, 9: 1})[0]["unexpected_sample"], [9])

    def test_acks_jetfan_turned_into_naks_are_read_from_its_log(self):
        import follow_up_rule
        log = ('[2026-12-07 11:16:03.678] [warning] handler "F" (connection 3, pid 19882, uid 0): delivery 2 of '
               'stream seq 7 (subject "events.a.y") failed: the handler sent NAK: "jetfan made its ACK a NAK: the '
               'tied publish of request 4 failed: timeout no answer"\n'
               '[2026-12-07 11:16:03.679] [warning] handler "F" (connection 3, pid 19882, uid 0): delivery 3 of '
               'stream seq 8 (subject "events.a.y") failed: the handler sent NAK: "database down"\n')
        turned = follow_up_rule.acks_turned_into_naks(log)
        self.assertEqual(dict(turned), {"F": {7}})
        self.assertTrue(follow_up_rule.held_ack_redelivery("jetfan_resent", 7, turned["F"], False))
        self.assertTrue(follow_up_rule.held_ack_redelivery("server_restarted", 9, turned["F"], True))
        self.assertTrue(follow_up_rule.held_ack_redelivery("server_redelivered", 9, turned["F"], False))
        self.assertFalse(follow_up_rule.held_ack_redelivery("server_redelivered", 9, turned["F"], True))
        self.assertFalse(follow_up_rule.held_ack_redelivery("jetfan_resent", 8, turned["F"], False))

    def test_turned_acks_the_log_left_out_explain_as_many_resends(self):
        import follow_up_rule
        log = ('2026-12-07T15:39:03.210+00:00 warning handler "F" (connection 10, pid 1, uid 0): delivery 5 of '
               'stream seq 9 (subject "events.a.y") failed: the handler sent NAK: "jetfan made its ACK a NAK: x". '
               'It goes back. (1 more like it were not logged: failed deliveries to handler "F": the handler '
               'sent NAK)\n'
               '2026-12-07T15:39:34.790+00:00 warning 2 more like the last warning were not logged in the last '
               '10s: failed deliveries to handler "F": the handler sent NAK\n'
               '2026-12-07T15:39:34.790+00:00 warning 4 more like the last warning were not logged in the last '
               '10s: failed deliveries to handler "L": the handler sent NAK\n')
        self.assertEqual(dict(follow_up_rule.naks_not_logged(log)), {"F": 3, "L": 4})
        unlogged = [2]
        self.assertFalse(follow_up_rule.held_ack_redelivery("server_reoffered", 7, set(), True, unlogged))
        self.assertTrue(follow_up_rule.held_ack_redelivery("jetfan_resent", 7, set(), False, unlogged))
        self.assertTrue(follow_up_rule.held_ack_redelivery("jetfan_resent", 8, set(), False, unlogged))
        self.assertFalse(follow_up_rule.held_ack_redelivery("jetfan_resent", 10, set(), False, unlogged))
        self.assertEqual(unlogged, [0])

    def test_follow_ups_txt_is_read_per_handler(self):
        import follow_up_rule
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("F 3\nF 3\nF 4\nG 1\n")
        loaded = follow_up_rule.load_follow_ups(f.name)
        os.unlink(f.name)
        self.assertEqual(dict(loaded["F"]), {3: 2, 4: 1})
        self.assertEqual(dict(loaded["G"]), {1: 1})
        self.assertEqual(dict(follow_up_rule.load_follow_ups(f.name)), {})

if __name__ == "__main__":
    unittest.main()
