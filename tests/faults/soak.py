"""The soak: a steady rate through three handlers for a long time, sampling
jetfan's RSS, its heap in use (jetfan_heap_in_use_bytes from its /metrics), open file descriptors
and held messages (the server's num_ack_pending for the consumer, which is what jetfan holds)
every second. Passes when nothing is lost and the heap in use and fds are flat after warm-up (held
is reported: it is bounded by max_held by construction).

The leak rule is on the heap in use, not RSS: after a burst of held messages glibc keeps the freed
memory for reuse, so RSS steps up to each new peak and stays there while the heap in use falls
back. RSS is still judged, against the heap: growing by 8 MiB (or half its size) more than the
heap did is memory jetfan holds outside its heap. Without the heap figure (another allocator) RSS
is judged as the heap would be. A heap that stepped up at a burst of held messages and stayed at or
below that burst's peak (a container's capacity, a pool kept for reuse: seen as 2.0 -> 6.2 -> 4.6 MiB
at a 6,800-message burst when the machine was busy) is no leak; a leak grows past every earlier peak.
So is one whose burst came in the last third, when the heap has stayed flat since (at least 8
samples, the first two after the peak left to settle, their second half within 512 KiB or 5% of
their first: 1.9 -> 6.3 -> 4.3 MiB flat for 15 s at a 6,400-message burst); a leak keeps growing
after any peak."""

import json
import os
import statistics
import time
import urllib.request

import records
import scenarios
from mesh import HandlerSpec, Run, Settings, key_of
from patterns import matches_any
from proc import free_port, wait_until


def _rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _heap_kib(port):
    """jetfan_heap_in_use_bytes from jetfan's /metrics, in KiB; None if it is not there."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith("jetfan_heap_in_use_bytes "):
                    return int(float(line.split()[1])) // 1024
    except (OSError, ValueError):
        return None
    return None


def _fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def _thirds(values):
    n = len(values)
    if n < 3:
        return values, values
    return values[: n // 3], values[-(n // 3):]


def memory_findings(figures):
    """The leak rule (the module's docstring) on figures' rss_kib and heap_kib; adds growth_kib."""
    out = []
    for field in ("rss_kib", "heap_kib"):
        if field in figures:
            f = figures[field]
            f["growth_kib"] = f["median_last_third"] - f["median_first_third"]
    rss, heap = figures.get("rss_kib"), figures.get("heap_kib")
    judged = heap or rss
    peak_before = judged.get("max_before_last_third") if judged else None
    after_peak = judged.get("after_peak") if judged else None
    flat_since_peak = after_peak is not None and after_peak["samples"] >= 8 and \
        after_peak["median_second_half"] - after_peak["median_first_half"] <= \
        max(512, 0.05 * after_peak["median_first_half"])
    if judged and judged["growth_kib"] > max(2048, 0.1 * judged["median_first_third"]) and \
            (peak_before is None or judged["median_last_third"] > peak_before) and not flat_since_peak:
        out.append(f"LEAK? jetfan's {'heap in use' if heap else 'RSS'} grew by {judged['growth_kib'] / 1024:.1f} MiB "
                   f"after warm-up ({judged['median_first_third'] / 1024:.1f} -> "
                   f"{judged['median_last_third'] / 1024:.1f} MiB)")
    if heap and rss and rss["growth_kib"] - heap["growth_kib"] > max(8192, 0.5 * rss["median_first_third"]):
        out.append(f"LEAK? jetfan's RSS grew by {rss['growth_kib'] / 1024:.1f} MiB after warm-up, its heap in use "
                   f"by {heap['growth_kib'] / 1024:.1f} MiB: memory outside the heap")
    return out


def run_soak(build, seconds, rate):
    handlers = [HandlerSpec("A", ["a.*"], [["--batch", "1"]]), HandlerSpec("B", ["*.x"], [["--batch", "1"]]),
                HandlerSpec("C", ["#"], [["--batch", "1"]])]
    settings = Settings(rate=rate, use_proxy=False, watch_answers=False, size=128, metrics_port=free_port())
    run = Run(build, scenarios.new_workdir("soak"), handlers, 1, settings)
    info = {"name": "soak", "seed": 0, "duration_s": seconds, "rate": rate}
    findings = []
    samples = []
    try:
        run.start()
        run.start_publisher()
        info["publish_start"] = time.monotonic_ns()
        pid = run.jetfan.pid
        begin = time.monotonic()
        next_at = begin
        while time.monotonic() - begin < seconds:
            next_at += 1.0
            time.sleep(max(0.0, next_at - time.monotonic()))
            state = run.consumer_state() or {}
            stream = run.tool.stream_info() or {}
            samples.append({"t_s": round(time.monotonic() - begin, 2), "rss_kib": _rss_kib(pid),
                            "heap_kib": _heap_kib(settings.metrics_port), "fds": _fds(pid),
                            "held": state.get("num_ack_pending"), "pending": state.get("num_pending"),
                            "delivered_seq": state.get("delivered"), "stored": (stream.get("state") or {}).get("messages")})
        run.stop_publisher()
        info["publish_stop"] = time.monotonic_ns()
        settled = wait_until(lambda: (lambda s: bool(s) and s["num_pending"] == 0 and s["num_ack_pending"] == 0)(
            run.consumer_state()), 300, poll=0.5)
        info["settled"] = settled
        info["settled_after_s"] = (time.monotonic_ns() - info["publish_stop"]) / 1e9
        info["final_consumer"] = run.consumer_state()
        info["rss_end_kib"] = _rss_kib(pid)
        info["final_exit"] = run.term_jetfan()
    except Exception as e:
        findings.append(f"HARNESS: {type(e).__name__}: {e}")
    finally:
        run.close()
        scenarios.write_info(run, info)
    with open(os.path.join(run.dir, "soak.csv"), "w") as f:
        keys = ["t_s", "rss_kib", "heap_kib", "fds", "held", "pending", "delivered_seq", "stored"]
        f.write(",".join(keys) + "\n")
        for s in samples:
            f.write(",".join(str(s.get(k)) for k in keys) + "\n")
    result = check_soak(run, info, samples, findings)
    return result, run.dir


def check_soak(run, info, samples, findings):
    t, _, ids, last = records.columns(run.publisher_record)
    stored = bytearray(max(ids, default=0) + 2)
    n_stored = 0
    for ident, word in zip(ids, last):
        if records.kind_of(word) == records.STORED:
            stored[ident] = 1
            n_stored += 1
    handlers = {}
    lost_total = dups_total = 0
    deliveries_c = []
    for h in run.handlers:
        counts = bytearray(len(stored))
        n = 0
        t_first = t_last = None
        for path in run.handler_record_files(h.name):
            ht, _, hids, hlast = records.columns(path)
            for tt, ident, word in zip(ht, hids, hlast):
                if records.kind_of(word) == records.DELIVERED:
                    n += 1
                    if ident < len(counts):
                        counts[ident] = min(255, counts[ident] + 1)
                    t_first = tt if t_first is None else t_first
                    t_last = tt
        match = {}
        lost = dups = expected = 0
        for ident in range(len(stored)):
            if not stored[ident]:
                continue
            k = key_of(ident)
            if k not in match:
                match[k] = matches_any(h.patterns, k)
            if match[k]:
                expected += 1
                if counts[ident] == 0:
                    lost += 1
                elif counts[ident] > 1:
                    dups += counts[ident] - 1
        handlers[h.name] = {"patterns": h.patterns, "expected": expected, "deliveries": n, "lost": lost,
                            "duplicates": dups,
                            "msg_per_s": round(n / ((t_last - t_first) / 1e9), 1) if t_first and t_last > t_first else None}
        lost_total += lost
        dups_total += dups
        if lost:
            findings.append(f"LOST: handler {h.name} never received {lost} message(s) it matches")
    warm = max(10, len(samples) // 5)
    steady = samples[warm:]
    figures = {"samples": len(samples), "warmup_samples": warm}
    for field in ("rss_kib", "heap_kib", "fds", "held"):
        values = [s.get(field) for s in steady if s.get(field) is not None]
        if not values:
            continue
        first, last = _thirds(values)
        figures[field] = {"start": samples[0].get(field), "after_warmup": values[0], "end": values[-1],
                          "min": min(values), "max": max(values),
                          "max_before_last_third": max(values[:len(values) - len(last)] or values),
                          "median_first_third": statistics.median(first), "median_last_third": statistics.median(last)}
        # After the highest sample (a burst's), two left to settle: is the heap flat since?
        after = values[max(range(len(values)), key=values.__getitem__) + 3:]
        if after:
            half = len(after) // 2
            figures[field]["after_peak"] = {"samples": len(after),
                                            "median_first_half": statistics.median(after[:half] or after),
                                            "median_second_half": statistics.median(after[half:])}
    findings += memory_findings(figures)
    fds = figures.get("fds")
    if fds and fds["max"] - fds["min"] > 3:
        findings.append(f"LEAK? jetfan's open fds went from {fds['min']} to {fds['max']} after warm-up")
    if not info.get("settled"):
        findings.append("STALL: the consumer did not settle within 300 s after the publisher stopped")
    if info.get("final_exit") != 0:
        findings.append(f"BAD EXIT: jetfan exited with {info.get('final_exit')} after SIGTERM")
    duration = (info["publish_stop"] - info["publish_start"]) / 1e9 if info.get("publish_stop") else None
    figures["stored_msg_per_s"] = round(n_stored / duration, 1) if duration else None
    figures["target_msg_per_s"] = info["rate"]
    figures["settled_after_s"] = info.get("settled_after_s")
    figures["rss_end_kib"] = info.get("rss_end_kib")
    result = {
        "run": {"name": "soak", "seed": "-", "duration_s": info["duration_s"], "rate": info["rate"]},
        "published": {"stored": n_stored},
        "faults": 0,
        "lost": lost_total,
        "duplicates": dups_total,
        "handlers": handlers,
        "soak": figures,
        "progress": {"longest_gap_s": 0.0, "max_resume_s": None},
        "findings": findings,
        "verdict": "PASS" if not findings else "FAIL",
    }
    with open(os.path.join(run.dir, "soak.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result
