#!/usr/bin/env bash
# What flow control per handler (max_rate: core/token_bucket.hpp; adaptive_inflight:
# core/adaptive_limit.hpp) costs per message: jetfan with it off, with a `max_rate` that never binds
# (1,000,000/s: the token bucket's bookkeeping on every delivery, no waiting) and with
# `adaptive_inflight: true` (the limit between its floor and max_inflight 1024, fed every delivery's
# latency).
#
#   bench/flow_control.sh          the full run (about 8 minutes on 2 cores); writes
#                                  bench/results/flow_control.md (the table) and
#                                  bench/results/flow_control.csv (every throughput run)
#   bench/flow_control.sh --smoke  a few thousand messages in each mode, results in a temp dir; exits
#                                  non-zero if a message was lost (well under a minute)
#
# The full run, in order:
#   instructions  `bench/run.sh --instructions` once per mode, the mode's handler keys given by
#                 BENCH_HANDLER_EXTRA: callgrind's instructions per message inside jetfan (2000
#                 against 10000 messages of 128 B, one handler), for 2 patterns and for 100.
#   throughput    as bench/tracing.sh's: jetfan with one handler (`jetfan-bench handler`, acks at
#                 once: C1) draining N messages of 128 B (FLOW_N, default 200000) published once to 8
#                 keys, the consumer rewound before each run; in each of ROUNDS rounds (FLOW_ROUNDS,
#                 default 7) the direct cnats reader (A) first, then C1 in each mode, in an order that
#                 turns each round. Time and jetfan's CPU (bench/drain.sh's drain_jetfan). The table
#                 has the medians over the rounds, and each mode's rate as the median of its per-round
#                 ratios to A.
#
# Needs nats-server, python3 and a build: JETFAN_BUILD_DIR (default build/; an absolute path or one
# under the tree) holding daemon/jetfan and bench/jetfan-bench; JETFAN_BIN=path measures another
# jetfan. The full run builds them first and measures a copy of that jetfan, as bench/tracing.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. "$root/bench/scratch.sh"
. "$root/bench/drain.sh"
bench_smoke_arg flow_control "$@"
modes=(off max_rate adaptive)
n=${FLOW_N:-200000}
rounds=${FLOW_ROUNDS:-7}
[ $smoke = 0 ] || { n=${FLOW_SMOKE_N:-3000}; rounds=1; }
[[ $n =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench: FLOW_N and FLOW_ROUNDS are counts" >&2; exit 64; }
size=128

# FLOW_KEEP=DIR keeps the run's files (logs, configs, status) there.
bench_scratch flow FLOW_KEEP
bench_binaries

handler_keys() {  # MODE: the handler's YAML lines for off (none), max_rate or adaptive
  case $1 in
    off) ;;
    max_rate) printf '    max_rate: 1000000\n' ;;
    adaptive) printf '    adaptive_inflight: true\n' ;;
  esac
}

# --- instructions per message: bench/run.sh --instructions, once per mode -------------------------
instructions_csv=$work/instructions.csv
echo "mode,ipm2,ipm2_without_locking,ipm100,ipm100_without_locking" > "$instructions_csv"
instructions_mode() {  # MODE
  local log=$work/instructions-$1.log
  echo "== instructions per message, $1"
  if ! BENCH_HANDLER_EXTRA=$(handler_keys "$1") JETFAN_BIN=$jetfan JETFAN_BUILD_DIR=$build_dir \
    JETFAN_BUILD_TARGETS=${JETFAN_BUILD_TARGETS:-jetfan jetfan-bench} bench/run.sh --instructions > "$log" 2>&1; then
    tail -20 "$log" >&2; echo "bench: bench/run.sh --instructions failed ($1)" >&2; exit 1
  fi
  echo "$1,$(instruction_figures "$log")" >> "$instructions_csv"
  grep '^  [0-9]* patterns:' "$log"
}

# --- throughput -----------------------------------------------------------------------------------
bench_server
jetfan_config() {  # MODE
  {
    printf 'nats:\n  servers: ["%s"]\nconsumer:\n  stream: BENCH\n  durable: bench_durable\n' "$url"
    printf 'key:\n  strip_prefix: "bench."\nsocket:\n  path: %s/jetfan.sock\n' "$work"
    printf 'handlers:\n  - name: h0\n    max_inflight: 1024\n    patterns: ["#"]\n'
    handler_keys "$1"
    printf 'log:\n  level: warn\n'
  } > "$work/jetfan.yaml"
}
# The limit adaptive flow control had reached, and what the handler acked, from the status at settling.
status_fields() {
  "$python" -c 'import json, sys
try:
    d = json.load(open(sys.argv[1])); h = d["handlers"][0]
    print(h.get("inflight_limit", "-"), d["messages"]["acked"])
except (OSError, ValueError, KeyError, IndexError) as e:
    print("bench: no status in", sys.argv[1], e, file=sys.stderr); print("- 0")' "$1"
}

started=$(date -u +%Y-%m-%dT%H:%MZ)
if [ $smoke = 0 ]; then for mode in "${modes[@]}"; do instructions_mode "$mode"; done; fi

echo "== throughput and CPU: $rounds round(s) of $n messages of $size B; A, then C1 ${modes[*]} (order turning)"
"$tool" setup "$url" BENCH bench_durable 20000 > /dev/null
"$tool" publish "$url" bench. k0,k1,k2,k3,k4,k5,k6,k7 "$n" "$size" > /dev/null
rounds_csv=$work/rounds.csv
echo "round,case,messages,seconds,jetfan_cpu_s,jetfan_wakeups,jetfan_syscalls,inflight_limit,acked,handler_received" > "$rounds_csv"
[ $smoke = 0 ] || settle_timeout=60
status=0
count_syscalls=1
for r in $(seq "$rounds"); do
  rewind; drain_a
  echo "$r,A,$n,$sec,,,,,," >> "$rounds_csv"
  a=$sec
  line="  round $r: A $(awk -v n="$n" -v s="$sec" 'BEGIN {printf "%.0f", n / s}') msg/s"
  shift_by=$(( (r - 1) % ${#modes[@]} ))
  for i in $(seq 0 $(( ${#modes[@]} - 1 ))); do
    mode=${modes[$(( (i + shift_by) % ${#modes[@]} ))]}
    rewind; jetfan_config "$mode"; drain_jetfan "$mode"
    read -r limit acked < <(status_fields "$work/status.json")
    if [ $settled != 0 ] || [ "$acked" != "$n" ] || [ "$lines" != "$n" ]; then
      echo "bench: C1 $mode: settled $([ $settled = 0 ] && echo yes || echo no), jetfan acked $acked and the handler received $lines of $n" >&2
      status=1
    fi
    echo "$r,C1 $mode,$n,$sec,$cpu,$wakeups,$syscalls,$limit,$acked,$lines" >> "$rounds_csv"
    line+=", $mode $(awk -v n="$n" -v s="$sec" -v a="$a" -v c="$cpu" -v k="$wakeups" -v y="${syscalls:-0}" 'BEGIN {printf "%.0f msg/s (%.2f ×A) %.2f µs/msg %.3f wake-ups/msg %.3f syscalls/msg", (s > 0 ? n / s : 0), (s > 0 ? a / s : 0), c / n * 1e6, k / n, y / n}')"
    [ "$mode" != adaptive ] || line+=" limit $limit"
  done
  echo "$line"
done
if [ -s "$work/handlers.err" ] && [ $status != 0 ]; then sed 's/^/  handler: /' "$work/handlers.err" | head -10; fi
if [ $smoke = 1 ]; then
  [ $status = 0 ] || { echo "bench: flow control smoke run FAILED" >&2; exit 1; }
  echo "bench: flow control smoke run OK"
  exit 0
fi
[ $status = 0 ] || { echo "bench: a run lost or repeated messages (flow_control.csv)" >&2; cp "$rounds_csv" "$out/flow_control.csv"; exit 1; }
cp "$rounds_csv" "$out/flow_control.csv"
cp "$instructions_csv" "$out/flow_control_instructions.csv"

# --- the report -----------------------------------------------------------------------------------
machine="$(nproc) cores ($(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/Mem:/ {print $2}') GiB"
command="bench/flow_control.sh"
[ -z "${JETFAN_BUILD_DIR:-}" ] || command="JETFAN_BUILD_DIR=$JETFAN_BUILD_DIR $command"
[ -z "${FLOW_N:-}${FLOW_ROUNDS:-}" ] || command="FLOW_N=$n FLOW_ROUNDS=$rounds $command"
"$python" - "$instructions_csv" "$rounds_csv" "$out/flow_control.md" "$started" "$machine" \
  "$(nats-server --version 2>&1 | head -1)" "$n" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)" "$command" << 'EOF'
import csv, statistics, sys
icsv, rcsv, md, started, machine, server, n, rounds, load, command = sys.argv[1:]
n = int(n)
ins = {row["mode"]: row for row in csv.DictReader(open(icsv))}
runs = list(csv.DictReader(open(rcsv)))
modes = [("off", "off"), ("max_rate", "`max_rate: 1000000` (never binds)"), ("adaptive", "`adaptive_inflight: true`")]
a_sec = {r["round"]: float(r["seconds"]) for r in runs if r["case"] == "A"}
med = statistics.median
def pct(x, base): return f"{(x - base) / base * 100:+.1f} %"
rows = {}
for m, _ in modes:
    rs = [r for r in runs if r["case"] == f"C1 {m}"]
    rows[m] = dict(rate=n / med([float(r["seconds"]) for r in rs]),
                   over_a=med([a_sec[r["round"]] / float(r["seconds"]) for r in rs]),
                   cpu_us=med([float(r["jetfan_cpu_s"]) for r in rs]) / n * 1e6,
                   syscalls=med([float(r["jetfan_syscalls"] or "nan") for r in rs]) / n,
                   wakeups=med([float(r["jetfan_wakeups"]) for r in rs]) / n,
                   limits=sorted({r["inflight_limit"] for r in rs}))
off_i, off_cpu = int(ins["off"]["ipm2_without_locking"]), rows["off"]["cpu_us"]
L = ["## Flow control: what it costs per message (bench/flow_control.sh)", "",
     f"Run {started} on {machine}; {server} with file storage on the same machine. Command: `{command}` "
     "(a RelWithDebInfo build, -O2, as scripts/build.sh makes). One handler, `max_inflight: 1024`, acking at once.", "",
     "| mode | instructions/msg | Δ vs off | with 100 patterns | CPU µs/msg | Δ vs off | wake-ups/msg | syscalls/msg | msgs/s | C1/A |",
     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for m, label in modes:
    i, t = int(ins[m]["ipm2_without_locking"]), rows[m]
    L.append(f"| {label} | {i} | {'' if m == 'off' else f'{i - off_i:+d} ({pct(i, off_i)})'} | {ins[m]['ipm100_without_locking']} | "
             f"{t['cpu_us']:.2f} | {'' if m == 'off' else pct(t['cpu_us'], off_cpu)} | {t['wakeups']:.3f} | {t['syscalls']:.3f} | {t['rate']:.0f} | {t['over_a']:.2f} |")
L.append(f"| A: direct cnats reader | | | | | | | | {n / med(list(a_sec.values())):.0f} | 1.00 |")
L += ["",
      "- *instructions/msg*: `bench/run.sh --instructions` with the mode's handler keys in `BENCH_HANDLER_EXTRA` (callgrind, "
      "inside jetfan, all threads; 10000 against 2000 messages of 128 B, one handler with 2 patterns, and with 100), "
      "without lock acquisition, the figure run.sh says to compare; it repeats to a few instructions.",
      f"- *CPU µs/msg*, *msgs/s*: jetfan draining {n} messages of 128 B, median of {rounds} interleaved rounds; in each "
      "round the direct cnats reader (A) first, then the three modes in an order that turns each round, on the same "
      "messages (the consumer rewound). CPU: jetfan's user + system seconds (all threads) from /proc when the consumer "
      "settled, over the messages: it moves by a few per cent from run to run, the instructions by far less. "
      "*wake-ups/msg*: voluntary context switches of jetfan's threads (each a wait for the server, a handler or a "
      "timer) until the consumer settled, from /proc, over the messages, median: fewer means more work done per wake-up. "
      "*syscalls/msg*: jetfan's system calls from its start until it settled (`perf stat -e raw_syscalls:sys_enter`), "
      "over the messages, median. "
      "*C1/A*: median of the per-round ratios of C1's rate to A's.",
      f"- The adaptive limit when each run settled: {', '.join(rows['adaptive']['limits'])} (of 1024).",
      "", f"Every run: the handler received and jetfan acked all {n} messages. Load average at the end: {load}.", "",
      "Per-run figures: bench/results/flow_control.csv and flow_control_instructions.csv."]
open(md, "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
echo "== results in $out/flow_control.md"
