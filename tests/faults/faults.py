#!/usr/bin/env python3
"""jetfan's fault-injection suite. Run it through scripts/faults.sh.

  faults.py --short                      every fault class but failover once (20 s each), the regression cases,
                                         and a one-minute soak: a few minutes in all
  faults.py --full [--runs 10] [--duration 60]   every class, RUNS runs of DURATION seconds each
  faults.py --soak 10m [--rate 20000]    the soak alone
  faults.py --class NAME [--seed N] [--duration S] [--runs N]   one class (re-run a failure)
  faults.py --regress NAME|all           the regression cases of the bugs it found
  faults.py --list
  --no-ledger                            any mode, with jetfan's confirmation ledger off (it is on by default):
                                         the "before" figure of the duplicates it removes

Duplicates are counted by cause (checker.py); "long-confirmed" are those a handler had confirmed more
than the ledger's interval + 0.5 s before its jetfan ended, given again after that restart or a
failover: with the ledger on, a finding in the classes that end or stop jetfan.

Results: a one-screen verdict on stdout, results.json (machine-readable) in --out (default
build/faults/). A failing run keeps its directory (seed, logs, histories) and prints how to re-run it.
Exit status 0 when every run passed.
"""

import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mesh  # noqa: E402
import proc  # noqa: E402
import regressions  # noqa: E402
import scenarios  # noqa: E402
import soak  # noqa: E402


def duration_arg(text):
    text = text.strip()
    for suffix, factor in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * factor
    return float(text)


def long_confirmed(result):
    """Duplicates after a restart or failover of what the handler confirmed long before (checker.py);
    - for a result judged before that figure existed."""
    return result.get("after_restart_confirmed_long_before", "-")


def ledger_note(result):
    return ", no ledger" if result.get("ledger") and not result["ledger"]["on"] else ""


def summarize(name, result, workdir, kept, rerun):
    p = result["progress"]
    line = (f"{result['verdict']:4}  {name:<22} seed {result['run'].get('seed', '-'):<10} "
            f"faults {result['faults']:>3}  published {result['published']['stored']:>7}  lost {result['lost']:>3}  "
            f"dups {result['duplicates']:>5} (long-confirmed {long_confirmed(result):>3}{ledger_note(result)})  longest gap {p['longest_gap_s']:>5.1f}s  "
            f"resume {p['max_resume_s'] if p['max_resume_s'] is not None else '-':>5}s")
    print(line, flush=True)
    for f in result.get("server_findings", []):
        print(f"        - {f}", flush=True)
    for m in result.get("failover", []):
        first = f"{m['first_delivery_s']:.2f} s" if m.get("first_delivery_s") is not None else "none"
        print(f"        {m['scenario']:<10} owner {m['owner_before']} -> {m['owner_after']}: first delivery by "
              f"{m['first_delivery_by']} {first} after the fault; caught up {m['caught_up_s']:.1f} s later"
              + (f"; stopped {m['stopped_s']:.1f} s" if m.get("stopped_s") else ""), flush=True)
    if result["verdict"] != "PASS":
        for f in result["findings"]:
            print(f"        - {f}", flush=True)
        if kept:
            print(f"        kept: {workdir}", flush=True)
            print(f"        re-run: {rerun}", flush=True)


class Suite:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.results = []
        self.started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())

    def record(self, kind, name, result, workdir, rerun):
        failed = result["verdict"] != "PASS"
        keep = failed or self.args.keep
        if self.args.no_ledger:
            rerun += " --no-ledger"
        summarize(name, result, workdir, keep, rerun)
        entry = {"kind": kind, "name": name, "result": result, "rerun": rerun,
                 "kept": workdir if keep else None}
        self.results.append(entry)
        with open(os.path.join(workdir, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        if not keep:
            scenarios.discard(workdir)
        self.save()

    def save(self):
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump({"started": self.started, "command": " ".join(sys.argv[1:]), "runs": self.results}, f, indent=1)

    def run_class(self, name, runs, duration, seed=None):
        scenario = scenarios.CLASSES[name]
        for i in range(runs):
            s = seed if seed is not None else random.SystemRandom().randrange(1, 10**9)
            if scenario.runner:
                result, workdir = scenario.runner(s, self.build, self.args.rate)
                if result is None:  # skipped: workdir says why
                    print(f"skipped: {name}: {workdir}", flush=True)
                    self.results.append({"kind": "skipped", "name": name, "why": workdir})
                    self.save()
                    return
                self.record("class", name, result, workdir, f"scripts/faults.sh --class {name} --seed {s}")
                continue
            result, workdir = scenarios.run_class(scenario, s, duration, self.build, rate=self.args.rate)
            self.record("class", name, result, workdir,
                        f"scripts/faults.sh --class {name} --seed {s} --duration {duration:g}")

    def run_regression(self, name):
        result, workdir = regressions.CASES[name](self.build)
        self.record("regression", name, result, workdir, f"scripts/faults.sh --regress {name}")

    def run_soak(self, seconds, rate):
        result, workdir = soak.run_soak(self.build, seconds, rate)
        self.record("soak", "soak", result, workdir, f"scripts/faults.sh --soak {seconds:g}s --rate {rate}")

    def verdict(self):
        ran = [r for r in self.results if r["kind"] != "skipped"]
        failed = [r for r in ran if r["result"]["verdict"] != "PASS"]
        skipped = len(self.results) - len(ran)
        print(f"\n{len(ran) - len(failed)} passed, {len(failed)} failed" + (f", {skipped} skipped" if skipped else ""))
        print(f"results: {os.path.join(self.out, 'results.json')}")
        if failed:
            return 1
        # Nothing ran (the failover class without a server that pins): 77, so that CTest says skipped, not passed.
        return 77 if skipped and not ran else 0


def recheck(path):
    """The checker is pure: runs whose directories were kept can be judged again by a newer one."""
    import checker
    with open(path) as f:
        data = json.load(f)
    for entry in data["runs"]:
        if entry["kind"] == "class" and entry.get("kept") and os.path.isdir(entry["kept"]):
            entry["result"] = checker.check(entry["kept"])
            summarize(entry["name"], entry["result"], entry["kept"], False, entry["rerun"])
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--short", action="store_true")
    mode.add_argument("--full", action="store_true")
    mode.add_argument("--soak", type=duration_arg, metavar="DURATION")
    mode.add_argument("--class", dest="cls", choices=sorted(scenarios.CLASSES))
    mode.add_argument("--regress", choices=sorted(regressions.CASES) + ["all"])
    mode.add_argument("--list", action="store_true")
    mode.add_argument("--recheck", metavar="RESULTS_JSON",
                      help="run the checker again on the kept directories of a results.json and rewrite it")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--duration", type=duration_arg)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--rate", type=int, default=None, help="messages per second (default 1000; soak 20000)")
    parser.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the directories of passing runs too")
    parser.add_argument("--no-soak", action="store_true", help="--short or --full without the soak")
    parser.add_argument("--no-regressions", action="store_true",
                        help="--short without the regression cases (ctest runs each as a test of its own)")
    parser.add_argument("--only", help="--short or --full: only these classes (comma-separated)")
    parser.add_argument("--no-ledger", action="store_true",
                        help="jetfan without its confirmation ledger (on by default): measures the duplicates it "
                             "removes (long-confirmed), which are then no finding")
    args = parser.parse_args()
    mesh.ledger_by_default = not args.no_ledger
    args.out = args.out or os.path.join(args.build, "faults")

    if args.recheck:
        return recheck(args.recheck)
    if args.list:
        for name, s in scenarios.CLASSES.items():
            print(f"{name:<12} {s.doc}")
        for name, fn in regressions.CASES.items():
            print(f"{name:<12} regression: {fn.__doc__.strip().splitlines()[0]}")
        return 0

    soak_rate = args.rate or 20000
    args.rate = args.rate or 1000
    suite = Suite(args)
    try:
        classes = [c for c in scenarios.CLASSES if not args.only or c in args.only.split(",")]
        if args.short:
            # The failover class takes about 2 minutes: CTest runs it as a test of its own
            # (faults-failover); --only failover runs it here.
            for name in (c for c in classes if args.only or scenarios.CLASSES[c].runner is None):
                suite.run_class(name, args.runs or 1, args.duration or 20)
            for name in (regressions.CASES if not args.only and not args.no_regressions else []):
                suite.run_regression(name)
            if not args.no_soak:
                suite.run_soak(60, soak_rate)
        elif args.full:
            for name in classes:
                suite.run_class(name, args.runs or 10, args.duration or 60)
            if not args.no_soak:
                suite.run_soak(600, soak_rate)
        elif args.soak:
            suite.run_soak(args.soak, soak_rate)
        elif args.cls:
            suite.run_class(args.cls, args.runs or 1, args.duration or 20, args.seed)
        elif args.regress:
            for name in (regressions.CASES if args.regress == "all" else [args.regress]):
                suite.run_regression(name)
    finally:
        proc.kill_all()
    return suite.verdict()


if __name__ == "__main__":
    sys.exit(main())
