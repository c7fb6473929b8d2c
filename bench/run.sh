#!/usr/bin/env bash
# The benchmark, in one command: jetfan (C) against the ceilings, a direct cnats reader (A) and a
# nats.go reader (G, bench/go/reader.go: Fetch(2048) in a loop, built from Debian's Go packages by
# bench/go/go_reader.sh, skipped with a line saying why if it cannot be), and the alternative it
# replaces, an in-process Node dispatcher (B), side by side in one run; and C with its one handler on
# each client (C++, TypeScript, Python) against the C++ one.
#
#   bench/run.sh            full run; writes bench/results/{bench.csv,bench.md,bench.png,...} and
#                           puts bench.md into docs/BENCHMARKS.md
#   bench/run.sh --smoke    tiny N, results in a temp dir: proves the harness works (CI runs this)
#   bench/run.sh --instructions
#                           only the callgrind figure (instructions per message inside jetfan), in a
#                           temp dir; JETFAN_BIN=path measures another jetfan binary the same way;
#                           JETFAN_CALLGRIND_KEEP=DIR keeps the profiles for callgrind_annotate
#   bench/run.sh --acks [N=100000]
#                           only the +ACK batching figure: how many +ACKs one of jetfan's writes to
#                           the server carries (perf counts its send calls), one handler, 128 B
#   bench/run.sh --clients [N=300000] [ROUNDS=5]
#                           only the client rows, N messages per run, in a temp dir; prints their table
#   bench/run.sh --delivery [N=300000]
#                           only the per-delivery costs (bench/per_delivery.sh): 1, 4, 8 and 16
#                           all-matching handlers at 128 B on each client, N messages a run, in a temp
#                           dir; prints their table. PER_DELIVERY_HANDLERS (space-separated) narrows it
#   bench/run.sh --ratios [N=400000] [ROUNDS=5]
#                           only the interleaved rounds: at 128 B A, G, C with 1, 4 and 8 all-matching
#                           handlers; at 256 B A, G, C with one. N messages a run, in a temp dir; prints
#                           each round's ratios to A and G and their medians: the quick check of a
#                           change to the read path
#   bench/run.sh --order [N=100000] [ROUNDS=5]
#                           only the ordered-delivery rows (order_rounds below), in a temp dir
#   bench/run.sh --sweep [REPS=3]
#                           only the cost curve (bench/sweep.sh), REPS runs per point; writes
#                           bench/results/sweep.{csv,png} and its section of bench.md and docs/BENCHMARKS.md.
#                           SWEEP_HANDLERS, SWEEP_SIZES, SWEEP_FANOUT (space-separated) and
#                           SWEEP_MESSAGES (one count for every size) narrow it, in any mode
#
# JETFAN_PULL_BATCH=N, in any mode, runs every jetfan with consumer.batch N (its pull batch).
# BENCH_HANDLER_EXTRA='    key: value' (YAML lines, indented as a handler's keys), in any mode, is added
# to every handler of every jetfan: `BENCH_HANDLER_EXTRA='    adaptive_inflight: true' bench/run.sh
# --instructions` measures what a feature costs per message.
# BENCH_CONFIG_EXTRA='tracing:\n  endpoint: ...' (top-level YAML lines), in any mode, is appended to every
# jetfan's config: `BENCH_CONFIG_EXTRA=$'tracing:\n  endpoint: http://127.0.0.1:4318/v1/traces'
# bench/run.sh --instructions` measures what a top-level section costs per message (bench/tracing.sh).
# BENCH_OUT_DIR=DIR, in any mode, writes the results there (instead of bench/results or a temp dir).
# BENCH_INSTRUCTIONS_C4=1, with --instructions, adds the figure with 4 all-matching handlers.
# BENCH_STATUS_DIR=DIR, in any mode, saves `jetfan status --json` of every drained jetfan run (and
# callgrind run) to DIR as it settles, before jetfan is stopped: status-<N>.json, N counting from 1.
# BENCH_MAX_ACK_PENDING=N (default 20000), in the throughput, --ratios and --order runs, gives the
# consumer that MaxAckPending, which is jetfan's max_held.
#
# The cost curve (bench/sweep.sh says how it is run): msg/s, jetfan's CPU seconds per million
# messages and its peak RSS against the number of handlers (1 to 32, all matching every message, at
# 128 B) and against the payload (128 B to 256 KiB, 1 and 4 all-matching handlers), with A at each
# size. sweep.csv has one row per point and curve:
#   curve                      handlers | payload (a point on both has a row on each; A at 128 B is
#                              the handlers curve's reference)
#   stack                      A | G | C
#   handlers                   C's handlers, all on "#"; - for A and G
#   size                       payload bytes
#   messages                   messages drained per run (at least 20 × max_held; SWEEP_MESSAGES or smoke: fixed)
#   max_held                   jetfan's held window at this size, in messages; - for A and G
#   reps                       runs per point
#   seconds                    median run time
#   msgs_per_s                 messages / median seconds
#   msgs_per_s_min, _max       the slowest and the fastest run
#   mb_per_s                   msgs_per_s × size, MiB/s
#   c_over_a                   msgs_per_s / A's at the same size; empty for A
#   jetfan_cpu_s_per_million   median over the runs of jetfan's user+system CPU seconds / messages × 1e6
#   jetfan_peak_rss_mib        median over the runs of jetfan's peak RSS (VmHWM)
#   c_over_g                   msgs_per_s / G's at the same size; empty for A and G, or if G was skipped
#
# The clients' handlers: `jetfan-bench handler` (C++), clients/node/bench/handler.ts (TypeScript, run on
# node 20 or later as clients/node's tests are) and clients/python/bench_handler.py (Python: $PYTHON, else
# python3). Each connects as h0 and acks every message at once.
#
# End to end is from the moment a reader can read (messages already in the stream) until the server
# says the consumer has nothing pending and nothing unacked. Ratios are taken within this run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode=full  # or smoke, or the one part a --PART option runs
case ${1:-} in
  --smoke | --instructions | --clients | --acks | --sweep | --delivery | --order | --ratios) mode=${1#--} ;;
esac
smoke=1  # results in a temp dir: all but the full run and --sweep
case $mode in full | sweep) smoke=0 ;; esac
uses() { [[ " $* " == *" $mode "* ]]; }  # uses MODE...: this run is one of them

scripts/deps.sh
need=()
command -v node > /dev/null || need+=(nodejs npm)
command -v gnuplot > /dev/null || need+=(gnuplot-nox)
command -v valgrind > /dev/null || need+=(valgrind)
command -v strace > /dev/null || need+=(strace)  # bench/per_delivery.sh: jetfan's system calls
if [ ${#need[@]} -gt 0 ]; then apt-get install -y -q --no-install-recommends "${need[@]}"; fi
scripts/build.sh > /dev/null
if uses full smoke; then (cd bench/node && npm ci --no-audit --no-fund --silent); fi  # B, the in-process reader
if uses full smoke clients delivery; then node20=$(clients/node/bench/build.sh); fi  # the TypeScript client's handler
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')  # past any launcher shim

bin=${JETFAN_BUILD_DIR:-build}; [[ $bin == /* ]] || bin=$root/$bin  # an absolute path is taken as it is
tool=$bin/bench/jetfan-bench
work=$(mktemp -d /tmp/jetfan-bench.XXXXXX)
if [ $smoke = 1 ]; then out=${BENCH_OUT_DIR:-$work/results}; else out=${BENCH_OUT_DIR:-$root/bench/results}; fi
mkdir -p "$out"
pids=()
cleanup() {  # also what a failed run left behind: a jetfan without its server would never end
  for pid in "${pids[@]}" $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=bench/go/go_reader.sh
source "$root/bench/go/go_reader.sh"
if uses full smoke sweep ratios; then go_reader_build "$bin/bench"; fi

case $mode in
  instructions) cg=(2000 10000) ;;
  acks) ack_n=${2:-100000} ;;
  order) order_n=${2:-100000}; order_round_count=${3:-5} ;;
  ratios) declare -A count=([128]=${2:-400000} [256]=${2:-400000}); rounds=${3:-5} ;;
  clients) declare -A count=([128]=${2:-300000}); rounds=${3:-5} ;;
  delivery) pd_handlers=(1 4 8 16); pd_clients=(cpp ts python); pd_n=${2:-300000} ;;
  smoke)
    declare -A count=([128]=300 [256]=300 [16384]=100); sizes=(128); fanout=(2); lat_n=200; lat_rate=1000; held_n=500; cg=(100 300); reps=1; rounds=1
    sweep_handlers=(1 2); sweep_sizes=(128 16384); sweep_fanout=(1 2); sweep_n=300; sweep_reps=1
    pd_handlers=(1 2); pd_clients=(cpp ts python); pd_n=300
    order_n=2000; order_round_count=1 ;;
  *)  # full, sweep
    declare -A count=(); steady=1; sizes=(128 1024 16384); fanout=(2 4 8)  # count: at least 20 × max_held, below
    lat_n=30000; lat_rate=10000; held_n=10000; cg=(2000 10000); reps=3; rounds=5
    order_n=100000; order_round_count=5
    sweep_handlers=(1 2 4 8 16 32); sweep_sizes=(128 1024 4096 16384 65536 262144); sweep_fanout=(1 4); sweep_n=""
    sweep_reps=$reps; [ "$mode" = sweep ] && sweep_reps=${2:-3}
    pd_handlers=(1 4 8 16); pd_clients=(cpp ts python); pd_n=300000 ;;
esac
[[ ${pd_n:-1} =~ ^[1-9][0-9]*$ ]] || { echo "bench: --delivery N is a count of messages, not '$pd_n'" >&2; exit 64; }
[ -n "${PER_DELIVERY_HANDLERS:-}" ] && read -ra pd_handlers <<< "$PER_DELIVERY_HANDLERS"
[[ ${sweep_reps:-1} =~ ^[1-9][0-9]*$ ]] || { echo "bench: --sweep REPS is a count of runs, not '$sweep_reps'" >&2; exit 64; }
[ -n "${SWEEP_HANDLERS:-}" ] && read -ra sweep_handlers <<< "$SWEEP_HANDLERS"
[ -n "${SWEEP_SIZES:-}" ] && read -ra sweep_sizes <<< "$SWEEP_SIZES"
[ -n "${SWEEP_FANOUT:-}" ] && read -ra sweep_fanout <<< "$SWEEP_FANOUT"
[ -n "${SWEEP_MESSAGES:-}" ] && sweep_n=$SWEEP_MESSAGES

nats-server -js -sd "$work/js" -a 127.0.0.1 -p -1 > "$work/nats.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do grep -q "Listening for client" "$work/nats.log" && break; sleep 0.05; done
url="nats://127.0.0.1:$(sed -n 's/.*Listening for client connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/nats.log")"

value() { sed -n "s/^$1=//p" "$2" | head -1; }
wait_file() { for _ in $(seq 400); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done; echo "bench: timed out waiting for $2 in $1" >&2; return 1; }
now() { "$tool" now; }
keys_for() {  # keys_for N: N distinct keys k0..k(N-1)
  local n=$1 list=""; for i in $(seq 0 $((n - 1))); do list+="${list:+,}k$i"; done; echo "$list"
}
# The consumer's MaxAckPending (jetfan's max_held): BENCH_MAX_ACK_PENDING, in any mode, sets it.
max_ack_pending=${BENCH_MAX_ACK_PENDING:-20000}
fresh_stream() { published=""; "$tool" setup "$url" BENCH bench_durable "${1:-$max_ack_pending}"; }
prepublish() { "$tool" publish "$url" bench. "$3" "$1" "$2" > /dev/null; }

# jetfan config: handlers given as "name:pattern,pattern;name:pattern..."
jetfan_config() {
  local handlers=$1 extra=${2:-} h p hs ps first
  # JETFAN_PULL_BATCH sets consumer.batch for every jetfan of the run (default: jetfan's own).
  [ -z "${JETFAN_PULL_BATCH:-}" ] || [[ $extra == *"batch:"* ]] || extra="  batch: $JETFAN_PULL_BATCH"$'\n'"$extra"
  {
    printf 'nats:\n  servers: ["%s"]\nconsumer:\n  stream: BENCH\n  durable: bench_durable\n%s' "$url" "$extra"
    # max_unidentified: the sweep's 32 handlers connect at once; none may be evicted before its HELLO.
    printf 'key:\n  strip_prefix: "bench."\nsocket:\n  path: %s/jetfan.sock\n  max_unidentified: 64\nhandlers:\n' "$work"
    IFS=';' read -ra hs <<< "$handlers"
    for h in "${hs[@]}"; do
      printf '  - name: %s\n    max_inflight: 1024\n    patterns: [' "${h%%:*}"
      IFS=',' read -ra ps <<< "${h#*:}"
      first=1
      for p in "${ps[@]}"; do [ $first = 1 ] || printf ', '; printf '"%s"' "$p"; first=0; done
      printf ']\n'
      [ -z "${order_by:-}" ] || printf '    order_by: %s\n' "$order_by"  # order_rounds sets it
      [ -z "${BENCH_HANDLER_EXTRA:-}" ] || printf '%s\n' "$BENCH_HANDLER_EXTRA"
    done
    printf 'log:\n  level: warn\n'
    [ -z "${BENCH_CONFIG_EXTRA:-}" ] || printf '%s\n' "$BENCH_CONFIG_EXTRA"
  } > "$work/jetfan.yaml"
}

stop_all() {
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}
save_status() {  # BENCH_STATUS_DIR: the running jetfan's status, as JSON, to the next status-<N>.json
  [ -n "${BENCH_STATUS_DIR:-}" ] || return 0
  local n=1  # the files tell N: instructions() runs in a subshell, where a counter would not last
  while [ -e "$BENCH_STATUS_DIR/status-$n.json" ]; do n=$((n + 1)); done
  "${JETFAN_BIN:-$bin/daemon/jetfan}" status --json --config "$work/jetfan.yaml" > "$BENCH_STATUS_DIR/status-$n.json" ||
    echo "bench: jetfan status failed (status-$n.json)" >&2
}

# The handler processes start_jetfan runs, each with SOCKET NAME LATENCY_FILE: one per client.
handler_on() {  # handler_on cpp|ts|python: sets handler_cmd
  case $1 in
    cpp) handler_cmd=("$tool" handler) ;;
    ts) handler_cmd=("$node20" "$root/clients/node/bench/dist/handler.js") ;;
    python) handler_cmd=("$python" "$root/clients/python/bench_handler.py") ;;
  esac
}
handler_on cpp

# Starts jetfan (optionally under a wrapper) and the named handlers; sets jetfan_pid, handler_pids, t0.
start_jetfan() {
  local names=$1; shift
  rm -f "$work/jetfan.sock" "$work"/handler-*.out "$work"/handler-*.lat
  "$@" "${JETFAN_BIN:-$bin/daemon/jetfan}" serve --config "$work/jetfan.yaml" > "$work/jetfan.log" 2>&1 &
  jetfan_pid=$!
  for _ in $(seq 3000); do [ -S "$work/jetfan.sock" ] && break; sleep 0.005; done
  t0=$(now)
  handler_pids=()
  for name in $names; do
    "${handler_cmd[@]}" "$work/jetfan.sock" "$name" "$work/handler-$name.lat" > "$work/handler-$name.out" 2>> "$work/handlers.err" &
    handler_pids+=($!)
  done
}

cpu_seconds() { awk '{printf "%.3f", ($14 + $15) / 100}' "/proc/$1/stat"; }
peak_rss_mib() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

csv=$out/bench.csv  # written from the throughput section on; --sweep leaves it alone
record() {  # record CASE STACK HANDLERS PATTERNS SIZE N SECONDS CPU RSS
  awk -v c="$1" -v st="$2" -v h="$3" -v p="$4" -v s="$5" -v n="$6" -v sec="$7" -v cpu="$8" -v rss="$9" 'BEGIN {
    rate = n / sec; printf "%s,%s,%s,%s,%s,%s,%.4f,%.0f,%.2f,%s,%s\n", c, st, h, p, s, n, sec, rate, rate * s / 1048576,
      (cpu == "" ? "" : sprintf("%.2f", cpu / n * 1e6)), rss }' >> "$csv"
  printf '  %-28s %6s B  %9.0f msg/s\n' "$1" "$5" "$(awk -v n="$6" -v s="$7" 'BEGIN{print n/s}')"
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.4f", (b - a) / 1e9}'; }

# The messages a drain-mode run reads: published once per size (to the 8 keys k0..k7), and for each
# later run of that size the consumer is rewound (`jetfan-bench rewind`: every message pending
# again). A run's time is then its reader's alone, not the publisher's.
messages_ready() {  # size
  local size=$1
  if [ "${published:-}" = "$size:${count[$size]}" ]; then
    "$tool" rewind "$url" BENCH bench_durable "$max_ack_pending"
  else
    fresh_stream; prepublish "${count[$size]}" "$size" "$(keys_for 8)"; published="$size:${count[$size]}"
  fi
}

run_direct() {  # size
  local size=$1 n=${count[$1]}
  messages_ready "$size"
  drain_direct "$n" "$size"
}
# drain_reader NAME COMMAND...: the reader COMMAND (A, B or G, acking itself) drains the messages
# waiting for the consumer; sets sec (from the ready_ns it prints until the server shows nothing
# pending or unacked), cpu and rss (-: only jetfan's are taken).
drain_reader() {
  local file=$work/$1.out; shift
  "$@" > "$file" 2>&1 &
  local pid=$!
  wait_file "$file" ready_ns
  "$tool" watch "$url" BENCH bench_durable 300 > "$work/watch.out"
  sec=$(elapsed "$(value ready_ns "$file")" "$(value settled_ns "$work/watch.out")"); cpu=-; rss=-
  stop_all $pid
}
drain_direct() { drain_reader direct "$tool" direct "$url" BENCH bench_durable "$1" "$work/direct.lat" "$2"; }  # N SIZE

run_inprocess() {  # size handlers
  local size=$1 handlers=$2 args=()
  messages_ready "$size"
  for i in $(seq "$handlers"); do args+=("#"); done
  drain_reader node node bench/node/reader.mjs "$url" BENCH bench_durable bench. "$work/node.lat" "${args[@]}"
}

all_handlers() {  # N: sets the caller's spec (for jetfan_config) and names: h0..h<N-1>, each on "#"
  local i; spec=""; names=""
  for i in $(seq 0 $(($1 - 1))); do spec+="${spec:+;}h$i:#"; names+=" h$i"; done
}
p100=""; for i in $(seq 0 98); do p100+="mesh-$i.built-before,"; done  # 99 patterns no message matches

run_jetfan() {  # size handlers kind(all|disjoint|p100)
  local size=$1 handlers=$2 kind=$3 spec="" names="" i j keys
  case $kind in
    all) all_handlers "$handlers" ;;
    disjoint)  # handler i takes the keys k<j> with j mod handlers = i: each message goes to one handler
      for i in $(seq 0 $((handlers - 1))); do
        keys=""; for j in $(seq "$i" "$handlers" 7); do keys+="${keys:+,}k$j"; done
        spec+="${spec:+;}h$i:$keys"; names+=" h$i"
      done ;;
    p100) spec="h0:${p100}#"; names=" h0" ;;
  esac
  messages_ready "$size"
  drain_jetfan "$spec" "$names"
}
drain_jetfan() {  # SPEC NAMES: jetfan with the handlers SPEC (jetfan_config), NAMES started, drains the
                  # consumer; sets sec (from jetfan's start), cpu, rss
  jetfan_config "$1"
  start_jetfan "$2"
  "$tool" watch "$url" BENCH bench_durable 300 > "$work/watch.out"
  sec=$(elapsed "$t0" "$(value settled_ns "$work/watch.out")"); cpu=$(cpu_seconds $jetfan_pid); rss=$(peak_rss_mib $jetfan_pid)
  save_status
  stop_all $jetfan_pid "${handler_pids[@]}"
}

# measure LABEL STACK HANDLERS PATTERNS SIZE FN ARGS...: runs FN (which sets sec, cpu, rss) $reps
# times and records the run with the median time.
measure() {
  local label=$1 stack=$2 handlers=$3 patterns=$4 size=$5; shift 5
  : > "$work/reps"
  for _ in $(seq "$reps"); do "$@"; echo "$sec $cpu $rss" >> "$work/reps"; done
  read -r sec cpu rss < <(sort -n "$work/reps" | sed -n "$(( (reps + 1) / 2 ))p")
  [ "$cpu" = - ] && cpu="" && rss=""
  record "$label" "$stack" "$handlers" "$patterns" "$size" "${count[$size]}" "$sec" "$cpu" "$rss"
}

# One client row's run: C with one handler, h0 on "#", on CLIENT; the time runs from the handler's
# start (as run_jetfan's) and, for ready_sec, from its ready_ns (without its start-up).
run_client() {  # client
  handler_on "$1"
  run_jetfan 128 1 all
  ready_sec=$(elapsed "$(value ready_ns "$work/handler-h0.out")" "$(value settled_ns "$work/watch.out")")
  handler_on cpp
}

# The client rows: C++, TypeScript and Python back to back in each round, so drift on a shared
# machine hits all of them alike; report.sh takes the median per-round ratio to C++.
client_rows() {
  echo "== clients at 128 B, one handler acking at once: C++, TypeScript, Python interleaved; $rounds rounds of ${count[128]} messages"
  echo "round,client,messages,seconds,ready_seconds" > "$out/clients.csv"
  { echo "ts,node $("$node20" --version)"; echo "python,Python $("$python" -c 'import platform; print(platform.python_version())')"; } > "$out/clients.txt"
  local r client line
  for r in $(seq "$rounds"); do
    line="  round $r:"
    for client in cpp ts python; do
      run_client $client
      echo "$r,$client,${count[128]},$sec,$ready_sec" >> "$out/clients.csv"
      line+=" $client $(awk -v n="${count[128]}" -v s="$sec" 'BEGIN {printf "%.0f", n / s}') msg/s"
    done
    echo "$line"
  done
}

# +ACK batching: jetfan with one handler drains ack_n messages while perf counts its send() and
# sendmsg() calls. cnats writes to the server with send(); jetfan writes a MSG and its body to a
# handler with sendmsg() (a gather write), and only a lone line (PONG) with send(). So ack_n over
# the send() count is a lower bound of the +ACKs one write to the server carries (pull requests and
# PINGs are among those writes too). Needs perf with syscall tracepoints (root).
ack_writes() {
  local n=$1
  if ! command -v perf > /dev/null; then echo "  (skipped: perf is not installed; apt-get install linux-perf)"; return 0; fi
  fresh_stream; prepublish "$n" 128 "$(keys_for 4)"
  jetfan_config "h0:#"
  start_jetfan ""  # no handler yet: nothing is acked before perf is watching
  perf stat -x, -e syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg -p "$jetfan_pid" -o "$work/perf.txt" &
  local perf_pid=$!
  sleep 0.5  # perf attaches asynchronously, and nothing is acked until the handler starts
  "${handler_cmd[@]}" "$work/jetfan.sock" h0 "$work/handler-h0.lat" > "$work/handler-h0.out" &
  handler_pids=($!)
  "$tool" watch "$url" BENCH bench_durable 300 > /dev/null
  kill -INT $perf_pid; wait $perf_pid 2>/dev/null || true
  stop_all $jetfan_pid "${handler_pids[@]}"
  local sends gathers
  sends=$(awk -F, '/sys_enter_sendto/ {print $1}' "$work/perf.txt")
  gathers=$(awk -F, '/sys_enter_sendmsg/ {print $1}' "$work/perf.txt")
  if ! [[ "$sends" =~ ^[0-9]+$ ]] || [ "$sends" = 0 ]; then
    echo "  (perf could not count system calls here: $(head -c 300 "$work/perf.txt"))"; return 0
  fi
  echo "  $n messages acked with $sends send() calls: at least $(awk -v n="$n" -v s="$sends" 'BEGIN {printf "%.1f", n / s}') +ACKs per write to the server; $gathers gather writes to the handler"
  echo "messages,sends,acks_per_send,handler_gather_writes" > "$out/acks.csv"
  echo "$n,$sends,$(awk -v n="$n" -v s="$sends" 'BEGIN {printf "%.2f", n / s}'),$gathers" >> "$out/acks.csv"
}
# Ordered delivery (handlers[].order_by): one handler acking at once, ordered by key over 1,000
# distinct keys, against the same handler unordered, on the same messages (published once, the
# consumer rewound before each run), back to back in each round; then the same handler ordered on a
# single key, which is serial: jetfan gives it the next message of the key only after the ACK of the
# one before, so its time per message is one round trip (MSG out, ACK in, the next MSG out).
order_rounds() {  # N ROUNDS
  local n=$1 order_round_count=$2 r unordered ordered single_n
  echo "== ordered delivery at 128 B, one handler: order_by key on 1000 keys against unordered; $order_round_count rounds of $n messages"
  echo "round,case,keys,messages,seconds" > "$out/order.csv"
  fresh_stream; prepublish "$n" 128 "$(keys_for 1000)"
  for r in $(seq "$order_round_count"); do
    # Which goes first alternates, so that whatever the first run of a round pays is shared.
    for which in $( [ $((r % 2)) = 1 ] && echo "unordered ordered" || echo "ordered unordered"); do
      "$tool" rewind "$url" BENCH bench_durable "$max_ack_pending"
      if [ "$which" = ordered ]; then order_by=key drain_jetfan "h0:#" " h0"; ordered=$sec
      else order_by="" drain_jetfan "h0:#" " h0"; unordered=$sec; fi
    done
    echo "$r,unordered,1000,$n,$unordered" >> "$out/order.csv"
    echo "$r,ordered,1000,$n,$ordered" >> "$out/order.csv"
    echo "  round $r: unordered $(awk -v n="$n" -v s="$unordered" 'BEGIN {printf "%.0f", n / s}') msg/s," \
      "ordered $(awk -v n="$n" -v s="$ordered" 'BEGIN {printf "%.0f", n / s}') msg/s"
  done
  single_n=$(( n / 20 > 100 ? n / 20 : 100 ))
  fresh_stream; prepublish "$single_n" 128 k0
  order_by=key drain_jetfan "h0:#" " h0"
  echo "single,ordered,1,$single_n,$sec" >> "$out/order.csv"
  bash bench/report.sh --order "$out"
}
if [ "$mode" = order ]; then
  order_rounds "$order_n" "$order_round_count"
  echo "== results in $out"
  exit 0
fi

if [ "$mode" = acks ]; then
  echo "== +ACK batching: $ack_n messages of 128 B, one handler"
  ack_writes "$ack_n"
  exit 0
fi

# docs/BENCHMARKS.md shows bench.md of the latest full run (or --sweep) between its bench:start and
# bench:end markers; the README's headline figures are written by hand from it.
benchmarks_from() {  # BENCH_MD
  awk -v table="$1" '/<!-- bench:start -->/ {print; while ((getline line < table) > 0) if (line !~ /^# /) print line; skip = 1; next}
    /<!-- bench:end -->/ {skip = 0} !skip' docs/BENCHMARKS.md > "$work/BENCHMARKS.md" && cp "$work/BENCHMARKS.md" docs/BENCHMARKS.md
}

# shellcheck source=bench/sweep.sh
source "$root/bench/sweep.sh"
# shellcheck source=bench/per_delivery.sh
source "$root/bench/per_delivery.sh"
# Steady state: a full run drains at least 20 × max_held messages of a size (steady_count, as the
# sweep's: max_held is the consumer's MaxAckPending or what fits in 32 MiB), so the held window's
# fill at the start and drain at the end are a small part of every run.
if [ "${steady:-0}" = 1 ]; then for size in "${sizes[@]}" 256; do count[$size]=$(steady_count "$size"); done; fi

# One interleaved round (round $r) of the cases at SIZE, back to back on the same messages; appends to
# rounds.csv and prints each case's rate as a ratio to A's.
round_cases() {  # SIZE CASE...: one round of the cases, each "A", "G", "B" or "C<handlers>[p100]"
  local size=$1 c line a=""; shift
  line="  round $r, $size B:"
  for c in "$@"; do
    case $c in
      A) run_direct "$size" ;;
      G) run_go "$size" ;;
      B) run_inprocess "$size" 1 ;;
      Cp100) run_jetfan "$size" 1 p100 ;;
      C*) run_jetfan "$size" "${c#C}" all ;;
    esac
    [ "$rss" = - ] && rss=""
    [ "$cpu" = - ] && cpu=""
    echo "$r,$size,$c,$sec,$rss,${count[$size]},$cpu" >> "$out/rounds.csv"
    [ "$c" = A ] && a=$sec
    line+=" $c $(awk -v a="$a" -v s="$sec" 'BEGIN {printf "%.2f", a / s}')"
  done
  echo "$line (×A)"
}
g_case=(); [ -n "${go_reader:-}" ] && g_case=(G)
rounds_header() { echo "round,size,case,seconds,jetfan_peak_rss_mib,messages,jetfan_cpu_s" > "$out/rounds.csv"; }

if [ "$mode" = ratios ]; then
  echo "== ratios, interleaved rounds at 128 B: A, ${g_case[*]:+G, }C with 1, 4 and 8 all-matching handlers; at 256 B: A, ${g_case[*]:+G, }C1; $rounds rounds of ${count[128]}"
  rounds_header
  for r in $(seq "$rounds"); do round_cases 128 A "${g_case[@]}" C1 C4 C8; done
  for r in $(seq "$rounds"); do round_cases 256 A "${g_case[@]}" C1; done
  bash bench/report.sh --ratios "$out"
  exit 0
fi

if [ "$mode" = sweep ]; then
  sweep
  bash bench/report.sh --sweep "$out"
  if [ -f "$out/bench.md" ]; then benchmarks_from "$out/bench.md"; fi
  echo "== results in $out"
  exit 0
fi

if [ "$mode" = delivery ]; then
  per_delivery
  bash bench/report.sh --delivery "$out"
  exit 0
fi

if [ "$mode" = clients ]; then
  client_rows
  bash bench/report.sh --clients "$out"
  exit 0
fi

if [ "$mode" != instructions ]; then
echo "case,stack,handlers,patterns,size,messages,seconds,msgs_per_s,mb_per_s,jetfan_cpu_s_per_million,jetfan_peak_rss_mib" > "$csv"
echo "== throughput: messages pre-published, then drained; median of $reps runs"
for size in "${sizes[@]}"; do
  echo "  ($size B: ${count[$size]} messages)"
  measure "A direct cnats" A 1 - $size run_direct $size
  if [ -n "${go_reader:-}" ]; then measure "G nats.go" G 1 - $size run_go $size; fi
  measure "B in-process node 1 h" B 1 "#" $size run_inprocess $size 1
  measure "C jetfan 1 h all" C 1 1 $size run_jetfan $size 1 all
  for h in "${fanout[@]}"; do
    measure "C jetfan $h h all" C $h 1 $size run_jetfan $size $h all
    measure "C jetfan $h h disjoint" C $h 1 $size run_jetfan $size $h disjoint
  done
done
measure "B in-process node 4 h" B 4 "#" 128 run_inprocess 128 4
measure "C jetfan 1 h p100" C 1 100 128 run_jetfan 128 1 p100

# The targets' ratios: A, B and the C cases of a size run back to back in each round, on the same
# messages, so drift on a shared machine (disk, page cache, neighbours) hits all of them alike;
# report.sh takes the median of the per-round ratios to A.
echo "== ratios, interleaved rounds: at 128 B A, G (if built), B, C with 1, 4 and 8 all-matching handlers and with 100 patterns;"
echo "   at 16 KiB A, G, C with 4 and 8; $rounds rounds"
rounds_header
for r in $(seq "$rounds"); do round_cases 128 A "${g_case[@]}" B C1 C4 C8 Cp100; done
for r in $(seq "$rounds"); do round_cases 16384 A "${g_case[@]}" C4 C8; done
for r in $(seq "$rounds"); do round_cases 256 A "${g_case[@]}" C1; done

client_rows

order_rounds "$order_n" "$order_round_count"

echo "== latency: $lat_n messages published at $lat_rate msg/s while consumed"
lat_csv=$out/latency.csv
echo "stack,p50_us,p99_us,p999_us,samples,round" > "$lat_csv"
percentiles() {  # file -> p50,p99,p999,n
  sort -n "$1" | awk '{v[NR] = $1}
    function at(q,   i) { i = int(NR * q); if (i < 1) i = 1; return v[i] }
    END {if (NR == 0) {print "0,0,0,0"; exit} printf "%d,%d,%d,%d", at(0.5), at(0.99), at(0.999), NR}'
}
latency_run() {  # stack label: starts the reader, publishes paced, stops, records
  local stack=$1
  fresh_stream
  case $stack in
    A) "$tool" direct "$url" BENCH bench_durable "$lat_n" "$work/lat.lat" > "$work/lat.out" & local pids_here=($!); wait_file "$work/lat.out" ready_ns ;;
    B) node bench/node/reader.mjs "$url" BENCH bench_durable bench. "$work/lat.lat" "#" > "$work/lat.out" 2>&1 & local pids_here=($!); wait_file "$work/lat.out" ready_ns ;;
    C) jetfan_config "h0:#"; start_jetfan " h0"; wait_file "$work/handler-h0.out" ready_ns; local pids_here=($jetfan_pid "${handler_pids[@]}") ;;
  esac
  "$tool" publish "$url" bench. k0 "$lat_n" 128 "$lat_rate" > /dev/null
  "$tool" watch "$url" BENCH bench_durable 120 > /dev/null
  stop_all "${pids_here[@]}"
  [ "$stack" = C ] && cp "$work/handler-h0.lat" "$work/lat.lat"
  echo "$stack,$(percentiles "$work/lat.lat"),$r" >> "$lat_csv"
  echo "  $stack: p50/p99/p99.9/n = $(percentiles "$work/lat.lat") (us)"
}
for r in $(seq "$(( rounds > 1 ? 3 : 1 ))"); do latency_run A; latency_run B; latency_run C; done

echo "== memory: $held_n messages of 1 KiB held (handler declared, not connected)"
fresh_stream 20000
jetfan_config "absent:#" "  max_held: $held_n"$'\n'
start_jetfan ""
prepublish "$held_n" 1024 k0
"$tool" held "$url" BENCH bench_durable "$held_n" 120 > /dev/null
held_rss=$(rss_mib $jetfan_pid); held_peak=$(peak_rss_mib $jetfan_pid)
stop_all $jetfan_pid
echo "  jetfan RSS $held_rss MiB (peak $held_peak MiB)"

if [ $smoke = 0 ]; then
  echo "== +ACK batching: 100000 messages of 128 B, one handler"
  ack_writes 100000
fi

sweep
per_delivery
fi

echo "== instructions per message inside jetfan (callgrind, ${cg[0]} vs ${cg[1]} messages of 128 B)"
# Valgrind runs one thread at a time, so a thread waiting for cnats's connection lock spins (cnats
# tries the lock 2000 times before it sleeps) until valgrind switches threads: how many instructions
# that takes varies by hundreds per message between identical runs. The figure is given whole and
# without lock acquisition (pthread_mutex_trylock and natsMutex_Lock), which is the one to compare.
instructions() {  # spec N [NAMES] -> "total locking" instructions of the jetfan process
  local spec=$1 n=$2 handler_names=${3:- h0}
  fresh_stream; prepublish "$n" 128 "$(keys_for 16)"
  jetfan_config "$spec"
  start_jetfan "$handler_names" valgrind --tool=callgrind --callgrind-out-file="$work/cg.out"
  "$tool" watch "$url" BENCH bench_durable 600 > /dev/null
  save_status
  stop_all $jetfan_pid "${handler_pids[@]}"
  # JETFAN_CALLGRIND_KEEP=DIR keeps each profile for callgrind_annotate (named commas-messages).
  [ -z "${JETFAN_CALLGRIND_KEEP:-}" ] || cp "$work/cg.out" "$JETFAN_CALLGRIND_KEEP/cg-$(echo "$spec" | tr -cd , | wc -c)-$n.out"
  local total locking
  total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/jetfan.log" | tail -1)
  locking=$(callgrind_annotate --auto=no --threshold=100 "$work/cg.out" 2>/dev/null |
    awk '/pthread_mutex_trylock|natsMutex_Lock / {gsub(",", "", $1); sum += $1} END {print sum + 0}')
  echo "$total $locking"
}
# ipm "total1 locking1" "total2 locking2" -> "per-message-total per-message-without-locking"
ipm() {
  awk -v a="$1" -v b="$2" -v n1="${cg[0]}" -v n2="${cg[1]}" 'BEGIN {
    split(a, x, " "); split(b, y, " "); d = n2 - n1
    printf "%.0f %.0f", (y[1] - x[1]) / d, ((y[1] - y[2]) - (x[1] - x[2])) / d }'
}
read -r ipm2 ipm2_nolock <<< "$(ipm "$(instructions "h0:#,mesh-x.y" "${cg[0]}")" "$(instructions "h0:#,mesh-x.y" "${cg[1]}")")"
read -r ipm100 ipm100_nolock <<< "$(ipm "$(instructions "h0:${p100}#" "${cg[0]}")" "$(instructions "h0:${p100}#" "${cg[1]}")")"
echo "  2 patterns: $ipm2 instructions/message ($ipm2_nolock without lock acquisition)"
echo "  100 patterns: $ipm100 instructions/message ($ipm100_nolock without lock acquisition)"
echo "patterns,instructions_per_message,without_locking" > "$out/instructions.csv"
printf '2,%s,%s\n100,%s,%s\n' "$ipm2" "$ipm2_nolock" "$ipm100" "$ipm100_nolock" >> "$out/instructions.csv"
# BENCH_INSTRUCTIONS_C4=1: the figure with 4 handlers on "#" too (each message delivered and confirmed 4
# times; bench/ledger.sh: what the ledger tracks while the others confirm).
if [ -n "${BENCH_INSTRUCTIONS_C4:-}" ]; then
  all_handlers 4
  read -r ipm4 ipm4_nolock <<< "$(ipm "$(instructions "$spec" "${cg[0]}" "$names")" "$(instructions "$spec" "${cg[1]}" "$names")")"
  echo "  4 handlers: $ipm4 instructions/message ($ipm4_nolock without lock acquisition)"
  printf 'c4,%s,%s\n' "$ipm4" "$ipm4_nolock" >> "$out/instructions.csv"
fi
[ "$mode" = instructions ] && exit 0

bash bench/report.sh "$out" "$held_rss" "$held_peak" "$held_n" "$reps" "$lat_rate"
if [ $smoke = 0 ]; then benchmarks_from "$out/bench.md"; fi
echo "== results in $out"
if [ $smoke = 1 ]; then
  for png in bench.png sweep.png delivery.png; do  # drawn, not only asked for
    head -c 4 "$out/$png" 2>/dev/null | grep -q PNG || { echo "bench: $out/$png was not drawn" >&2; exit 1; }
  done
  echo "bench: smoke run OK"
fi
