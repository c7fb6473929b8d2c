#!/usr/bin/env python3
"""Turns the results.json of suite runs into the figures of docs/RELIABILITY.md: the block between
<!-- faults:start --> and <!-- faults:end --> is rewritten; the rest of the document is kept.

  report.py DOC RESULTS.json[=LABEL] [RESULTS.json[=LABEL] ...]

A LABEL (for example the commit the runs were made at) is added to the class name of that file's
runs, so runs of one class made at different commits keep their own rows.
"""

import json
import sys
from collections import OrderedDict


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def order_violations(results):
    """Summed over the runs, or - where no run had an ordered handler (or was judged before that rule)."""
    counts = [x["order_violations"] for x in results if "order_violations" in x]
    return sum(counts) if counts else "-"


def long_confirmed(results):
    """Duplicates after a restart or failover of what the handler had confirmed long before
    (checker.py, after_restart_confirmed_long_before: the ones the confirmation ledger removes),
    summed over the runs, or - where no run was judged with that figure."""
    counts = [x["after_restart_confirmed_long_before"] for x in results if "after_restart_confirmed_long_before" in x]
    return sum(counts) if counts else "-"


def without_ledger(run):
    """Whether a run's jetfan wrote no confirmation ledger (faults.py --no-ledger): its rows are kept
    apart, they are the "before" figures."""
    ledger = (run.get("result") or {}).get("ledger")
    return ledger is not None and not ledger.get("on")


def figures(paths):
    runs, commands, started = [], [], []
    for p in paths:
        path, _, label = p.partition("=")
        with open(path) as f:
            data = json.load(f)
        for r in data["runs"]:
            if without_ledger(r):
                r["name"] = f"{r['name']} without the ledger"
            if label:
                r["name"] = f"{r['name']} at {label}"
        runs += data["runs"]
        commands.append(data.get("command", ""))
        started.append(data.get("started", ""))
    by_class = OrderedDict()
    for r in runs:
        by_class.setdefault((r["kind"], r["name"]), []).append(r)
    out = [f"Runs started {', '.join(sorted(set(started)))}; command: "
           + "; ".join(f"`scripts/faults.sh {c}`" for c in commands if c) + ".", ""]
    out += ["| class | runs | passed | faults injected | messages published | lost | duplicates delivered "
            "| of which after an ACK | of which confirmed long before a restart | two copies at once "
            "| order violations | longest time without progress (s) | longest resume after a fault was healed (s) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (kind, name), rs in by_class.items():
        if kind == "soak":
            continue
        res = [r["result"] for r in rs]
        resumes = [x["progress"]["max_resume_s"] for x in res if x["progress"]["max_resume_s"] is not None]
        out.append(f"| {name}{' (regression)' if kind == 'regression' else ''} | {len(res)} "
                   f"| {sum(x['verdict'] == 'PASS' for x in res)} | {sum(x['faults'] for x in res)} "
                   f"| {sum(x['published']['stored'] for x in res)} | {sum(x['lost'] for x in res)} "
                   f"| {sum(x['duplicates'] for x in res)} | {sum(x.get('after_ack', 0) for x in res)} "
                   f"| {long_confirmed(res)} "
                   f"| {sum(x.get('concurrent', 0) for x in res)} | {order_violations(res)} "
                   f"| {fmt(max(x['progress']['longest_gap_s'] for x in res))} "
                   f"| {fmt(max(resumes) if resumes else None)} |")
    for (kind, name), rs in by_class.items():
        if kind == "soak":
            for r in rs:
                s = r["result"]["soak"]
                rss, fds, held = s.get("rss_kib", {}), s.get("fds", {}), s.get("held", {})
                heap = s.get("heap_kib")
                out += ["", f"### Soak, {r['result']['run']['duration_s']:g} s",
                        "", "| target msg/s | stored msg/s | lost | duplicates | jetfan RSS start / after warm-up / end (MiB) "
                        "| RSS growth after warm-up (MiB) | heap in use after warm-up / end, growth (MiB) "
                        "| open fds min-max | held (num_ack_pending) median first / last third, max | verdict |",
                        "|---:|---:|---:|---:|---|---:|---|---|---|---|",
                        f"| {s['target_msg_per_s']} | {s['stored_msg_per_s']} | {r['result']['lost']} "
                        f"| {r['result']['duplicates']} "
                        f"| {fmt((rss.get('start') or 0) / 1024)} / {fmt((rss.get('after_warmup') or 0) / 1024)} / "
                        f"{fmt((rss.get('end') or 0) / 1024)} | {fmt((rss.get('growth_kib') or 0) / 1024)} "
                        f"| {(fmt(heap['after_warmup'] / 1024) + ' / ' + fmt(heap['end'] / 1024) + ', ' + fmt(heap['growth_kib'] / 1024)) if heap else '-'} "
                        f"| {fds.get('min')}-{fds.get('max')} "
                        f"| {held.get('median_first_third')} / {held.get('median_last_third')}, {held.get('max')} "
                        f"| {r['result']['verdict']} |"]
                for f in r["result"]["findings"]:
                    out.append(f"- {f}")
            continue
        out += ["", f"### {name}{' (regression)' if kind == 'regression' else ''}", "",
                "| seed | faults | published | lost | duplicates | after ACK | confirmed long before a restart "
                "| order violations | longest gap (s) | resume (s) | verdict | findings |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for r in rs:
            x = r["result"]
            findings = "<br>".join(f.split(":")[0] for f in x["findings"]) or ""
            out.append(f"| {x['run'].get('seed')} | {x['faults']} | {x['published']['stored']} | {x['lost']} "
                       f"| {x['duplicates']} | {x.get('after_ack', 0)} | {long_confirmed([x])} "
                       f"| {order_violations([x])} "
                       f"| {fmt(x['progress']['longest_gap_s'])} "
                       f"| {fmt(x['progress']['max_resume_s'])} | {x['verdict']} | {findings} |")
    return "\n".join(out)


def main():
    doc, paths = sys.argv[1], sys.argv[2:]
    with open(doc) as f:
        text = f.read()
    begin, end = "<!-- faults:start -->", "<!-- faults:end -->"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc, "w") as f:
        f.write(head + begin + "\n" + figures(paths) + "\n" + end + tail)


if __name__ == "__main__":
    main()
