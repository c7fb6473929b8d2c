#!/usr/bin/env bash
# The TypeScript client's benchmark handler (bench/handler.mjs) against the C++ client's
# (`jetfan-bench handler`), measured as bench/run.sh measures "C jetfan 1 h all": COUNT messages of
# 128 B are in the stream first; jetfan starts, then one handler; the time runs from jetfan's socket
# appearing until the server shows nothing pending or unacked. Rounds interleave the two clients.
#
#   proto/node/bench/compare.sh [ROUNDS=5] [COUNT=100000]
#
# Prints each run's msg/s and the median of the per-round ratios (TypeScript / C++), timed from
# jetfan's socket appearing (as bench/run.sh times its C rows, so the handler's start-up counts) and
# from the handler's ready_ns (as it times the B rows).
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-5}
n=${2:-100000}
bin=$(pwd)/${JETFAN_BUILD_DIR:-build}
tool=$bin/bench/jetfan-bench
[ -x "$tool" ] && [ -x "$bin/daemon/jetfan" ] || { echo "compare.sh: build first (scripts/build.sh)" >&2; exit 1; }
[ -f proto/node/dist/index.js ] || (cd proto/node && npm ci --silent && npx tsc -p tsconfig.json)

work=$(mktemp -d /tmp/jetfan-compare.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

nats-server -js -sd "$work/js" -a 127.0.0.1 -p -1 > "$work/nats.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do grep -q "Listening for client" "$work/nats.log" && break; sleep 0.05; done
url="nats://127.0.0.1:$(sed -n 's/.*Listening for client connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/nats.log")"
cat > "$work/jetfan.yaml" <<YAML
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

value() { sed -n "s/^$1=//p" "$2" | head -1; }

run() {  # run cpp|node: prints msg/s
  "$tool" setup "$url" BENCH bench_durable 20000
  "$tool" publish "$url" bench. k0,k1,k2,k3 "$n" 128 > /dev/null
  rm -f "$work/jetfan.sock"
  "$bin/daemon/jetfan" serve --config "$work/jetfan.yaml" > "$work/jetfan.log" 2>&1 &
  local jetfan=$!
  for _ in $(seq 3000); do [ -S "$work/jetfan.sock" ] && break; sleep 0.005; done
  local t0
  t0=$("$tool" now)
  if [ "$1" = cpp ]; then
    "$tool" handler "$work/jetfan.sock" h0 "$work/h.lat" > "$work/h.out" &
  else
    node proto/node/bench/handler.mjs "$work/jetfan.sock" h0 "$work/h.lat" > "$work/h.out" &
  fi
  local handler=$!
  "$tool" watch "$url" BENCH bench_durable 300 > "$work/watch.out"
  kill -TERM "$jetfan"; wait "$jetfan" || true
  wait "$handler" || true
  # Two rates: from jetfan's socket appearing (as bench/run.sh times the C rows; it includes the
  # handler's start-up), and from the handler's ready_ns (as bench/run.sh times the B rows).
  awk -v n="$n" -v a="$t0" -v r="$(value ready_ns "$work/h.out")" -v b="$(value settled_ns "$work/watch.out")" \
    'BEGIN { printf "%.0f %.0f\n", n / ((b - a) / 1e9), n / ((b - r) / 1e9) }'
}

ratios=()
ready_ratios=()
for round in $(seq "$rounds"); do
  read -r cpp cpp_ready < <(run cpp)
  read -r node node_ready < <(run node)
  ratio=$(awk -v a="$node" -v b="$cpp" 'BEGIN { printf "%.2f", a / b }')
  ready_ratio=$(awk -v a="$node_ready" -v b="$cpp_ready" 'BEGIN { printf "%.2f", a / b }')
  ratios+=("$ratio")
  ready_ratios+=("$ready_ratio")
  printf 'round %d: from jetfan start: C++ %s, TypeScript %s msg/s (%s); from handler ready: C++ %s, TypeScript %s msg/s (%s)\n' \
    "$round" "$cpp" "$node" "$ratio" "$cpp_ready" "$node_ready" "$ready_ratio"
done
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
echo "median ratio TypeScript / C++ (128 B, one handler, $n messages, $rounds rounds): $(median "${ratios[@]}") from jetfan start, $(median "${ready_ratios[@]}") from handler ready"
