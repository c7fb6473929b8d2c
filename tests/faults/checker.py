"""The checker: from the histories of one run (what the publisher had stored, what every handler
instance received and answered, what the harness did and when, what the server said at the end and
what came back to the auditor), compute per handler what was lost, unexpected and duplicated, and
whether the ack rule held. Pure: it reads files, it runs nothing.

Terms:
  stored       ids the server acknowledged to the publisher, plus ids any handler or the auditor
               got (a publish whose answer was lost in a fault may still be in the stream)
  expected(h)  stored ids whose key matches h's patterns
  lost(h)      expected(h) that h never received (for a handler disconnected for good, what it
               never received must instead still be unacknowledged at the server: see ack rule)
  unexpected   received but never published, or its key does not match h's patterns, or the key
               or stream sequence differs from what was published
  duplicate    a further delivery of an id to h, classified by what the delivery before it got:
                 after_failure         h NAKed it, did not answer, was cut off, or answered late
                                       (after ack_timeout, or while jetfan was stopped)
                 after_jetfan_restart  h ACKed it, then jetfan was restarted before it was acked
                                       at the server (allowed: at least once)
                 after_restart_confirmed_long_before
                                       the same, or after a failover, but h had confirmed it more
                                       than the ledger's interval + LEDGER_MARGIN_S before that
                                       jetfan ended (see confirmed_long_before in check()): the
                                       confirmation ledger (issue 39) is there to keep these from
                                       h. A finding in LEDGER_CLASSES when the run wrote the
                                       ledger; without it, the figure of what the ledger removes
                 after_ack             h ACKed it in time, and the same jetfan gave it to h again.
                                       PROTOCOL.md: "A message a handler has ACKed is not sent to
                                       it again while jetfan runs." A finding.
  concurrent   h got a copy of an id while an earlier copy of it was still unanswered on another
               connection of h and within ack_timeout (two copies at once). A finding.
  order        for a handler with order_by (see check_order): per order key, no two deliveries in
               flight at once, and no message first arrives before every earlier one of its key
               (by stream sequence) was confirmed by that handler.
  ack rule     ids some handler never confirms (it NAKs them for ever, or it is gone for good) must
               never be acked at the server: once jetfan is stopped they must all come back to the
               auditor, and nothing else may.
"""

import bisect
import glob
import json
import os
from collections import defaultdict

import dead_letter_rule
import follow_up_rule
import records
from progress import load_full_consumer, load_monitor, progress_figures

SAMPLE = 20

# The confirmation ledger (issue 39; core/confirmation_ledger.hpp): a handler's confirmation of a
# message still held for another handler is put in the bucket `interval` after it, so that a jetfan
# started again (or the standby taking over) does not hand it to that handler again. run.json's
# "ledger" ({"bucket", "interval_s"}) says the run's jetfan wrote one; a run without it is judged
# with the default interval, so that it shows how many duplicates the ledger would remove.
LEDGER_DEFAULT_INTERVAL_S = 1.0
# A confirmation counts as written once it is older than interval + margin when its jetfan ends.
# The write goes out at `interval` after the confirmation, at the io loop's next turn, and is stored
# a round trip later (one that waited for an earlier write of the same record, a round trip more);
# a write still in flight when jetfan is killed is lost. 0.5 s covers those on loopback with room.
LEDGER_MARGIN_S = 0.5
LONG_BEFORE = "after_restart_confirmed_long_before"
# The classes whose faults end or stop jetfan: with the ledger on, LONG_BEFORE must be 0 in them.
# Elsewhere (and with the ledger off) it is only reported.
LEDGER_CLASSES = ("jetfan-kill", "jetfan-stop", "sigterm", "failover")
# Faults that drop jetfan's bytes to the server (not stops_jetfan: jetfan itself runs on): a ledger
# write sent meanwhile never arrives. So does one in flight when a server is killed.
DROPS_JETFAN_WRITES = ("jetfan SIGKILL in the ack window", "network cut")
# A ledger write the server has not answered in this long has failed and is tried again an interval
# later (daemon/ledger_writer.hpp, LedgerWriter::kAnswerTimeout).
LEDGER_ANSWER_TIMEOUT_S = 5.0


def load_run(workdir):
    with open(os.path.join(workdir, "run.json")) as f:
        return json.load(f)


def load_history(workdir):
    out = []
    with open(os.path.join(workdir, "history.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def _key_of(keys, ident):
    return keys[ident % len(keys)]


def derive_stored(attempted, acked_pub, seen_seq):
    """(stored, server_lost). stored: what is in the stream, as far as anyone can tell: every
    acknowledged publish, and every attempted one that some handler or the auditor got (an answer
    lost in a fault does not mean the message is not there). server_lost: acknowledged publishes
    whose stream sequence turned up carrying another message and that nobody ever got: the server
    acknowledged them and then lost them (seen with nats-server 2.9.10 in an R3 cluster whose
    stream leader was killed); jetfan cannot deliver what is not in the stream."""
    seen_ids = set(seen_seq.values())
    server_lost = {i for i, seq in acked_pub.items()
                   if seq in seen_seq and seen_seq[seq] != i and i not in seen_ids}
    stored = (set(acked_pub) - server_lost) | (seen_ids & attempted)
    return stored, server_lost


ORDER_SLACK_NS = 5e8  # a handler records its ACK just after writing it, and may be descheduled between


def order_key_of(order_by, key):
    """The order key of a message key under handlers[].order_by ("key" or "token:N"); None when it
    has none (the message then goes to the handler unordered)."""
    if order_by == "key":
        return key
    if order_by.startswith("token:"):
        tokens = key.split(".")
        n = int(order_by[len("token:"):])
        return tokens[n - 1] if n <= len(tokens) else None
    raise ValueError(f"order_by {order_by!r} is not checked here")


def check_order(order_by, items, key_of_id, wants, ack_timeout_ns, stale=lambda d: False, exempt=frozenset()):
    """The order check of one ordered handler, from its deliveries `items` (the dicts check() builds,
    over all its instances). Two rules, per order key:
      in_flight  no delivery of the key begins while another of the key is unanswered: a delivery is
                 in flight from its arrival until its answer, or at most 0.8 ack_timeout (jetfan
                 fails it by then); one never answered (its instance was killed or cut off) is taken
                 as ended at once, and so are those `stale` says were read late (an instance
                 stopped meanwhile);
      first      a message of `wants` first arrives only once every earlier one of its key in
                 `wants` (by stream sequence) was ACKed by the handler; those in `exempt` (settled
                 for it otherwise, e.g. dead-lettered) count as confirmed.
    Each with ORDER_SLACK_NS of slack. Returns (entry for the result, findings)."""
    by_key = defaultdict(list)
    for d in items:
        k = order_key_of(order_by, key_of_id(d["id"]))
        if k is not None:
            by_key[k].append(d)
    overlaps = []
    for k, ds in by_key.items():
        open_until = None  # (end, delivery) of the latest-ending delivery so far
        for d in sorted(ds, key=lambda x: x["t"]):
            if open_until is not None and d["t"] + ORDER_SLACK_NS < open_until[0] and d["id"] != open_until[1]["id"]:
                overlaps.append({"key": k, "first": [open_until[1]["id"], open_until[1]["t"]],
                                 "second": [d["id"], d["t"]]})
            if d["answer"] in ("ack", "nak") and not stale(d):
                end = min(d["answer_t"], d["t"] + ack_timeout_ns * 0.8)
                if open_until is None or end > open_until[0]:
                    open_until = (end, d)
    first_seen, first_ack, seq_of = {}, {}, {}
    for d in items:
        first_seen[d["id"]] = min(d["t"], first_seen.get(d["id"], d["t"]))
        seq_of.setdefault(d["id"], d["seq"])
        if d["answer"] == "ack":
            first_ack[d["id"]] = min(d["answer_t"], first_ack.get(d["id"], d["answer_t"]))
    early = []
    per_key = defaultdict(list)
    for i in wants:
        k = order_key_of(order_by, key_of_id(i))
        if k is not None and i in seq_of:
            per_key[k].append(i)
    for k, ids in per_key.items():
        latest = None  # (when the earlier ones were all confirmed, the last of them); inf: one never was
        for i in sorted(ids, key=lambda x: seq_of[x]):
            if latest is not None and first_seen[i] + ORDER_SLACK_NS < latest[0]:
                early.append({"key": k, "id": i, "seq": seq_of[i], "arrived_t": first_seen[i],
                              "before_confirmed": latest[1]})
            confirmed = 0 if i in exempt else first_ack.get(i, float("inf"))
            if latest is None or confirmed > latest[0]:
                latest = (confirmed, i)
    entry = {"order_by": order_by, "keys": len(by_key), "two_in_flight": len(overlaps),
             "two_in_flight_sample": overlaps[:SAMPLE], "before_earlier_confirmed": len(early),
             "before_earlier_confirmed_sample": early[:SAMPLE]}
    findings = []
    if overlaps:
        findings.append(f"ORDER: two messages of one key in flight at once {len(overlaps)} time(s), e.g. {overlaps[:1]}")
    if early:
        findings.append(f"ORDER: {len(early)} message(s) arrived before an earlier one of their key was confirmed, "
                        f"e.g. {early[:1]}")
    return entry, findings


def check(workdir):
    run = load_run(workdir)
    history = load_history(workdir)
    keys = run["keys"]
    from patterns import matches_any

    findings = []
    server_findings = []  # what the server did wrong; shown, but not jetfan's verdict
    # --- the publisher ---
    pub = records.read(os.path.join(workdir, "publisher.rec"))
    attempted, acked_pub, failed, not_sent = set(), {}, set(), set()
    for r in pub:
        if r.kind == records.ATTEMPT:
            attempted.add(r.id)
        elif r.kind == records.STORED:
            acked_pub[r.id] = r.seq
        elif r.kind == records.FAILED:
            failed.add(r.id)
        elif r.kind == records.NOT_SENT:
            not_sent.add(r.id)

    # --- the handlers: every record file, per handler ---
    handlers = run["handlers"]
    ack_timeout_ns = {h["name"]: h["ack_timeout_s"] * 1e9 for h in handlers}
    deliveries = {}  # name -> list of dicts (t, id, seq, aux, flags, file, conn, answer, answer_t)
    for h in handlers:
        items = []
        for path in h["record_files"]:
            recs = records.read(os.path.join(workdir, path))
            open_by_conn = {}
            for r in recs:
                if r.kind == records.DELIVERED:
                    d = {"t": r.t, "id": r.id, "seq": r.seq, "aux": r.aux, "flags": r.flags, "file": path,
                         "conn": r.conn, "answer": None, "answer_t": None}
                    items.append(d)
                    open_by_conn[r.conn] = d
                elif r.kind in (records.ACKED, records.NAKED, records.DROPPED):
                    d = open_by_conn.get(r.conn)
                    if d is not None and d["id"] == r.id and d["answer"] is None:
                        d["answer"] = {records.ACKED: "ack", records.NAKED: "nak", records.DROPPED: "drop"}[r.kind]
                        d["answer_t"] = r.t
        items.sort(key=lambda d: d["t"])
        deliveries[h["name"]] = items

    audit = []
    audit_path = os.path.join(workdir, "audit.txt")
    if os.path.exists(audit_path):
        with open(audit_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    audit.append((int(parts[0]), int(parts[1]), int(parts[2])))
    audit_ids = {i for _, i, _ in audit}

    seen_seq = {d["seq"]: d["id"] for items in deliveries.values() for d in items}
    seen_seq.update({seq: i for seq, i, _ in audit})
    stored, server_lost = derive_stored(attempted, acked_pub, seen_seq)
    # A publish whose answer the publisher never got can still be committed by the cluster later,
    # after the run settled: some handlers may get it before jetfan stops, or only the auditor
    # finds it. It was not in the stream when every handler had everything, so it is not counted
    # against jetfan; it stays owed at the server (jetfan drains by handing back), so nothing is
    # lost. The consumer's final count below still checks that the server had nothing more for
    # jetfan when the run settled.
    final = run.get("final_consumer") or {}
    settled_t = next((e["t"] for e in history if e["kind"] == "settled"), None)
    first_seen = {}
    for items in deliveries.values():
        for d in items:
            first_seen[d["id"]] = min(d["t"], first_seen.get(d["id"], d["t"]))
    late_stored = set()
    if settled_t is not None:
        late_stored = {i for i in (stored & attempted) - set(acked_pub)
                       if first_seen.get(i, settled_t + 1) > settled_t and (i in first_seen or i in audit_ids)}
    stored -= late_stored

    # --- fault intervals and jetfan generations from the history ---
    gen_starts = sorted(e["t"] for e in history if e["kind"] == "jetfan_start")
    jetfan_stops = [(e["begin"], e["end"]) for e in history if e["kind"] == "fault" and e.get("stops_jetfan")]
    faults = [e for e in history if e["kind"] == "fault"]

    server_starts = sorted(e["t"] for e in history if e["kind"] == "server_start")

    def server_restarted_between(t0, t1):
        i = bisect.bisect_right(server_starts, t0)
        return i < len(server_starts) and server_starts[i] <= t1

    def generation(t):
        return bisect.bisect_right(gen_starts, t)

    # Two jetfans on one durable (the failover class): run.json's instance_side says which one each
    # handler instance ("A-0") is connected to. A delivery belongs to that jetfan's process (its
    # generation: a retry budget, the confirmations of settled messages live there), and to one of
    # its pin epochs (from each gain of the pin, as its STATUS JSON reported it: "pin" events; the
    # gain happened after the report before, `since`). Without sides, all is as with one jetfan.
    instance_side = run.get("instance_side") or {}
    starts_by_side = defaultdict(list)
    gains_by_side = defaultdict(list)
    for e in history:
        if e["kind"] == "jetfan_start" and e.get("side"):
            starts_by_side[e["side"]].append(e["t"])
    last_gained = {}
    for e in history:
        if e["kind"] == "pin":
            key = (e["side"], e["gen"])
            if (e.get("gained") or 0) > last_gained.get(key, 0):
                gains_by_side[e["side"]].append(e.get("since") or e["t"])
            last_gained[key] = e.get("gained") or 0
    for v in list(starts_by_side.values()) + list(gains_by_side.values()):
        v.sort()

    def side_of(d):
        return instance_side.get(d["file"][len("handler-"):].rsplit("-", 1)[0])

    def gen_of(d, t=None):
        """The jetfan process that gave delivery d (at t, by default its delivery time)."""
        t = d["t"] if t is None else t
        side = side_of(d)
        if side is None:
            return generation(t)
        return (side, bisect.bisect_right(starts_by_side[side], t))

    def epoch_of(d, t=None):
        """... and the pin epoch of that process then."""
        t = d["t"] if t is None else t
        side = side_of(d)
        if side is None:
            return generation(t)
        return gen_of(d, t) + (bisect.bisect_right(gains_by_side[side], t),)

    def jetfan_stopped_during(t0, t1):
        return any(b <= t1 and e >= t0 for b, e in jetfan_stops)

    # Handler instances stopped (SIGSTOP) for about ack_timeout or longer: what jetfan sent them
    # meanwhile waits in their socket and is read just after SIGCONT, so their ACKs of it can come
    # after jetfan already failed the delivery. by instance ("A-0"): [(begin, end)]
    handler_stops = defaultdict(list)
    for e in faults:
        if e.get("name") == "handler SIGSTOP" and e.get("detail"):
            handler_stops[e["detail"].split()[0]].append((e["begin"], e["end"]))

    # A handler writes its ACK to the socket before it puts the ACK on record, so an instance killed
    # just after a delivery's record may have acked it unrecorded: that answer is unknown.
    handler_kills = defaultdict(list)
    for e in faults:
        if e.get("name") == "handler SIGKILL" and e.get("detail"):
            handler_kills[e["detail"].split()[0]].append(e["begin"])
    for items in deliveries.values():
        for d in items:
            if d["answer"] is None:
                instance = d["file"][len("handler-"):].rsplit("-", 1)[0]
                d["answer_unknown"] = any(d["t"] <= k <= d["t"] + 5e7 for k in handler_kills.get(instance, ()))

    def read_after_long_stop(name, d):
        instance = d["file"][len("handler-"):].rsplit("-", 1)[0]  # handler-A-0-1.rec -> A-0
        # (begin, end]: a stopped process reads nothing, so a read stamped before the harness
        # noted SIGCONT happened as it resumed.
        return any(end - begin >= ack_timeout_ns[name] * 0.8 and begin < d["t"] <= end + 2e9
                   for begin, end in handler_stops.get(instance, ()))

    def failed_at(name, d, previous):
        """When delivery d to handler `name` failed, at the latest. One read just after a long SIGSTOP
        may have failed by ack_timeout long before it was read: at the earliest an ack_timeout after
        it could have been sent (once the stop began, and after the delivery before it)."""
        t = d.get("answer_t") or d["t"]
        instance = d["file"][len("handler-"):].rsplit("-", 1)[0]
        for begin, end in handler_stops.get(instance, ()):
            if end - begin >= ack_timeout_ns[name] * 0.8 and begin < d["t"] <= end + 2e9:
                sent = max(begin, (previous.get("answer_t") or previous["t"]) if previous else begin)
                return min(t, sent + ack_timeout_ns[name])
        return t

    def jetfan_failed_between(seq, t0, t1):
        return any(r.kind == 2 and t0 <= r.t <= t1 for r in answers_by_seq.get(seq, ()))

    # --- what jetfan told the server, seen by the watcher (until the audit began) ---
    audit_start = next((e["t"] for e in history if e["kind"] == "audit_start"), None)
    answers = [r for r in records.read(os.path.join(workdir, "answers.rec")) if audit_start is None or r.t < audit_start]
    seq_to_id = {seq: i for i, seq in acked_pub.items()}
    seq_to_id.update(seen_seq)  # what was delivered under a sequence is what it holds
    id_to_seq = {i: seq for seq, i in seq_to_id.items()}
    answers_by_seq = defaultdict(list)
    for r in answers:
        answers_by_seq[r.seq].append(r)

    def jetfan_acked_between(seq, t0, t1, deliveries=None):
        """A +ACK of seq on record from t0 (less 0.5 s) to t1; of the delivery with that count, if given."""
        return any(r.kind == 1 and t0 - 5e8 <= r.t <= t1 and deliveries in (None, r.aux)
                   for r in answers_by_seq.get(seq, ()))

    # --- the confirmation ledger: which duplicates after a restart or a failover it must remove ---
    ledger = run.get("ledger")
    ledger_interval_ns = ((ledger or {}).get("interval_s") or LEDGER_DEFAULT_INTERVAL_S) * 1e9
    ledger_margin_ns = LEDGER_MARGIN_S * 1e9
    # When each jetfan process stopped being able to write: the harness's SIGTERM (what it writes
    # while draining, LedgerWriter::write_all, is not counted on: a drain may be killed), its exit,
    # or the next start on its side; in the failover class also a fault against it (SIGKILL,
    # SIGSTOP, step-down; not the consumer leader's step-down, after which it is meant to stay
    # pinned).
    process_ends = defaultdict(list)  # generation, or (side, generation) -> times
    for e in history:
        if e["kind"] in ("jetfan_sigterm", "jetfan_exit", "jetfan_crash") and e.get("gen") is not None:
            process_ends[(e["side"], e["gen"]) if e.get("side") else e["gen"]].append(e["t"])
    victim_faults = defaultdict(list)  # side -> begins
    for e in faults:
        if e.get("victim") and e.get("scenario") not in ("leader", "leader-full"):
            victim_faults[e["victim"]].append(e["begin"])
    # While jetfan could not reach the server: (begin, end, whether a write in flight was lost). A
    # write that fell due then went out at the end (jetfan stopped, the network stalled or slow: the
    # bytes wait), or failed and was tried again an interval later (ConfirmationLedger::written): by
    # the end + interval. One in flight when its bytes were dropped (a server killed, the connection
    # cut, the proxy's held bytes dropped) failed only after LEDGER_ANSWER_TIMEOUT_S: by then +
    # interval at the latest.
    unwritable = [(e["begin"], e["end"], e.get("name") in DROPS_JETFAN_WRITES) for e in faults
                  if e.get("stops_jetfan") or e.get("name") in DROPS_JETFAN_WRITES]
    down_since = {}
    for e in history:
        if e["kind"] == "server_kill":
            down_since.setdefault(e.get("node"), e["t"])
        elif e["kind"] == "server_start" and e.get("node") in down_since:
            unwritable.append((down_since.pop(e["node"]), e["t"], True))
    unwritable += [(t, float("inf"), True) for t in down_since.values()]
    unwritable.sort()

    def hold_ended(prev, cur, confirmed_t):
        """When the jetfan that had prev's confirmation (at confirmed_t) stopped being able to write
        it, before cur came: the first of process_ends, the next start on its side, a fault against
        it, and the takeover (the pin gained) by cur's jetfan, which reads the ledger then. None when
        none of them is known."""
        side = side_of(prev)
        proc = gen_of(prev, confirmed_t)
        ends = [t for t in process_ends.get(proc, ()) if t > confirmed_t]
        starts = starts_by_side[side] if side else gen_starts
        i = bisect.bisect_right(starts, confirmed_t)
        if i < len(starts):
            ends.append(starts[i])
        if side:
            ends += [t for t in victim_faults.get(side, ()) if t > confirmed_t]
        if side_of(cur) and epoch_of(cur) != epoch_of(prev, confirmed_t):
            ends += [t for t in gains_by_side[side_of(cur)] if confirmed_t < t <= cur["t"]]
        return min(ends, default=None)

    def confirmed_long_before(name, follow_up, prev, cur):
        """For a copy cur after a restart or a failover, whose delivery before, prev, h ACKed: the
        details when the ledger must have had that confirmation, else None. It must when the write
        was due (the confirmation + interval, moved past any time jetfan could not write that it
        fell in, within the margin) more than the margin before its jetfan ended, and the message
        was not settled on the wire in between (then the ledger holds nothing of it: coming again is
        the server's doing). A follow-up handler's ACK that jetfan turned into a NAK
        (follow_up_rule.py) was no confirmation."""
        confirmed_t = prev["answer_t"]
        end = hold_ended(prev, cur, confirmed_t)
        if end is None:
            return None
        # The jetfan that gave cur read the ledger before it (at its start or takeover): a record
        # written after cur came could not have kept it. The roles are polled, so a pin lost and
        # regained between two polls leaves no event; cur's own time still bounds the end.
        end = min(end, cur["t"])
        due = confirmed_t + ledger_interval_ns
        for begin, until, loses in unwritable:
            if begin >= end:
                break
            if begin - ledger_margin_ns < due <= until + ledger_margin_ns:
                retried = begin + LEDGER_ANSWER_TIMEOUT_S * 1e9 if loses else 0
                due = max(until, retried) + ledger_interval_ns
        if due + ledger_margin_ns >= end:
            return None
        # The jetfan that gave cur read the ledger when it started, or when it last gained the pin,
        # before cur: a record written after that read could not keep cur from h (a takeover just
        # after a step-down reads before the confirmations of the old owner's last deliveries).
        side = side_of(cur)
        reads = starts_by_side[side] + gains_by_side[side] if side else gen_starts
        read_t = max((t for t in reads if t <= cur["t"]), default=None)
        if read_t is not None and due + ledger_margin_ns >= read_t:
            return None
        if any(r.kind in (1, 3) and confirmed_t - 5e8 <= r.t <= cur["t"] for r in answers_by_seq.get(cur["seq"], ())):
            return None
        if follow_up and cur["seq"] in turned[name]:
            return None
        return {"id": cur["id"], "seq": cur["seq"], "confirmed_t": confirmed_t, "jetfan_ended_t": end,
                "age_s": round((end - confirmed_t) / 1e9, 3), "again_t": cur["t"],
                "deliveries": [prev["aux"], cur["aux"]]}

    # --- per handler ---
    dead_letters = dead_letter_rule.load_dead_letters(os.path.join(workdir, "dead_letters.txt"))
    # Every jetfan's log: jetfan.log, or one per side in the failover class (jetfan-J1.log, ...),
    # where each side turns the ACKs it held.
    turned = defaultdict(set)
    unlogged = defaultdict(lambda: [0])  # per handler: its NAK failures the logs' rate limit left out
    for log in sorted(glob.glob(os.path.join(workdir, "jetfan*.log"))):
        with open(log, errors="replace") as f:
            text = f.read()
        for name, seqs in follow_up_rule.acks_turned_into_naks(text).items():
            turned[name] |= seqs
        for name, n in follow_up_rule.naks_not_logged(text).items():
            unlogged[name][0] += n
    result_handlers = {}
    received_by = {}  # name -> id -> its deliveries to that handler, oldest first
    unconfirmed = set()
    total_dups = 0
    total_poison_redeliveries = 0
    for h in handlers:
        name = h["name"]
        items = deliveries[name]
        wants = {i for i in stored if matches_any(h["patterns"], _key_of(keys, i))}
        received = received_by[name] = defaultdict(list)
        for d in items:
            received[d["id"]].append(d)
        unexpected = []
        for ident, ds in received.items():
            d = ds[0]
            why = None
            if ident not in attempted:
                why = "never published"
            elif not matches_any(h["patterns"], _key_of(keys, ident)):
                why = f"key {_key_of(keys, ident)} does not match {h['patterns']}"
            elif any(x["flags"] & 1 for x in ds):
                why = "key differs from the published key"
            elif ident in acked_pub and ident not in server_lost and any(x["seq"] != acked_pub[ident] for x in ds):
                why = f"stream seq {d['seq']} but published as {acked_pub[ident]}"
            if why:
                unexpected.append({"id": ident, "why": why})
        poison = set()
        if h.get("poison"):
            mod, rem = h["poison"]
            poison = {i for i in wants if i % mod == rem}
        acked_by_h = {i for i, ds in received.items() if any(x["answer"] == "ack" for x in ds)}
        if h.get("ghost"):
            never_confirmed = wants - acked_by_h
            unconfirmed |= never_confirmed
            lost = set()
            stuck = set()
            answer_unknown = set()
        else:
            # With dead letters, a message is settled for h once its dead letter is stored; the
            # dead-letter rule below checks that it was, and only where h used up its budget.
            dead_lettered = {i for i, n in dead_letters.get(name, {}).items() if n} if h.get("dead_letter") else set()
            unconfirmed |= poison - dead_lettered
            lost = wants - set(received)
            # received, failed (NAK, cut off, no answer), and never given to it again
            stuck = (wants & set(received)) - acked_by_h - poison - dead_lettered
            answer_unknown = {i for i in stuck if received[i][-1].get("answer_unknown")}
            stuck -= answer_unknown

        causes = defaultdict(int)
        concurrent = []
        across_failover = []
        violations = []
        long_before_sample = []
        poison_redeliveries = 0
        for ident, ds in received.items():
            for prev, cur in zip(ds, ds[1:]):
                if ident in poison:
                    poison_redeliveries += 1
                    continue
                # Read by an instance just after a long SIGSTOP, the copy it then acked had been
                # failed by ack_timeout meanwhile: handed back (a NAK seen by the watcher), or, for
                # an ordered handler, retried inside jetfan (on any instance) with the server's
                # delivery count unchanged.
                late = (prev["answer"] == "ack" and
                        (prev["answer_t"] - prev["t"] > ack_timeout_ns[name] * 0.8
                         or jetfan_stopped_during(prev["t"], prev["answer_t"])
                         or (read_after_long_stop(name, prev) and
                             (jetfan_failed_between(cur["seq"], prev["t"] - 2 * ack_timeout_ns[name], cur["t"])
                              or (h.get("order_by") and cur["aux"] == prev["aux"])))))
                # An older delivery read by an instance just after a long SIGSTOP: it sat in that
                # instance's socket while jetfan failed it and gave the next delivery to another.
                # An ordered handler's retry stays inside jetfan, so the server's delivery count of
                # the stale copy is the same as the next one's, on another instance.
                stale = read_after_long_stop(name, cur) and (
                    cur["aux"] < prev["aux"]
                    or (h.get("order_by") and cur["aux"] == prev["aux"] and cur["file"] != prev["file"]))
                if prev["answer"] != "ack" or late or stale:
                    cause = "after_failure"
                elif gen_of(prev, prev["answer_t"]) != gen_of(cur):
                    # another jetfan, or this one restarted: at least once (per-handler
                    # confirmations live in the jetfan that had them)
                    cause = "after_jetfan_restart" if side_of(prev) == side_of(cur) else "after_failover"
                elif epoch_of(prev, prev["answer_t"]) != epoch_of(cur):
                    cause = "after_failover"  # this jetfan lost the pin and was pinned again
                else:
                    cause = "after_ack"
                    if server_restarted_between(prev["answer_t"], cur["t"]):
                        sub = "server_restarted"
                    elif cur["aux"] > prev["aux"]:
                        sub = "server_redelivered"
                    elif jetfan_acked_between(cur["seq"], prev["answer_t"], cur["t"]):
                        sub = "server_reoffered"
                    else:
                        sub = "jetfan_resent"
                    held_sub = sub
                    if sub == "server_reoffered" and not jetfan_acked_between(
                            cur["seq"], prev["answer_t"], cur["t"], prev["aux"]):
                        # The +ACK on record was of another delivery (another jetfan's, in the
                        # failover class): this one jetfan gave again itself.
                        held_sub = "jetfan_resent"
                    if h.get("follow_up") and follow_up_rule.held_ack_redelivery(
                            held_sub, cur["seq"], turned[name],
                            jetfan_acked_between(cur["seq"], prev["answer_t"], cur["t"]), unlogged[name]):
                        cause = "after_held_ack"  # its ACK had not counted yet (follow_up_rule.py)
                    else:
                        causes["after_ack_" + sub] += 1
                    if cause == "after_ack" and len(violations) < SAMPLE:
                        violations.append({"id": ident, "seq": cur["seq"], "why": sub, "first_t": prev["t"],
                                           "acked_t": prev["answer_t"], "again_t": cur["t"],
                                           "deliveries": [prev["aux"], cur["aux"]]})
                if cause in ("after_jetfan_restart", "after_failover"):
                    long_before = confirmed_long_before(name, h.get("follow_up"), prev, cur)
                    if long_before:
                        cause = LONG_BEFORE
                        if len(long_before_sample) < SAMPLE:
                            long_before_sample.append(long_before)
                causes[cause] += 1
                # two copies at once: cur arrived while prev was unanswered, on another connection
                if (prev["answer"] == "ack" and (prev["file"], prev["conn"]) != (cur["file"], cur["conn"])
                        and cur["t"] < prev["answer_t"] and not late):
                    two = {"id": ident, "seq": cur["seq"], "first": [prev["file"], prev["t"], prev["aux"]],
                           "second": [cur["file"], cur["t"], cur["aux"]]}
                    if epoch_of(prev) == epoch_of(cur):
                        concurrent.append(two)
                    elif side_of(prev) is not None and side_of(prev) != side_of(cur):
                        # Each jetfan had a copy at once. The server gives one delivery to one
                        # client: with the same delivery count that cannot be. With another, the
                        # server delivered it again (AckWait, or handed back) to the new owner while
                        # the former one still had its older copy out (a pin is not exclusivity:
                        # ADR-42): at least once after a failover, counted.
                        (concurrent if prev["aux"] == cur["aux"] else across_failover).append(two)
        dups = sum(len(ds) - 1 for ds in received.values()) - poison_redeliveries
        total_dups += dups
        total_poison_redeliveries += poison_redeliveries
        after_ack = causes.get("after_ack", 0)
        entry = {
            "patterns": h["patterns"],
            "expected": len(wants),
            "received": len(received),
            "deliveries": len(items),
            "lost": len(lost),
            "lost_sample": sorted(lost)[:SAMPLE],
            "never_redelivered": len(stuck),
            "never_redelivered_sample": sorted(stuck)[:SAMPLE],
            "answer_unknown": len(answer_unknown),  # killed just after the delivery: it may have acked
            "unexpected": len(unexpected),
            "unexpected_sample": unexpected[:SAMPLE],
            "duplicates": dups,
            "duplicate_ids": sum(1 for i, ds in received.items() if len(ds) > 1 and i not in poison),
            "max_copies": max((len(ds) for i, ds in received.items() if i not in poison), default=0),
            "duplicate_causes": dict(causes),
            "after_ack_sample": violations,
            "confirmed_long_before_sample": long_before_sample,
            "concurrent": len(concurrent),
            "concurrent_sample": concurrent[:SAMPLE],
            "two_copies_across_failover": len(across_failover),
            "two_copies_across_failover_sample": across_failover[:SAMPLE],
            "poison": len(poison),
            "poison_redeliveries": poison_redeliveries,
            "ghost": bool(h.get("ghost")),
        }
        if h.get("order_by"):
            entry["order"], order_found = check_order(
                h["order_by"], items, lambda i: _key_of(keys, i), wants, ack_timeout_ns[name],
                stale=lambda d, name=name: read_after_long_stop(name, d))
            findings += [f"{f} (handler {name})" for f in order_found]
        result_handlers[name] = entry
        if h.get("dead_letter"):  # a retry budget with dead letters: dead_letter_rule.py
            entry["dead_letter_rule"] = dead_letter_rule.check_dead_letters(
                wants, received, dead_letters.get(name, {}), h["max_attempts"], gen_of)
            findings += [f"DEAD LETTERS: handler {name}: {w}" for w in dead_letter_rule.broken(entry["dead_letter_rule"])]
        if lost:
            findings.append(f"LOST: handler {name} never received {len(lost)} message(s) it matches, e.g. ids "
                            f"{sorted(lost)[:5]}")
        if stuck:
            findings.append(f"NEVER REDELIVERED: handler {name} failed {len(stuck)} message(s) (NAK, cut off, no "
                            f"answer) and never got them again, e.g. ids {sorted(stuck)[:5]}")
        if unexpected:
            findings.append(f"UNEXPECTED: handler {name} received {len(unexpected)} message(s) it should not have, "
                            f"e.g. {unexpected[:2]}")
        if after_ack:
            findings.append(f"DUPLICATE AFTER ACK: handler {name} was given again {after_ack} message(s) it had ACKed "
                            f"while the same jetfan ran: {causes.get('after_ack_server_restarted', 0)} after nats-server "
                            f"restarted, {causes.get('after_ack_server_redelivered', 0)} redelivered by the server, "
                            f"{causes.get('after_ack_server_reoffered', 0)} offered again by the server with the same "
                            f"delivery count after jetfan's +ACK, {causes.get('after_ack_jetfan_resent', 0)} resent by "
                            f"jetfan itself")
        long_before = causes.get(LONG_BEFORE, 0)
        if long_before and ledger and run.get("name") in LEDGER_CLASSES:
            findings.append(f"CONFIRMED BEFORE THE RESTART: handler {name} was given again {long_before} message(s) "
                            f"after a jetfan restart or failover that it had confirmed more than the ledger's "
                            f"interval + {LEDGER_MARGIN_S:g} s ({ledger_interval_ns / 1e9 + LEDGER_MARGIN_S:g} s) "
                            f"before that jetfan ended: the confirmation ledger in {ledger.get('bucket')} should "
                            f"have kept them from it, e.g. {long_before_sample[:1]}")
        if concurrent:
            findings.append(f"CONCURRENT COPIES: handler {name} held two copies of one message at once "
                            f"{len(concurrent)} time(s), e.g. {concurrent[:1]}")

    first_ack = {}      # name -> id -> time of the handler's first ACK on record
    for h in handlers:
        firsts = {}
        for d in deliveries[h["name"]]:
            if d["answer"] == "ack" and d["id"] not in firsts:
                firsts[d["id"]] = d["answer_t"]
            elif d.get("answer_unknown") and d["id"] not in firsts:
                firsts[d["id"]] = d["t"]  # it may have acked it: see handler_kills
        if h.get("dead_letter"):  # a dead-lettered message is settled for h once its budget is used up
            for ident in dead_letters.get(h["name"], {}):
                t = dead_letter_rule.used_up_at(received_by[h["name"]].get(ident, []), h["max_attempts"], gen_of,
                                                failed_at=lambda d, prev, name=h["name"]: failed_at(name, d, prev))
                if t is not None and t < firsts.get(ident, float("inf")):
                    firsts[ident] = t
        first_ack[h["name"]] = firsts
    acks_by_seq = defaultdict(list)
    settled_at_server = {}
    for r in answers:
        if r.kind in (1, 3):  # +ACK, +TERM
            acks_by_seq[r.seq].append(r)
            settled_at_server.setdefault(r.seq, r.t)
    premature = []
    for seq, t in settled_at_server.items():
        ident = seq_to_id.get(seq)
        if ident is None:
            continue
        for h in handlers:
            if not matches_any(h["patterns"], _key_of(keys, ident)):
                continue
            confirmed = first_ack[h["name"]].get(ident)
            # 0.5 s of slack: the handler records its ACK just after writing it, and may be
            # descheduled in between while jetfan acts on it.
            if confirmed is None or confirmed > t + 5e8:
                premature.append({"seq": seq, "id": ident, "handler": h["name"],
                                  "acked_at_server_t": t, "handler_confirmed_t": confirmed})
    # Two +ACKs to one and the same delivery: the same delivery count, with no server restart in
    # between (a restarted nats-server 2.9 counts deliveries from 1 again).
    acked_twice = [seq for seq, rs in acks_by_seq.items()
                   if any(a.aux == b.aux and not server_restarted_between(a.t, b.t) for a, b in zip(rs, rs[1:]))]
    acked_again = sum(1 for rs in acks_by_seq.values() if len(rs) > 1)
    # --- follow-ups published through jetfan, tied to their message: follow_up_rule.py ---
    follow_ups = follow_up_rule.load_follow_ups(os.path.join(workdir, "follow_ups.txt"))
    settled_ids = {seq_to_id[seq] for seq in settled_at_server if seq in seq_to_id}
    for h in handlers:
        if not h.get("follow_up"):
            continue
        wants = {i for i in stored if matches_any(h["patterns"], _key_of(keys, i))}
        rule = follow_up_rule.check_follow_ups(wants, settled_ids, follow_ups.get(h["name"], {}))
        result_handlers[h["name"]]["follow_up_rule"] = rule
        findings += [f"FOLLOW-UPS: handler {h['name']}: {w}" for w in follow_up_rule.broken(rule)]
    if premature:
        findings.append(f"ACKED BEFORE ALL CONFIRMED: jetfan acked {len(premature)} message(s) at the server before "
                        f"every handler it is for had confirmed, e.g. {premature[:2]}")
    # --- the ack rule, from outside ---
    settled_unconfirmed = sorted(i for i in unconfirmed if id_to_seq.get(i) in settled_at_server)
    if settled_unconfirmed:
        findings.append(f"ACK RULE BROKEN (seen on the wire): jetfan acked or terminated {len(settled_unconfirmed)} "
                        f"message(s) a handler never confirmed, e.g. ids {settled_unconfirmed[:5]}")
    missing = unconfirmed - audit_ids
    extra_all = audit_ids - unconfirmed - late_stored
    # nats-server 2.9 can offer again, as a first delivery, a message it was told +ACK: when a
    # redelivery falls due while no pull request waits, it steps its delivery pointer back by one
    # (consumer.go, "We will redo this one": o.sseq--). Those came back although jetfan's +ACK for
    # them is on the wire; the others jetfan never acked.
    reoffered = {i for i in extra_all if any(r.kind == 1 for r in answers_by_seq.get(id_to_seq.get(i), ()))}
    # The watcher of answers misses what jetfan acks while the watcher itself reconnects after a
    # server restart. Counting shows it too: once jetfan is gone, the server holds unacknowledged
    # num_ack_pending + num_pending messages, and every unconfirmed one that came back is among
    # them. When those are all, whatever else came back had been acked (and offered anew).
    unacked_at_exit = None
    exit_state = run.get("exit_consumer") or {}
    if exit_state.get("num_ack_pending") is not None and exit_state.get("num_pending") is not None:
        unacked_at_exit = exit_state["num_ack_pending"] + exit_state["num_pending"]
    if unacked_at_exit is not None and unacked_at_exit == len(unconfirmed & audit_ids):
        reoffered |= extra_all
    extra = extra_all - reoffered
    # Before the auditor waited for each expected sequence, it stopped once as many had come back
    # as the server held, so a message the server offered again (above) could stand in for one
    # still on its way. A message missing from such an audit that jetfan never acked or
    # terminated on the wire is not counted as broken, but as inconclusive.
    inconclusive = set()
    if run.get("audit_mode") != "set" and reoffered:
        inconclusive = {i for i in missing if id_to_seq.get(i) not in settled_at_server}
        missing = missing - inconclusive
    ack_rule = {"unconfirmed": len(unconfirmed), "came_back": len(audit_ids),
                "audit_inconclusive": sorted(inconclusive),
                "acked_although_unconfirmed": len(missing), "acked_although_unconfirmed_sample": sorted(missing)[:SAMPLE],
                "left_unacked": len(extra), "left_unacked_sample": sorted(extra)[:SAMPLE],
                "reoffered_by_server_after_ack": len(reoffered), "reoffered_sample": sorted(reoffered)[:SAMPLE],
                "audited": run.get("audited", False)}
    if run.get("audited"):
        if missing:
            findings.append(f"ACK RULE BROKEN: {len(missing)} message(s) a handler never confirmed were acked at the "
                            f"server, e.g. ids {sorted(missing)[:5]}")
        if extra:
            findings.append(f"NOT SETTLED: {len(extra)} message(s) every handler confirmed were still unacknowledged "
                            f"at the server, e.g. ids {sorted(extra)[:5]}")
    else:
        findings.append("NOT AUDITED: the run did not reach the audit (see history.jsonl)")

    # --- the consumer at the end ---
    consumer_ok = final.get("num_pending") == 0 and final.get("num_ack_pending") == len(unconfirmed)
    if not consumer_ok:
        findings.append(f"CONSUMER NOT SETTLED: at the end num_pending={final.get('num_pending')} "
                        f"num_ack_pending={final.get('num_ack_pending')}, expected 0 and {len(unconfirmed)} "
                        f"(the messages some handler never confirms)")
    if not run.get("settled", False) and not (consumer_ok and not any(h["lost"] for h in result_handlers.values())):
        last = next((e for e in reversed(history) if e["kind"] == "not_settled"), {})
        findings.append(f"STALL: the run did not settle within {run.get('settle_timeout_s')} s after the faults "
                        f"ended and the publisher stopped (last seen: handlers complete={last.get('complete')}, "
                        f"consumer {last.get('state')}, expected num_ack_pending {last.get('unconfirmed')})")

    if late_stored:
        server_findings.append(f"LATE STORE: {len(late_stored)} publish(es) the publisher never got an answer for "
                               f"reached the stream only after the run settled (the auditor alone found them, "
                               f"unacknowledged), e.g. ids {sorted(late_stored)[:5]}")
    if server_lost:
        server_findings.append(f"SERVER LOST ACKNOWLEDGED PUBLISH: nats-server acknowledged {len(server_lost)} publish(es) "
                               f"and later delivered another message under the same stream sequence, e.g. "
                               f"{[(i, acked_pub[i], seen_seq[acked_pub[i]]) for i in sorted(server_lost)[:3]]} "
                               f"(id, sequence, id found there); not jetfan's")

    # --- progress ---
    stored_at = {r.id: r.t for r in pub if r.kind == records.STORED}
    # A jetfan that gains the pin holds order as after a restart (what the former owner left comes
    # after AckWait): its gains count as restarts for the ordered handlers' resume.
    restarts = sorted(gen_starts + [t for v in gains_by_side.values() for t in v])
    progress = progress_figures(run, deliveries, handlers, faults, stored_at, load_monitor(workdir), restarts,
                                load_full_consumer(workdir, run.get("max_ack_pending")))
    goal = run["ack_wait_s"] + 5
    if progress["max_resume_s"] is not None and progress["max_resume_s"] > goal:
        findings.append(f"SLOW RESUME: {progress['max_resume_s']:.1f} s without progress after a fault was healed "
                        f"(goal at most AckWait + 5 s = {goal:.0f} s), after fault {progress['worst_fault']}")
    # An ordered handler after a restart waits for what the old jetfan left unacked: as documented
    # (docs/OPERATING.md, "Restarts keep it"), at most nak_delay_max and two AckWaits.
    ordered_goal = 2 * run["ack_wait_s"] + run.get("nak_delay_max_s", 2.0) + 5
    if progress.get("max_ordered_resume_s") is not None and progress["max_ordered_resume_s"] > ordered_goal:
        findings.append(f"SLOW RESUME: {progress['max_ordered_resume_s']:.1f} s without progress of an ordered "
                        f"handler (or of one behind them at a full MaxAckPending) after a fault was healed (goal at most nak_delay_max + 2 AckWaits + 5 s = "
                        f"{ordered_goal:.0f} s), after fault {progress['worst_ordered_fault']}")

    # --- jetfan's exits ---
    bad_exits = []
    termed = set()  # generations the harness sent SIGTERM
    for e in history:
        if e["kind"] == "jetfan_sigterm":
            termed.add((e.get("side"), e.get("gen")))
        if e["kind"] == "jetfan_exit" and e["how"] == "SIGTERM" and e["status"] != 0:
            bad_exits.append(e)
        if e["kind"] == "jetfan_exit" and e["how"] == "SIGKILL" and e["status"] not in (-9, None):
            # "SIGKILL during drain" looks, then kills: a jetfan that finished its drain in between
            # exited 0 by the harness's SIGTERM, as it must.
            if not (e["status"] == 0 and (e.get("side"), e.get("gen")) in termed):
                bad_exits.append(dict(e, how="before the harness's SIGKILL"))
        if e["kind"] == "jetfan_crash":
            bad_exits.append(e)
        if e["kind"] == "finding":
            findings.append("HARNESS: " + e["what"])
    for e in bad_exits:
        findings.append(f"BAD EXIT: jetfan {e['side'] + ' ' if e.get('side') else ''}generation {e.get('gen')} exited "
                        f"with status {e.get('status')} "
                        f"({e.get('how', 'on its own')})")

    # --- two jetfans: in a steady window (one active, the other standing by, as both said, and no
    # fault) only the active one delivers ---
    standby_deliveries = []
    for e in history:
        if e["kind"] != "steady":
            continue
        for items in deliveries.values():
            standby_deliveries += [{"id": d["id"], "t": d["t"], "file": d["file"], "owner": e["owner"]}
                                   for d in items if e["begin"] <= d["t"] <= e["end"] and side_of(d) not in (None, e["owner"])]
    if standby_deliveries:
        findings.append(f"STANDBY DELIVERED: {len(standby_deliveries)} deliveries by the jetfan standing by while the "
                        f"other was pinned, e.g. {standby_deliveries[:2]}")

    return {
        "failover": run.get("failover", []),
        "standby_deliveries": len(standby_deliveries),
        "two_copies_across_failover": sum(h.get("two_copies_across_failover", 0) for h in result_handlers.values()),
        "run": {k: run[k] for k in ("name", "seed", "duration_s", "rate", "cluster_size") if k in run},
        "published": {"attempted": len(attempted), "stored": len(stored), "acked_by_server": len(acked_pub),
                      "failed_or_unanswered": len(failed), "not_sent": len(not_sent)},
        "faults": len(faults),
        "fault_kinds": sorted({f["name"] for f in faults}),
        "jetfan_generations": len(gen_starts),
        "handlers": result_handlers,
        "duplicates": total_dups,
        "poison_redeliveries": total_poison_redeliveries,
        "lost": sum(h["lost"] for h in result_handlers.values()),
        "after_ack": sum(h["duplicate_causes"].get("after_ack", 0) for h in result_handlers.values()),
        LONG_BEFORE: sum(h["duplicate_causes"].get(LONG_BEFORE, 0) for h in result_handlers.values()),
        "ledger": {"on": bool(ledger), "bucket": (ledger or {}).get("bucket"),
                   "interval_s": ledger_interval_ns / 1e9, "margin_s": LEDGER_MARGIN_S},
        "concurrent": sum(h["concurrent"] for h in result_handlers.values()),
        "order_violations": sum(h["order"]["two_in_flight"] + h["order"]["before_earlier_confirmed"]
                                for h in result_handlers.values() if "order" in h),
        "ack_rule": ack_rule,
        "server_answers": {"seen": len(answers), "acked_or_termed": len(settled_at_server),
                           "acked_again_after_redelivery": acked_again, "acked_twice": len(acked_twice),
                           "premature": len(premature), "premature_sample": premature[:SAMPLE]},
        "final_consumer": final,
        "exit_consumer": run.get("exit_consumer"),
        "consumer_settled": consumer_ok,
        "progress": progress,
        "findings": findings,
        "server_findings": server_findings,
        "server_lost": len(server_lost),
        "late_stored": len(late_stored),
        "verdict": "PASS" if not findings else "FAIL",
    }
