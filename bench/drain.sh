# shellcheck shell=bash
# Sourced by the feature benchmarks (bench/adaptive.sh, bench/tracing.sh, bench/flow_control.sh),
# after bench/scratch.sh: the binaries they measure, a nats-server of their own, and the drains they
# time, as bench/run.sh's rounds are timed.
#
#   bench_binaries        sets $build_dir (JETFAN_BUILD_DIR, default build/: absolute or under the
#                         tree), $bin (it, absolute), $tool, $jetfan and $python. Outside smoke mode it
#                         builds jetfan and jetfan-bench first (scripts/build.sh; JETFAN_BUILD_TARGETS
#                         says otherwise) and measures a copy of that jetfan in $work, so an edit made
#                         meanwhile cannot change the binary between runs; JETFAN_BIN=path measures
#                         another jetfan.
#   bench_server          starts nats-server (JetStream in $work/js, a free port; its pid joins
#                         $pids) and sets $url
#   drain_a               the direct cnats reader (A, bench/run.sh's ceiling) drains the consumer
#                         of $n messages of $size B; sets $sec (from its ready until the server shows
#                         nothing pending or unacked)
#   drain_jetfan LABEL    $jetfan with $work/jetfan.yaml (socket $work/jetfan.sock, handler h0) and
#                         one `jetfan-bench handler` h0 (acks at once) drain the consumer; sets
#                         $settled (0: nothing pending or unacked within $settle_timeout s, default
#                         300), $sec (jetfan's start until then, 0 if it did not settle), $cpu
#                         (jetfan's user + system seconds, all threads, from /proc as it settled),
#                         $wakeups (its threads' voluntary context switches until then: each a wait for
#                         something to read or write, so fewer means more done per wake-up),
#                         with count_syscalls=1 $syscalls (its system calls from its socket's
#                         appearing until then, by `perf stat`; empty where perf cannot count them),
#                         $lines (messages the handler received) and writes $work/status.json
#                         (`jetfan status --json` as it settled) before it stops both. Exits the
#                         script, saying why with LABEL, if jetfan does not start or ends early.
#   rewind                rewinds the consumer to the start of the stream
#   instruction_figures LOG
#                         from the output of `bench/run.sh --instructions`: "I2,W2,I100,W100", its
#                         instructions per message with 2 and with 100 patterns, each with and without
#                         lock acquisition; exits the script if LOG has none
#   value KEY FILE, wait_file FILE TEXT, stop_all PID..., elapsed T0_NS T1_NS, cpu_seconds PID
#
# Needs $work, $pids, $tool (jetfan-bench), and for the drains $jetfan, $n and $size.

bench_binaries() {
  build_dir=${JETFAN_BUILD_DIR:-build}
  bin=$build_dir; [[ $bin == /* ]] || bin=${root:?}/$bin
  tool=$bin/bench/jetfan-bench
  python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')  # past any launcher shim
  if [ "${smoke:?}" = 0 ]; then
    JETFAN_BUILD_DIR=$build_dir JETFAN_BUILD_TARGETS=${JETFAN_BUILD_TARGETS:-jetfan jetfan-bench} scripts/build.sh > /dev/null
    if [ -z "${JETFAN_BIN:-}" ]; then cp "$bin/daemon/jetfan" "$work/jetfan"; jetfan=$work/jetfan; else jetfan=$JETFAN_BIN; fi
  else
    jetfan=${JETFAN_BIN:-$bin/daemon/jetfan}
  fi
  local f
  for f in "$tool" "$jetfan"; do
    [ -x "$f" ] || { echo "bench: $f is not built (cmake --build $build_dir --target jetfan jetfan-bench)" >&2; exit 1; }
  done
}

value() { sed -n "s/^$1=//p" "$2" | head -1; }
wait_file() { for _ in $(seq 1000); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done; echo "bench: timed out waiting for $2 in $1" >&2; return 1; }
stop_all() {
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.4f", (b - a) / 1e9}'; }
cpu_seconds() { awk '{printf "%.3f", ($14 + $15) / 100}' "/proc/$1/stat"; }

bench_server() {
  command -v nats-server > /dev/null || { echo "bench: nats-server is not on PATH (scripts/deps.sh)" >&2; exit 1; }
  nats-server -js -sd "$work/js" -a 127.0.0.1 -p -1 > "$work/nats.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q "Listening for client" "$work/nats.log" && break; sleep 0.05; done
  url="nats://127.0.0.1:$(sed -n 's/.*Listening for client connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/nats.log")"
}

drain_jetfan() {
  local label=$1 t0 handler_pid jetfan_pid log=$work/jetfan-${1// /-}.log
  rm -f "$work/jetfan.sock" "$work/h0.lat" "$work/h0.out"
  "$jetfan" serve --config "$work/jetfan.yaml" > "$log" 2>&1 &
  jetfan_pid=$!
  for _ in $(seq 3000); do [ -S "$work/jetfan.sock" ] && break; kill -0 $jetfan_pid 2> /dev/null || break; sleep 0.005; done
  if ! kill -0 $jetfan_pid 2> /dev/null; then
    sed 's/^/  jetfan: /' "$log" >&2; echo "bench: jetfan ($label) did not start" >&2; exit 1
  fi
  local perf_pid=""
  syscalls=""
  if [ "${count_syscalls:-0}" = 1 ] && perf stat -e raw_syscalls:sys_enter true > /dev/null 2>&1; then
    perf stat -x, -e raw_syscalls:sys_enter -p $jetfan_pid -o "$work/perf.out" &
    perf_pid=$!
  fi
  t0=$("$tool" now)
  "$tool" handler "$work/jetfan.sock" h0 "$work/h0.lat" > "$work/h0.out" 2>> "$work/handlers.err" &
  handler_pid=$!
  settled=0
  "$tool" watch "$url" BENCH bench_durable "${settle_timeout:-300}" > "$work/watch.out" || settled=$?
  if [ $settled = 0 ]; then sec=$(elapsed "$t0" "$(value settled_ns "$work/watch.out")"); else sec=0; fi
  if ! kill -0 $jetfan_pid 2> /dev/null; then
    sed 's/^/  jetfan: /' "$log" >&2; echo "bench: jetfan ($label) ended before the consumer settled" >&2; exit 1
  fi
  cpu=$(cpu_seconds $jetfan_pid)
  if [ -n "$perf_pid" ]; then
    kill -INT $perf_pid; wait $perf_pid 2> /dev/null || true
    syscalls=$(awk -F, '/raw_syscalls/ {print $1}' "$work/perf.out")
  fi
  wakeups=$(cat /proc/$jetfan_pid/task/*/status 2> /dev/null | awk '/^voluntary_ctxt_switches:/ {s += $2} END {print s + 0}')
  "$jetfan" status --json --config "$work/jetfan.yaml" > "$work/status.json" || echo "bench: jetfan status failed" >&2
  stop_all $jetfan_pid $handler_pid
  lines=0; [ ! -f "$work/h0.lat" ] || lines=$(wc -l < "$work/h0.lat")
  # The configs log at level warn: anything in the log is worth a look.
  if [ -s "$log" ]; then sed 's/^/  jetfan: /' "$log" | head -5; fi
}

drain_a() {
  "$tool" direct "$url" BENCH bench_durable "$n" "$work/direct.lat" "$size" > "$work/direct.out" 2>&1 &
  local pid=$!
  wait_file "$work/direct.out" ready_ns
  "$tool" watch "$url" BENCH bench_durable 300 > "$work/watch.out"
  sec=$(elapsed "$(value ready_ns "$work/direct.out")" "$(value settled_ns "$work/watch.out")")
  stop_all $pid
}

rewind() { "$tool" rewind "$url" BENCH bench_durable 20000 > /dev/null; }

instruction_figures() {
  local two hundred
  two=$(sed -n 's/^  2 patterns: \([0-9-]*\) instructions\/message (\([0-9-]*\) without.*/\1,\2/p' "$1")
  hundred=$(sed -n 's/^  100 patterns: \([0-9-]*\) instructions\/message (\([0-9-]*\) without.*/\1,\2/p' "$1")
  if [ -z "$two" ] || [ -z "$hundred" ]; then tail -20 "$1" >&2; echo "bench: no instruction figure in $1" >&2; exit 1; fi
  echo "$two,$hundred"
}
