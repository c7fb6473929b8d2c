#!/usr/bin/env python3
"""bench/adaptive.sh's helpers (standard library only).

  adaptive.py sample CONTROL_SOCKET RUN CSV
      every 200 ms until SIGTERM, sends STATUS JSON to jetfan's control socket and appends a row
      to CSV: run, t_ns (CLOCK_MONOTONIC), db's inflight_limit, in_flight, queued, its cuts (nak,
      timeout, latency; empty when db is not adaptive), db's and audit's acked counts, and db's
      confirmation_latency count and sum (jetfan's delivery-to-confirmation time: the difference of
      two samples gives the mean over the 200 ms between them)
  adaptive.py status CONTROL_SOCKET
      prints STATUS JSON once
  adaptive.py report WORK PHASE_S SCHEDULE SERVICE_MS RATE OUT_MD
      reads each run's files in WORK (RUN-db.log, RUN-audit.lat, RUN-db.out, RUN-status.json,
      RUN-published, RUN-settled, samples.csv, for RUN in adaptive and fixed), prints the tables and
      the checks, writes them to OUT_MD; exits 1 if a check failed
"""
import json
import signal
import socket
import sys
import time

RUNS = ("adaptive", "fixed")


def control(path, command="STATUS JSON", timeout=2.0):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall((command + "\n").encode())
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode()


def handler(status, name):
    for h in status["handlers"]:
        if h["name"] == name:
            return h
    raise KeyError(name)


def sample(path, run, csv_path):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(csv_path, "a", buffering=1) as out:
        due = time.monotonic_ns()
        while not stop:
            try:
                status = json.loads(control(path))
                db, audit = handler(status, "db"), handler(status, "audit")
                adaptive = db.get("adaptive_inflight")
                cuts = adaptive["cuts"] if adaptive else {}
                row = [run, time.monotonic_ns(), db["inflight_limit"], db["in_flight"], db["queued"],
                       cuts.get("nak", ""), cuts.get("timeout", ""), cuts.get("latency", ""),
                       db["counts"]["acked"], audit["counts"]["acked"],
                       db["confirmation_latency"]["count"], db["confirmation_latency"]["sum_seconds"]]
                out.write(",".join(str(v) for v in row) + "\n")
            except (OSError, ValueError, KeyError):
                pass  # jetfan not answering yet, or gone
            due += 200_000_000
            left = due - time.monotonic_ns()
            if left > 0:
                time.sleep(left / 1e9)
            else:
                due = time.monotonic_ns()


def pct(values, q):
    """Nearest rank, as bench/run.sh's percentiles."""
    if not values:
        return 0
    i = max(1, int(len(values) * q))
    return values[i - 1]


def read_lines(path):
    try:
        with open(path) as f:
            return [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def value(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + "="):
                    return line.strip().split("=", 1)[1]
    except FileNotFoundError:
        pass
    return None


def capacity_at(caps, phase_ns, since_ns):
    return caps[min(int(since_ns // phase_ns), len(caps) - 1)]


def ms(us):
    return f"{us / 1000:.1f}"


def report(work, phase_s, schedule, service_ms, rate, out_md):
    phase_ns = int(float(phase_s) * 1e9)
    caps = [int(step.split(":")[0]) for step in schedule.split(",")]
    samples = {run: [] for run in RUNS}
    with open(f"{work}/samples.csv") as f:
        for line in f:
            p = line.strip().split(",")
            if len(p) >= 10 and p[0] in samples:
                samples[p[0]].append(p)

    lines = []
    say = lines.append
    failed = []
    rows = []
    checks = []
    summary = {}
    timeline = {}
    for run in RUNS:
        published = int(open(f"{work}/{run}-published").read().strip() or 0)
        start = value(f"{work}/{run}-db.out", "start_ns")
        db = read_lines(f"{work}/{run}-db.log")
        db = [(int(a), int(b), int(c), int(d)) for a, b, c, d in db]
        audit = sorted(int(x[0]) for x in read_lines(f"{work}/{run}-audit.lat"))
        try:
            status = json.load(open(f"{work}/{run}-status.json"))
            counts = {name: handler(status, name)["counts"] for name in ("db", "audit")}
        except (OSError, ValueError, KeyError):
            counts = None
        settled = open(f"{work}/{run}-settled").read().strip() == "0"
        if start is None:
            failed.append(f"{run}: db never got a delivery")
            continue
        t0 = int(start)
        windows = [(f"{cap}", t0 + k * phase_ns, t0 + (k + 1) * phase_ns) for k, cap in enumerate(caps)]
        last_end = windows[-1][2]
        tail_end = max([c[0] for c in db] + [last_end])
        if tail_end > last_end + phase_ns // 10:
            windows.append((f"{caps[-1]} (drain)", last_end, tail_end))
        for label, begin, end in windows:
            inside = sorted(c[3] for c in db if begin <= c[0] < end)
            e2e = sorted(c[1] for c in db if begin <= c[0] < end)
            half = begin + (end - begin) // 2
            limits = [int(s[2]) for s in samples[run] if half <= int(s[1]) < end]
            flights = [int(s[3]) for s in samples[run] if half <= int(s[1]) < end]
            seen = [s for s in samples[run] if half <= int(s[1]) < end and len(s) >= 12]
            confirmed = int(seen[-1][10]) - int(seen[0][10]) if len(seen) > 1 else 0
            jetfan_latency = ((float(seen[-1][11]) - float(seen[0][11])) / confirmed * 1e3 if confirmed > 0
                              else float("nan"))
            rows.append({
                "run": run, "phase": label, "seconds": (end - begin) / 1e9,
                "limit_mean": sum(limits) / len(limits) if limits else float("nan"),
                "limit_min": min(limits) if limits else 0, "limit_max": max(limits) if limits else 0,
                "in_flight_mean": sum(flights) / len(flights) if flights else float("nan"),
                "jetfan_latency": jetfan_latency,
                "inside_p50": pct(inside, 0.5), "inside_p99": pct(inside, 0.99),
                "e2e_p50": pct(e2e, 0.5), "e2e_p99": pct(e2e, 0.99),
                "rate": len(inside) / ((end - begin) / 1e9) if end > begin else 0,
            })
        # The timeline: each step from db's first delivery to its last ACK.
        step = max(phase_ns // 4, 250_000_000)
        for k in range(0, (max([c[0] for c in db] + [t0]) - t0) // step + 1):
            begin, end = t0 + k * step, t0 + (k + 1) * step
            inside = sorted(c[3] for c in db if begin <= c[0] < end)
            at = [s for s in samples[run] if begin <= int(s[1]) < end]
            timeline.setdefault(k, {"t": k * step / 1e9, "capacity": capacity_at(caps, phase_ns, k * step)})[run] = {
                "limit": at[-1][2] if at else "", "cuts": at[-1][7] if at else "",
                "inside_p50": pct(inside, 0.5), "rate": len(inside) / (step / 1e9),
            }
        cuts = [s for s in samples[run] if s[5] != ""]
        summary[run] = {
            "published": published, "db": len(db), "audit": len(audit),
            "audit_p50": pct(audit, 0.5), "audit_p99": pct(audit, 0.99), "audit_max": audit[-1] if audit else 0,
            "cuts": (cuts[-1][5:8] if cuts else None),
            "seconds": (max(c[0] for c in db) - t0) / 1e9 if db else 0,
        }
        ok = len(db) == published
        checks.append((ok, f"{run}: db confirmed {len(db)} of {published} published"))
        ok = len(audit) == published
        checks.append((ok, f"{run}: audit confirmed {len(audit)} of {published} published"))
        if counts is None:
            checks.append((False, f"{run}: no final STATUS JSON"))
        else:
            for name in ("db", "audit"):
                c = counts[name]
                fails = c["failed_nak"] + c["failed_timeout"] + c["failed_disconnect"]
                ok = c["delivered"] == published and fails == 0
                checks.append((ok, f"{run}: {name} delivered {c['delivered']} times for {published} messages"
                               f" (acked {c['acked']}, failed {fails}): nothing redelivered"))
        checks.append((settled, f"{run}: the consumer settled (nothing pending, nothing unacked)"))

    published = summary.get("adaptive", summary.get("fixed", {})).get("published", 0)
    head = [
        "## Adaptive in-flight limit: a handler whose capacity changes (bench/adaptive.sh)",
        "",
        f"{published} messages of 128 B published at {rate}/s for {3 * float(phase_s):g} s to two handlers on every"
        f" message: db (`jetfan-bench capacity`: at most capacity(t) deliveries worked on at once, {service_ms} ms"
        f" each, the rest waiting inside it in arrival order; capacity {schedule.replace(',', ', ')} as capacity:seconds"
        f" from its first delivery, the last one after; max_inflight 64, adaptive from min_inflight 1 or fixed at 64)"
        " and audit (`jetfan-bench handler`: acks at once). db is saturated in every phase: jetfan holds a backlog"
        " for it. One run each, adaptive then fixed, on one 2-core machine.",
        "",
    ]
    lines[:0] = head
    say("### db per phase")
    say("")
    say("Phases are counted from db's first delivery; the limit (STATUS JSON `inflight_limit`, sampled every 200 ms)"
        " over each phase's second half; latencies of the confirmations made in the phase: *in db* from db"
        " receiving a delivery to its ACK (its internal queue and the service: what the limit controls),"
        " *publish to ACK* including the wait in jetfan's backlog.")
    say("")
    say("| run | capacity | limit mean | limit range | in flight mean | jetfan's latency ms | in db p50 ms"
        " | in db p99 ms | publish to ACK p50 ms | p99 ms | ACKs/s |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        say(f"| {r['run']} | {r['phase']} | {r['limit_mean']:.1f} | {r['limit_min']}–{r['limit_max']}"
            f" | {r['in_flight_mean']:.1f} | {r['jetfan_latency']:.1f} | {ms(r['inside_p50'])} | {ms(r['inside_p99'])}"
            f" | {ms(r['e2e_p50'])} | {ms(r['e2e_p99'])} | {r['rate']:.0f} |")
    say("")
    say("*jetfan's latency*: the mean of jetfan's own delivery-to-ACK time for db (STATUS JSON"
        " `confirmation_latency`) over the phase's second half, what the adaptive limit judges by. The drain row is"
        " the time after the schedule's end, at its last capacity, until db has confirmed everything.")
    say("")
    say("### db over time")
    say("")
    say("Each row: the step from t on. Limit: the last sample in it; in db: the median time from receipt to ACK of"
        " the ACKs made in it.")
    say("")
    say("| t s | capacity | adaptive: limit | cuts so far | in db p50 ms | ACKs/s | fixed: limit | in db p50 ms | ACKs/s |")
    say("|---|---|---|---|---|---|---|---|---|")
    empty = {"limit": "", "cuts": "", "inside_p50": 0, "rate": 0}
    for k in sorted(timeline):
        t = timeline[k]
        a, f = t.get("adaptive", empty), t.get("fixed", empty)
        say(f"| {t['t']:.1f} | {t['capacity']} | {a['limit']} | {a['cuts']} | {ms(a['inside_p50'])} | {a['rate']:.0f}"
            f" | {f['limit']} | {ms(f['inside_p50'])} | {f['rate']:.0f} |")
    say("")
    say("### audit (acks at once), whole run; db's cuts")
    say("")
    say("| run | messages | audit publish to receipt p50 ms | p99 ms | max ms | db cuts nak/timeout/latency | db done after s |")
    say("|---|---|---|---|---|---|---|")
    for run, s in summary.items():
        cuts = "/".join(s["cuts"]) if s["cuts"] else "–"
        say(f"| {run} | {s['published']} | {ms(s['audit_p50'])} | {ms(s['audit_p99'])} | {ms(s['audit_max'])}"
            f" | {cuts} | {s['seconds']:.1f} |")
    say("")
    say("### checks")
    say("")
    for ok, text in checks:
        say(f"- {'ok' if ok else 'FAILED'}: {text}")
        if not ok:
            failed.append(text)
    for text in failed:
        if not any(text == c[1] for c in checks):
            say(f"- FAILED: {text}")
    say("")
    say("### the story (not checked)")
    say("")
    for r in rows:
        if r["run"] != "adaptive" or "drain" in r["phase"]:
            continue
        cap = int(r["phase"])
        ratio = r["limit_mean"] / cap
        say(f"- capacity {cap}: adaptive limit mean {r['limit_mean']:.1f} = {ratio:.2f} x capacity"
            f" ({'within' if 0.5 <= ratio <= 2 else 'OUTSIDE'} 0.5–2x)")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out_md:
        with open(out_md, "w") as f:
            f.write(text)
    return 1 if failed else 0


def main(argv):
    if len(argv) == 4 and argv[0] == "sample":
        sample(argv[1], argv[2], argv[3])
        return 0
    if len(argv) == 2 and argv[0] == "status":
        sys.stdout.write(control(argv[1]))
        return 0
    if len(argv) == 7 and argv[0] == "report":
        return report(*argv[1:])
    sys.stderr.write(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
