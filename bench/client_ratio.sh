#!/usr/bin/env bash
# Interim, until bench/run.sh has a row per client: jetfan with one handler, 128 B messages, the
# handler on the C++ client (jetfan-bench handler) and on the Python client
# (proto/python/bench_handler.py), interleaved for ROUNDS rounds, measured as run.sh measures C:
# from the handler's start (messages already in the stream) until the server shows nothing
# pending or unacked; in brackets, from the handler's ready_ns instead (without its start-up).
# Prints each run and the median of the per-round ratios Python/C++.
#   [PYTHON=python3] bench/client_ratio.sh [N=50000] [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
n=${1:-50000}
rounds=${2:-3}
bin=$root/${JETFAN_BUILD_DIR:-build}
tool=$bin/bench/jetfan-bench
work=$(mktemp -d /tmp/jetfan-ratio.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
nats-server -js -sd "$work/js" -a 127.0.0.1 -p -1 > "$work/nats.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do grep -q "Listening for client" "$work/nats.log" && break; sleep 0.05; done
url="nats://127.0.0.1:$(sed -n 's/.*Listening for client connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/nats.log")"
cat > "$work/jetfan.yaml" << YAML
nats:
  servers: ["$url"]
consumer:
  stream: BENCH
  durable: bench_durable
key:
  strip_prefix: "bench."
socket:
  path: $work/jetfan.sock
handlers:
  - name: h0
    max_inflight: 1024
    patterns: ["#"]
log:
  level: warn
YAML

run() {  # run HANDLER_CMD...: prints msg/s
  "$tool" setup "$url" BENCH bench_durable 20000
  "$tool" publish "$url" bench. k0,k1,k2,k3 "$n" 128 > /dev/null
  rm -f "$work/jetfan.sock"
  "$bin/daemon/jetfan" serve --config "$work/jetfan.yaml" > "$work/jetfan.log" 2>&1 &
  local jetfan=$!
  for _ in $(seq 3000); do [ -S "$work/jetfan.sock" ] && break; sleep 0.005; done
  local t0
  t0=$("$tool" now)
  "$@" "$work/jetfan.sock" h0 "$work/h.lat" > "$work/h.out" &
  local handler=$!
  "$tool" watch "$url" BENCH bench_durable 300 > "$work/watch.out"
  kill -TERM $jetfan $handler 2> /dev/null || true
  wait $jetfan $handler 2> /dev/null || true
  awk -v n="$n" -v a="$t0" -v r="$(sed -n 's/^ready_ns=//p' "$work/h.out")" \
      -v b="$(sed -n 's/^settled_ns=//p' "$work/watch.out")" 'BEGIN {printf "%.0f %.0f\n", n / ((b - a) / 1e9), n / ((b - r) / 1e9)}'
}

ratios=()
for r in $(seq "$rounds"); do
  read -r cpp cpp_ready < <(run "$tool" handler)
  read -r py py_ready < <(run "${PYTHON:-python3}" "$root/proto/python/bench_handler.py")
  ratio=$(awk -v p="$py" -v c="$cpp" 'BEGIN {printf "%.2f", p / c}')
  ratios+=("$ratio")
  echo "round $r: C++ client $cpp msg/s [$cpp_ready], Python client $py msg/s [$py_ready], Python/C++ $ratio" \
    "[$(awk -v p="$py_ready" -v c="$cpp_ready" 'BEGIN {printf "%.2f", p / c}')]"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")
echo "median Python/C++ over $rounds rounds ($n messages of 128 B, one handler): $median"
