#!/usr/bin/env bash
# What tracing (config `tracing:`, daemon/dispatch_tracing.hpp) costs per message: jetfan with
# tracing off, on at sample_ratio 0.01 and on at 1, each exporting to a null OTLP collector
# (bench/otlp_sink.py: answers 200 to every POST and counts the spans).
#
#   bench/tracing.sh           the full run (about 10 minutes on 2 cores); writes
#                              bench/results/tracing.md (the table) and bench/results/tracing.csv
#                              (every throughput run)
#   bench/tracing.sh --smoke   a few thousand messages at sample_ratio 1, results in a temp dir; exits
#                              non-zero if a message was lost or the collector received no span (CI
#                              runs this; well under a minute)
#
# The full run, in order:
#   instructions  `bench/run.sh --instructions` once per mode, with the tracing section given by
#                 BENCH_CONFIG_EXTRA: callgrind's instructions per message inside jetfan (2000 against
#                 10000 messages of 128 B, one handler), for 2 patterns and for 100; the figure to
#                 track, as it repeats. BENCH_STATUS_DIR keeps each run's `jetfan status --json`
#                 (spans offered, dropped), the sink says how many it received.
#   throughput    jetfan with one handler (`jetfan-bench handler`, acks at once: C1) draining N
#                 messages of 128 B (TRACING_N, default 200000) published once to 8 keys, the
#                 consumer rewound before each run, as bench/run.sh's rounds; in each of ROUNDS rounds
#                 (TRACING_ROUNDS, default 7) the direct cnats reader (A, bench/run.sh's ceiling)
#                 first, then C1 off, at 0.01 and at 1, in an order that turns each round. Time from
#                 jetfan's start (its socket) until the server shows nothing pending or unacked, CPU
#                 (user + system, all its threads, the exporter's too) read from /proc before jetfan
#                 is stopped: both as bench/run.sh takes them. The table has the medians over the
#                 rounds, and each mode's rate as the median of its per-round ratios to A.
# The tracing section of every "on" run: the brief's defaults, max_queued 2048, max_batch 512,
# interval 5s, endpoint the sink. What jetfan offered its exporter and dropped (queue full, failed
# exports) is read from its status as the consumer settles; what was exported is what the sink
# received by the time jetfan had stopped (stop() sends what is still queued).
#
# Needs nats-server, python3 and a build: JETFAN_BUILD_DIR (default build/; an absolute path or one
# under the tree) holding daemon/jetfan and bench/jetfan-bench; JETFAN_BIN=path measures another
# jetfan. The full run builds them first (scripts/build.sh, only those targets unless
# JETFAN_BUILD_TARGETS says otherwise) and measures a copy of that jetfan, so an edit made meanwhile
# cannot change the binary between the modes. The smoke run builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. "$root/bench/scratch.sh"
. "$root/bench/drain.sh"
bench_smoke_arg tracing "$@"
modes=(off 0.01 1)
n=${TRACING_N:-200000}
rounds=${TRACING_ROUNDS:-7}
[ $smoke = 0 ] || n=${TRACING_SMOKE_N:-3000}
[[ $n =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench: TRACING_N and TRACING_ROUNDS are counts" >&2; exit 64; }
size=128

# TRACING_KEEP=DIR keeps the run's files (logs, configs, status) there.
bench_scratch tracing TRACING_KEEP
bench_binaries

# The null collector, for the whole run: its counts file is rewritten after every request.
"$python" bench/otlp_sink.py --port-file "$work/sink.port" --counts "$work/sink.counts" > "$work/sink.out" 2>&1 &
sink_pid=$!
pids+=("$sink_pid")
wait_file "$work/sink.port" . || { cat "$work/sink.out" >&2; exit 1; }
# TRACING_ENDPOINT=URL sends the spans elsewhere (a real collector, say); the sink then counts none.
endpoint=${TRACING_ENDPOINT:-http://127.0.0.1:$(cat "$work/sink.port")/v1/traces}
sink_spans() { value spans "$work/sink.counts"; }
# How fast the sink itself takes a batch: 40 POSTs, one after another on new connections as jetfan's
# exporter sends them, each of 512 spans of the size jetfan's are (~730 B); prints "MS SPANS_PER_S".
sink_probe() {
  "$python" - "$(cat "$work/sink.port")" << 'PROBE'
import socket, sys, time
port = int(sys.argv[1])
body = (b'{"spanId":"0123456789abcdef","name":"probe"' + b" " * 680 + b"},") * 512
req = (f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
       f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
n, t = 40, time.monotonic()
for _ in range(n):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(req)
        while s.recv(65536):
            pass
dt = time.monotonic() - t
print(f"{dt / n * 1000:.1f} {n * 512 / dt:.0f}")
PROBE
}

tracing_section() {  # MODE: the top-level YAML for off (none), 0.01 or 1
  [ "$1" = off ] && return 0
  printf 'tracing:\n  endpoint: %s\n  sample_ratio: %s\n  max_queued: 2048\n  max_batch: 512\n  interval: 5s\n' "$endpoint" "$1"
}
# "spans traced_messages dropped_queue_full dropped_export_failed acked" of a `jetfan status --json`
# (zeros for the tracing figures when tracing is off).
status_fields() {
  "$python" -c 'import json, sys
try:
    d = json.load(open(sys.argv[1])); t = d.get("tracing") or {}
    print(t.get("spans", 0), t.get("traced_messages", 0), t.get("dropped_queue_full", 0), t.get("dropped_export_failed", 0), d["messages"]["acked"])
except (OSError, ValueError, KeyError) as e:
    print("bench: no status in", sys.argv[1], e, file=sys.stderr); print("0 0 0 0 0")' "$1"
}

# --- instructions per message: bench/run.sh --instructions, once per mode -------------------------
instructions_csv=$work/instructions.csv
echo "mode,ipm2,ipm2_without_locking,ipm100,ipm100_without_locking,spans,traced_messages,dropped_queue_full,dropped_export_failed,sink_spans,exporter_ipm,encode_ipm,exported_per_msg" > "$instructions_csv"
# inclusive PROFILE PATTERN: the inclusive instructions of the function whose callgrind_annotate lines
# contain PATTERN (and not a lambda of it): the largest of them. callgrind_annotate lists a function
# once per source file its code came from (inlined headers), and the entry its callers' calls name
# holds it all; 0 if none.
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$1" 2> /dev/null |
    awk -v pat="$2" 'index($0, pat) && !index($0, "{lambda") {gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0} END {printf "%.0f\n", max}'
}
instructions_mode() {  # MODE
  local mode=$1 dir=$work/instructions-$1 before extra log line spans=0 traced=0 full=0 failed=0 s t q f a file
  mkdir -p "$dir"
  extra=$(tracing_section "$mode")
  log=$work/instructions-$mode.log
  before=$(sink_spans)
  echo "== instructions per message, tracing $mode"
  if ! BENCH_CONFIG_EXTRA=$extra BENCH_STATUS_DIR=$dir JETFAN_CALLGRIND_KEEP=$dir JETFAN_BIN=$jetfan JETFAN_BUILD_DIR=$build_dir \
    JETFAN_BUILD_TARGETS=${JETFAN_BUILD_TARGETS:-jetfan jetfan-bench} bench/run.sh --instructions > "$log" 2>&1; then
    tail -20 "$log" >&2; echo "bench: bench/run.sh --instructions failed (tracing $mode)" >&2; exit 1
  fi
  for file in "$dir"/status-*.json; do
    read -r s t q f a < <(status_fields "$file")
    spans=$((spans + s)); traced=$((traced + t)); full=$((full + q)); failed=$((failed + f))
  done
  local figures
  figures=$(instruction_figures "$log")
  # Where the 2-pattern runs' instructions went: the exporter's thread (SpanExporter::run, inclusive;
  # of it the OTLP JSON encoding, otlp_traces_json) against the spans each run exported (offered
  # less dropped, from the status at settling: status-1 and -2 are the 2-pattern runs, in
  # bench/run.sh's order), as the instruction figure is taken: the larger run less the smaller.
  local counts=() profiles=() small large exporter_ipm="" encode_ipm="" exported_per_msg="" e1 e2
  mapfile -t counts < <(find "$dir" -name 'cg-1-*.out' | sed 's|.*/cg-1-\([0-9]*\)\.out$|\1|' | sort -n)
  if [ "$mode" != off ] && [ ${#counts[@]} = 2 ] && [ -f "$dir/status-1.json" ] && [ -f "$dir/status-2.json" ]; then
    small=${counts[0]}; large=${counts[1]}; profiles=("$dir/cg-1-$small.out" "$dir/cg-1-$large.out")
    read -r s t q f a < <(status_fields "$dir/status-1.json"); e1=$((s - q - f))
    read -r s t q f a < <(status_fields "$dir/status-2.json"); e2=$((s - q - f))
    read -r exporter_ipm encode_ipm exported_per_msg < <(awk -v d=$((large - small)) \
      -v r1="$(inclusive "${profiles[0]}" ':jetfan::SpanExporter::run()')" -v r2="$(inclusive "${profiles[1]}" ':jetfan::SpanExporter::run()')" \
      -v j1="$(inclusive "${profiles[0]}" 'jetfan::otlp_traces_json[abi:cxx11](')" -v j2="$(inclusive "${profiles[1]}" 'jetfan::otlp_traces_json[abi:cxx11](')" \
      -v e1="$e1" -v e2="$e2" 'BEGIN {printf "%.0f %.0f %.4f\n", (r2 - r1) / d, (j2 - j1) / d, (e2 - e1) / d}')
  fi
  line="$mode,$figures,$spans,$traced,$full,$failed,$(( $(sink_spans) - before )),$exporter_ipm,$encode_ipm,$exported_per_msg"
  echo "$line" >> "$instructions_csv"
  grep '^  [0-9]* patterns:' "$log"
  [ "$mode" = off ] || echo "  spans: $spans offered ($traced messages traced), $((full + failed)) dropped ($full queue full), $(( $(sink_spans) - before )) received by the sink"
  [ -z "$exporter_ipm" ] || echo "  2 patterns: $exporter_ipm instructions/message in the exporter's thread ($encode_ipm of them JSON encoding), $exported_per_msg spans exported/message"
}

# --- the drains: a nats-server of our own, A and C1 ---------------------------------------------
bench_server

jetfan_config() {  # MODE
  {
    printf 'nats:\n  servers: ["%s"]\nconsumer:\n  stream: BENCH\n  durable: bench_durable\n' "$url"
    printf 'key:\n  strip_prefix: "bench."\nsocket:\n  path: %s/jetfan.sock\n' "$work"
    printf 'handlers:\n  - name: h0\n    max_inflight: 1024\n    patterns: ["#"]\n'
    printf 'log:\n  level: warn\n'
    tracing_section "$1"
  } > "$work/jetfan.yaml"
}

# drain_c MODE: jetfan with tracing MODE and one handler drains the consumer (drain_jetfan); sets
# also spans traced full failed acked (status at settling) and exported (the sink's, until jetfan
# stopped: its exporter sends what is queued as it stops).
drain_c() {
  local before
  settle_timeout=300; [ $smoke = 0 ] || settle_timeout=60
  jetfan_config "$1"
  before=$(sink_spans)
  drain_jetfan "tracing $1"
  read -r spans traced full failed acked < <(status_fields "$work/status.json")
  exported=$(( $(sink_spans) - before ))
}

# --- smoke ----------------------------------------------------------------------------------------
if [ $smoke = 1 ]; then
  echo "== tracing smoke: $n messages of $size B, one handler, tracing at sample_ratio 1 to $endpoint"
  "$tool" setup "$url" BENCH bench_durable 20000 > /dev/null
  "$tool" publish "$url" bench. k0,k1,k2,k3 "$n" "$size" > /dev/null
  drain_c 1
  if [ -s "$work/handlers.err" ]; then sed 's/^/  handler: /' "$work/handlers.err"; fi
  echo "  settled: $([ $settled = 0 ] && echo "yes, in $sec s" || echo no); handler received $lines, jetfan acked $acked"
  echo "  spans: $spans offered ($traced messages traced), $((full + failed)) dropped ($full queue full, $failed export failed), $exported received by the sink"
  status=0
  [ $settled = 0 ] || { echo "bench: the consumer did not settle: messages pending or unacked" >&2; status=1; }
  [ "$lines" = "$n" ] || { echo "bench: the handler received $lines of $n messages" >&2; status=1; }
  [ "$acked" = "$n" ] || { echo "bench: jetfan acked $acked of $n messages" >&2; status=1; }
  [ "$exported" -gt 0 ] || { echo "bench: the collector received no span" >&2; status=1; }
  [ "$traced" = "$n" ] || { echo "bench: $traced of $n messages traced at sample_ratio 1" >&2; status=1; }
  if [ $status != 0 ]; then echo "bench: tracing smoke run FAILED" >&2; exit 1; fi
  echo "bench: tracing smoke run OK"
  exit 0
fi

# --- full -----------------------------------------------------------------------------------------
started=$(date -u +%Y-%m-%dT%H:%MZ)
read -r probe_ms probe_rate < <(sink_probe)
echo "== the sink alone: $probe_ms ms per POST of 512 spans (${probe_rate} spans/s at most, one POST at a time)"
for mode in "${modes[@]}"; do instructions_mode "$mode"; done

echo "== throughput and CPU: $rounds rounds of $n messages of $size B; A, then C1 off, 0.01, 1 (order turning)"
"$tool" setup "$url" BENCH bench_durable 20000 > /dev/null
"$tool" publish "$url" bench. k0,k1,k2,k3,k4,k5,k6,k7 "$n" "$size" > /dev/null
rounds_csv=$work/rounds.csv
echo "round,case,messages,seconds,jetfan_cpu_s,spans,traced_messages,dropped_queue_full,dropped_export_failed,sink_spans,acked,handler_received" > "$rounds_csv"
for r in $(seq "$rounds"); do
  rewind; drain_a
  echo "$r,A,$n,$sec,,,,,,,," >> "$rounds_csv"
  a=$sec
  line="  round $r: A $(awk -v n="$n" -v s="$sec" 'BEGIN {printf "%.0f", n / s}') msg/s"
  shift_by=$(( (r - 1) % ${#modes[@]} ))
  for i in $(seq 0 $(( ${#modes[@]} - 1 ))); do
    mode=${modes[$(( (i + shift_by) % ${#modes[@]} ))]}
    rewind; drain_c "$mode"
    [ $settled = 0 ] || { echo "bench: C1 with tracing $mode did not settle" >&2; exit 1; }
    echo "$r,C1 $mode,$n,$sec,$cpu,$spans,$traced,$full,$failed,$exported,$acked,$lines" >> "$rounds_csv"
    line+=", $mode $(awk -v n="$n" -v s="$sec" -v a="$a" -v c="$cpu" 'BEGIN {printf "%.0f msg/s (%.2f ×A) %.2f µs/msg", n / s, a / s, c / n * 1e6}')"
    [ "$mode" = off ] || line+=" ${exported}/${spans} spans out"
  done
  echo "$line"
done
cp "$rounds_csv" "$out/tracing.csv"
cp "$instructions_csv" "$out/tracing_instructions.csv"

# --- the report -----------------------------------------------------------------------------------
machine="$(nproc) cores ($(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/Mem:/ {print $2}') GiB"
server=$(nats-server --version 2>&1 | head -1)
load=$(cut -d' ' -f1-3 /proc/loadavg)
command="bench/tracing.sh"
[ -z "${JETFAN_BUILD_DIR:-}" ] || command="JETFAN_BUILD_DIR=$JETFAN_BUILD_DIR $command"
[ -z "${TRACING_N:-}${TRACING_ROUNDS:-}" ] || command="TRACING_N=$n TRACING_ROUNDS=$rounds $command"
"$python" - "$instructions_csv" "$rounds_csv" "$out/tracing.md" "$started" "$machine" "$server" "$n" "$rounds" "$probe_ms" "$probe_rate" "$load" "$command" << 'EOF'
import csv, statistics, sys
icsv, rcsv, md, started, machine, server, n, rounds, probe_ms, probe_rate, load, command = sys.argv[1:]
n = int(n)
ins = {row["mode"]: row for row in csv.DictReader(open(icsv))}
runs = list(csv.DictReader(open(rcsv)))
modes = ["off", "0.01", "1"]
a_sec = {r["round"]: float(r["seconds"]) for r in runs if r["case"] == "A"}
def c_runs(m): return [r for r in runs if r["case"] == f"C1 {m}"]
def med(xs): return statistics.median(xs) if xs else float("nan")
th = {}
for m in modes:
    rs = c_runs(m)
    th[m] = dict(
        rate=n / med([float(r["seconds"]) for r in rs]),
        over_a=med([a_sec[r["round"]] / float(r["seconds"]) for r in rs]),
        cpu_us=med([float(r["jetfan_cpu_s"]) for r in rs]) / n * 1e6,
        spans=sum(int(r["spans"]) for r in rs), exported=sum(int(r["sink_spans"]) for r in rs),
        full=sum(int(r["dropped_queue_full"]) for r in rs), failed=sum(int(r["dropped_export_failed"]) for r in rs),
        traced=sum(int(r["traced_messages"]) for r in rs), lost=sum(int(r["acked"]) != n or int(r["handler_received"]) != n for r in rs))
a_rate = n / med(list(a_sec.values()))
def pct(x, base): return f"{(x - base) / base * 100:+.1f} %" if base else ""
def share(part, whole): return f"{part / whole * 100:.1f} %" if whole else "–"
off_i, off_cpu = int(ins["off"]["ipm2_without_locking"]), th["off"]["cpu_us"]
L = []
L.append("## Tracing: what it costs per message (bench/tracing.sh)")
L.append("")
L.append(f"Run {started} on {machine}; {server} with file storage on the same machine. "
         f"Command: `{command}` (a RelWithDebInfo build, -O2, as scripts/build.sh makes). "
         f"Tracing sections of the \"on\" modes: `sample_ratio` 0.01 or 1, `max_queued: 2048`, `max_batch: 512`, `interval: 5s`, "
         f"`endpoint` a null collector (bench/otlp_sink.py, Python, on this machine: answers 200 `{{}}`, counts the spans).")
L.append("")
L.append("| mode | instructions/msg | Δ vs off | of Δ: exporter thread | of Δ: the rest | spans exported/msg (callgrind) | CPU µs/msg | Δ vs off | msgs/s | C1/A | spans exported / dropped (throughput runs) |")
L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
def num(x):
    try: return float(x)
    except (TypeError, ValueError): return None
for m in modes:
    i, t, r = int(ins[m]["ipm2_without_locking"]), th[m], ins[m]
    label = "off" if m == "off" else f"on, sample_ratio {m}"
    spans = "–" if m == "off" else f"{t['exported']} / {t['spans'] - t['exported']} of {t['spans']} ({share(t['spans'] - t['exported'], t['spans'])} dropped)"
    ex, per_msg = num(r.get("exporter_ipm")), num(r.get("exported_per_msg"))
    split = "| | |" if m == "off" or ex is None else f"| {ex:.0f} | {i - off_i - ex:+.0f} |"
    L.append(f"| {label} | {i} | {'' if m == 'off' else f'{i - off_i:+d} ({pct(i, off_i)})'} {split} {'' if per_msg is None else f'{per_msg:.3f}'} | "
             f"{t['cpu_us']:.2f} | {'' if m == 'off' else pct(t['cpu_us'], off_cpu)} | {t['rate']:.0f} | {t['over_a']:.2f} | {spans} |")
L.append(f"| A: direct cnats reader | | | | | | | | {a_rate:.0f} | 1.00 | |")
L.append("")
L.append("- *instructions/msg*: `bench/run.sh --instructions` with the tracing section in `BENCH_CONFIG_EXTRA` "
         "(callgrind, inside jetfan, all threads: the exporter's JSON and POSTs too; 10000 against 2000 messages of 128 B, "
         "one handler with 2 patterns), without lock acquisition, the figure run.sh says to compare. "
         "*of Δ: exporter thread*: SpanExporter::run (inclusive: OTLP JSON encoding, HTTP) per message, the same way (10000 less 2000); "
         "*the rest*: Δ less that, the dispatcher thread's share (sampling, span state, traceparent on the MSG, offering). "
         "*spans exported/msg*: offered less dropped, from the status of those two runs. Under callgrind the exporter's thread "
         "gets the CPU when valgrind switches threads, so at 1 what it exports, and with it the figure, changes from run to run.")
L.append(f"- *CPU µs/msg*, *msgs/s*: jetfan with one handler (`jetfan-bench handler`, acks at once) draining {n} messages of 128 B, "
         f"median of {rounds} interleaved rounds; in each round the direct cnats reader (A, bench/run.sh's ceiling) first, "
         "then the three modes in an order that turns each round, on the same messages (the consumer rewound). "
         "CPU: jetfan's user + system seconds (all threads) from /proc when the consumer settled, over the messages. "
         "*C1/A*: median of the per-round ratios of C1's rate to A's.")
L.append("- *spans*: offered to the exporter (jetfan status `tracing.spans`, at settling), exported = received by the sink by the "
         "time jetfan had stopped (its stop sends what is queued), dropped = offered − exported; "
         "with one handler a traced message makes 2 spans (the message's and its delivery's).")
L.append("")
L.append("Span accounting, summed over each part's runs:")
L.append("")
L.append("| mode | part | messages traced | spans offered | dropped: queue full | dropped: export failed (at settling) | received by the sink |")
L.append("|---|---|---:|---:|---:|---:|---:|")
for m in modes[1:]:
    r = ins[m]
    L.append(f"| {m} | callgrind (4 runs: 2000, 10000 msgs × 2 and 100 patterns) | {r['traced_messages']} | {r['spans']} | {r['dropped_queue_full']} | {r['dropped_export_failed']} | {r['sink_spans']} |")
    t = th[m]
    L.append(f"| {m} | throughput ({rounds} runs of {n} msgs) | {t['traced']} | {t['spans']} | {t['full']} | {t['failed']} | {t['exported']} |")
L.append("")
L.append("Instructions per message with 100 patterns (same runs): " + ", ".join(
    f"{m}: {ins[m]['ipm100_without_locking']}" for m in modes) + "; with lock acquisition, 2 patterns: " + ", ".join(
    f"{m}: {ins[m]['ipm2']}" for m in modes) + ".")
for m in modes[1:]:
    ex, enc, per_msg = num(ins[m].get("exporter_ipm")), num(ins[m].get("encode_ipm")), num(ins[m].get("exported_per_msg"))
    if ex and per_msg:
        L.append("")
        L.append(f"At {m}, under callgrind: {ex / per_msg:.0f} instructions in the exporter's thread per span exported, "
                 f"{enc / per_msg:.0f} of them encoding the OTLP JSON.")
r1 = ins["1"]
ex, per_msg = num(r1.get("exporter_ipm")), num(r1.get("exported_per_msg"))
if ex and per_msg:
    rest = int(r1["ipm2_without_locking"]) - off_i - ex
    L.append(f"Were every span exported at 1 (2 a message), a message would cost about {off_i + rest + 2 * ex / per_msg:.0f} instructions "
             f"(off {off_i}, the dispatcher's share {rest:.0f}, 2 × {ex / per_msg:.0f}): derived from the figures above, not measured.")
lost = sum(th[m]["lost"] for m in modes)
L.append("")
L.append(f"Every throughput run: the handler received and jetfan acked all {n} messages" if lost == 0
         else f"**{lost} throughput run(s) lost or repeated messages** (tracing.csv: acked, handler_received).")
L.append("")
L.append(f"The sink alone took {probe_ms} ms per POST of 512 spans of that size ({probe_rate} spans/s at most, one POST at a time, "
         "as jetfan's exporter sends them), measured before the runs; a real collector's speed would change the drops at 1, "
         f"not what an offered span costs jetfan. Load average at the end: {load} (other work on the machine shows in the times, not in the instructions).")
L.append("")
L.append("Per-run figures: bench/results/tracing.csv (throughput rounds) and tracing_instructions.csv.")
open(md, "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
echo "== results in $out/tracing.md"
