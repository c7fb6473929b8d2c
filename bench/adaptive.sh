#!/usr/bin/env bash
# The adaptive in-flight limit's benchmark: a handler whose capacity changes mid-run, with the limit
# following it, the other handler unaffected and nothing lost.
#
#   bench/adaptive.sh           phases of 10 s; writes bench/results/adaptive.md (the tables) and
#                               bench/results/adaptive.csv (the status samples of both runs)
#   bench/adaptive.sh --smoke   phases of 2 s, results in a temp dir; exits non-zero if a message
#                               was lost or redelivered or the consumer did not settle (CI runs this)
#
# Needs build/daemon/jetfan and build/bench/jetfan-bench (cmake --build build --target jetfan
# jetfan-bench; JETFAN_BUILD_DIR=dir and JETFAN_BIN=path point elsewhere), nats-server and python3.
#
# Each run starts its own nats-server (temp dir, a free port), makes the stream BENCH and the durable
# bench_durable (MaxAckPending 200000, so jetfan can hold the whole backlog and never stops pulling
# for the handler that keeps up), and jetfan with two handlers on every message:
#   db     `jetfan-bench capacity` with SERVICE_MS 5 and SCHEDULE 8:P,2:P,16:P: a service with a
#          pool of 8, then 2, then 16 connections (1600, 400, 3200 deliveries/s at most), each
#          delivery 5 ms; max_inflight 64, ack_timeout 30s
#   audit  `jetfan-bench handler`: acks at once
# and publishes RATE (4000) messages a second for 3P seconds, above db's capacity in every phase, so
# db is always saturated and jetfan holds a backlog for it. STATUS JSON is sampled every 200 ms
# (bench/adaptive.py sample). When the consumer has settled (everything acked by both), jetfan and
# the handlers are stopped, and the handlers write their logs. Two runs, the same but for db's limit:
#   adaptive  adaptive_inflight: true, min_inflight: 1 (the limit moves between 1 and 64)
#   fixed     the limit is max_inflight, 64, always (the baseline)
# bench/adaptive.py report makes the tables: per phase and run, db's limit over the phase's second
# half, its latency inside the handler (receipt to ACK: its own queue and the service, which the
# limit controls) and publish to ACK (with the wait in jetfan's backlog), its ACKs a second; per
# run audit's publish-to-receipt latency; and the checks: every message confirmed by both handlers
# (their logs have one line per published message), none delivered twice (status counts.delivered
# == published, no failures), the consumer settled.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. "$root/bench/scratch.sh"
. "$root/bench/drain.sh"
bench_smoke_arg adaptive "$@"
if [ $smoke = 1 ]; then phase=2; else phase=10; fi
rate=${ADAPTIVE_RATE:-4000}
service_ms=5
schedule="8:$phase,2:$phase,16:$phase"
count=$((rate * 3 * phase))

bin=${JETFAN_BUILD_DIR:-build}; [[ $bin == /* ]] || bin=$root/$bin  # absolute, or under the tree
tool=$bin/bench/jetfan-bench
jetfan=${JETFAN_BIN:-$bin/daemon/jetfan}
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')  # past any launcher shim: the sampler starts at once
helper=$root/bench/adaptive.py
for f in "$tool" "$jetfan"; do
  [ -x "$f" ] || { echo "bench: $f is not built (cmake --build build --target jetfan jetfan-bench)" >&2; exit 1; }
done

# ADAPTIVE_KEEP=DIR keeps the run's files (logs, configs, status) there.
bench_scratch adaptive ADAPTIVE_KEEP

bench_server

jetfan_config() {  # adaptive|fixed
  {
    printf 'nats:\n  servers: ["%s"]\nconsumer:\n  stream: BENCH\n  durable: bench_durable\n' "$url"
    printf 'key:\n  strip_prefix: "bench."\nsocket:\n  path: %s/jetfan.sock\nhandlers:\n' "$work"
    printf '  - name: db\n    patterns: ["#"]\n    max_inflight: 64\n    ack_timeout: 30s\n'
    [ "$1" = fixed ] || printf '    adaptive_inflight: true\n    min_inflight: 1\n'
    printf '  - name: audit\n    patterns: ["#"]\n'
    printf 'log:\n  level: warn\n'
  } > "$work/jetfan.yaml"
}

echo "run,t_ns,db_inflight_limit,db_in_flight,db_queued,db_cuts_nak,db_cuts_timeout,db_cuts_latency,db_acked,audit_acked,db_confirmed,db_confirm_seconds" > "$work/samples.csv"

one_run() {  # adaptive|fixed
  local run=$1 settled=0
  local limit="adaptive limit 1..64"; [ "$run" = fixed ] && limit="fixed limit 64"
  echo "== $run: db with $limit, capacity $schedule (capacity:seconds), $service_ms ms a delivery; $count messages at $rate/s"
  "$tool" setup "$url" BENCH bench_durable 200000
  jetfan_config "$run"
  rm -f "$work/jetfan.sock"
  "$jetfan" serve --config "$work/jetfan.yaml" > "$work/$run-jetfan.log" 2>&1 &
  local jetfan_pid=$!
  for _ in $(seq 3000); do [ -S "$work/jetfan.sock" ] && break; sleep 0.005; done
  "$tool" capacity "$work/jetfan.sock" db "$service_ms" "$schedule" "$work/$run-db.log" > "$work/$run-db.out" 2>> "$work/handlers.err" &
  local db_pid=$!
  "$tool" handler "$work/jetfan.sock" audit "$work/$run-audit.lat" > "$work/$run-audit.out" 2>> "$work/handlers.err" &
  local audit_pid=$!
  wait_file "$work/$run-db.out" ready_ns
  wait_file "$work/$run-audit.out" ready_ns
  "$python" "$helper" sample "$work/jetfan.ctl" "$run" "$work/samples.csv" &
  local sampler_pid=$!
  "$tool" publish "$url" bench. k0,k1,k2,k3 "$count" 128 "$rate" > "$work/$run-publish.out"
  # Phases end 3P after db's first delivery; what db has not done by then it does at the last capacity.
  "$tool" watch "$url" BENCH bench_durable $((smoke ? 60 : 300)) > "$work/$run-watch.out" || settled=$?
  echo "$settled" > "$work/$run-settled"
  echo "$count" > "$work/$run-published"
  sleep 0.5  # the last ACKs' counts, and a last sample or two
  "$python" "$helper" status "$work/jetfan.ctl" > "$work/$run-status.json" || true
  stop_all "$sampler_pid"
  stop_all "$jetfan_pid" "$db_pid" "$audit_pid"  # the handlers write their logs when jetfan closes them
  if [ -s "$work/handlers.err" ]; then sed 's/^/  handler: /' "$work/handlers.err"; : > "$work/handlers.err"; fi
}

one_run adaptive
one_run fixed

echo "== results"
status=0
"$python" "$helper" report "$work" "$phase" "$schedule" "$service_ms" "$rate" "$out/adaptive.md" || status=$?
if [ $smoke = 0 ]; then cp "$work/samples.csv" "$out/adaptive.csv"; fi
echo "== results in $out"
if [ $status != 0 ]; then echo "bench: adaptive run FAILED a check" >&2; exit 1; fi
[ $smoke = 1 ] && echo "bench: adaptive smoke run OK"
exit 0
