"""Progress figures of a run: how long handlers went without a new message while they had work,
and how long after each fault was healed they got going again. Pure: reads what it is given."""

import bisect
import json
import os


def load_monitor(workdir):
    """When the server answered consumer info, from monitor.jsonl: a sorted list of (t, ok). In a
    cluster an answer counts only if it names a leader: a replica without one answers too, with
    an empty leader, while no pull request can be served."""
    path = os.path.join(workdir, "monitor.jsonl")
    entries = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    continue
    clustered = any(e.get("leader") for e in entries)
    return [(e["t"], bool(e["ok"]) and (bool(e.get("leader")) or not clustered)) for e in entries]


def load_full_consumer(workdir, max_ack_pending):
    """The monitor's polls (times, sorted) that found the consumer at its MaxAckPending: the server
    then sends nothing new to anyone, only what is due again."""
    path = os.path.join(workdir, "monitor.jsonl")
    if not max_ack_pending or not os.path.exists(path):
        return []
    full = []
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("ok") and (e.get("ack_pending") or 0) >= max_ack_pending:
                full.append(e["t"])
    return sorted(full)


class Availability:
    """Answers "since when has the consumer been answering, as of time t" from monitor polls."""

    def __init__(self, monitor):
        self.times = [t for t, _ in monitor]
        self.failures = [t for t, ok in monitor if not ok]

    def since(self, t):
        """The first poll after the last failed one before t (0 if none failed before t)."""
        i = bisect.bisect_right(self.failures, t)
        if i == 0:
            return 0
        k = bisect.bisect_right(self.times, self.failures[i - 1])
        return self.times[k] if k < len(self.times) else t


def _latest_before(times, t):
    """The latest of the sorted `times` at or before t, or 0."""
    i = bisect.bisect_right(times, t)
    return times[i - 1] if i else 0


def _any_between(times, t0, t1):
    """Whether one of the sorted `times` lies in [t0, t1]."""
    i = bisect.bisect_left(times, t0)
    return i < len(times) and times[i] <= t1


def progress_figures(run, deliveries, handlers, faults, stored_at, monitor=(), restarts=(), full=()):
    """How long handlers went without progress while they had work.

    A handler has work at time t when a message for it is in the stream (the publisher has its
    ack) that it has not yet received. Gaps while it had none (the publisher itself was stalled,
    say by a stream leader election) are not jetfan's and are not counted. Per handler, the
    moments it got a message it had not had before are taken in order; a gap runs from the later
    of the previous such moment and the time the oldest message still to come was stored.
    Per fault: from the moment it was healed (or the work was stored, if later) until every handler
    with work got something new. Time during which the server could not answer consumer info (the
    monitor's polls failed: server down, consumer without a leader) is not counted either.
    An ordered handler (order_by) resumes after a restart of jetfan only once the old jetfan's
    unacked messages have come back (after AckWait), and each restart begins that wait anew: its
    resume is counted from the latest restart of jetfan (`restarts`: when each jetfan started)
    before it got something new. Its wait is bounded otherwise than an unordered handler's (see
    checker.py), so max_resume_s is over the unordered handlers and max_ordered_resume_s over the
    ordered ones; each fault's resume_s is over all. An unordered handler that waited while the
    consumer sat at its MaxAckPending (`full`: the monitor's polls that found it so) with ordered
    handlers in the run waits behind what they do not yet confirm, which the server counts against
    it: its resume is counted from the latest restart too, and judged as an ordered one's."""
    begin, end = run.get("publish_start"), run.get("publish_stop")
    available = Availability(monitor)
    series = {}
    for h in handlers:
        if h.get("ghost"):
            continue
        seen, times, stored = set(), [], []
        for d in deliveries[h["name"]]:
            if d["id"] not in seen:
                seen.add(d["id"])
                times.append(d["t"])
                stored.append(min(stored_at.get(d["id"], d["t"]), d["t"]))
        # waiting_since[i]: the earliest store time among the messages first received at i or later
        waiting_since = stored[:]
        for i in range(len(waiting_since) - 2, -1, -1):
            waiting_since[i] = min(waiting_since[i], waiting_since[i + 1])
        series[h["name"]] = (times, waiting_since)
    longest, longest_at = 0.0, None
    if begin and end:
        for name, (times, waiting) in series.items():
            for i in range(1, len(times)):
                if times[i] > end:
                    break
                start = max(times[i - 1], waiting[i], begin, available.since(times[i]))
                gap = (times[i] - start) / 1e9
                if gap > longest:
                    longest, longest_at = gap, (name, (start - begin) / 1e9)
    per_fault = []
    ordered = {h["name"] for h in handlers if h.get("order_by")}
    restarts = sorted(restarts)
    for f in faults:
        healed = f["end"]
        if end and healed > end:
            continue
        waits, split = [], {False: [], True: []}
        for name, (times, waiting) in series.items():
            i = bisect.bisect_right(times, healed)
            if i < len(times):
                start = max(healed, waiting[i], available.since(times[i]))
                behind_ordered = name in ordered or (bool(ordered) and _any_between(full, start, times[i]))
                if behind_ordered:
                    start = max(start, _latest_before(restarts, times[i]))
                waits.append(((times[i] - start) / 1e9, name))
                split[behind_ordered].append(waits[-1][0])
        if waits:
            wait, slowest = max(waits)
            per_fault.append({"fault": f["name"], "at_s": (f["begin"] - begin) / 1e9 if begin else None,
                              "lasted_s": (f["end"] - f["begin"]) / 1e9, "resume_s": max(0.0, wait),
                              "unordered_resume_s": max([0.0] + split[False]),
                              "ordered_resume_s": max([0.0] + split[True]),
                              "slowest": slowest, "detail": f.get("detail")})

    def worst_of(field):
        worst = max(per_fault, key=lambda p: p[field], default=None)
        return (round(worst[field], 3) if worst else None,
                f"{worst['fault']} at {worst['at_s']:.1f} s ({worst.get('detail')})" if worst else None)

    max_resume, worst_fault = worst_of("unordered_resume_s")
    max_ordered_resume, worst_ordered_fault = worst_of("ordered_resume_s")
    return {"longest_gap_s": round(longest, 3), "longest_gap_at": longest_at,
            "max_resume_s": max_resume, "worst_fault": worst_fault,
            "max_ordered_resume_s": max_ordered_resume, "worst_ordered_fault": worst_ordered_fault,
            "per_fault": per_fault}
