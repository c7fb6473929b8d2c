#!/usr/bin/env bash
# Publishing through jetfan (protocol version 3's PUB) against publishing directly, in one run:
#
#   P-A      a direct cnats JetStream publisher: js_PublishAsync of N messages of 128 B to stream OUT
#            (out.k0..k7), at most 256 unacknowledged, then js_PublishAsyncComplete
#            (`jetfan-publish-bench direct`)
#   P-G      the same on nats.go: js.PublishAsync, PublishAsyncMaxPending(256), PublishAsyncComplete
#            (`jetfan-publish-go publish`, bench/go/publisher.go)
#   P-C      a handler with no NATS connection publishing the same N through jetfan: raw protocol 3
#            frames over jetfan's socket, at most 256 PUBs unanswered (jetfan's default
#            publish.max_in_flight), counting the PUBOKs (`jetfan-publish-bench publisher`)
#   Chain-C  N messages waiting in stream EVENTS; a handler that, for each delivery, PUBs a follow-up
#            tied to it (`<delivery-id> 0`) to out.<key> and ACKs it at once (jetfan holds the ACK
#            until the follow-up is stored) (`jetfan-publish-bench chain`)
#   Chain-G  the same chain on nats.go: Fetch(1024) from the durable, js.PublishMsgAsync of each
#            follow-up with a Nats-Msg-Id, at most 256 unacknowledged, each input acked only after its
#            follow-up's publish ack (`jetfan-publish-go chain`)
#
#   bench/publish.sh           the full run; writes bench/results/publish.md (the table) and
#                              bench/results/publish.csv (every run)
#   bench/publish.sh --smoke   PUBLISH_SMOKE_N (default 2000) messages, one round, results in a temp
#                              dir; exits non-zero if a message is missing anywhere (under a minute)
#
# The targets: P-C at least 0.8 × P-A, Chain-C at least 0.9 × Chain-G. In each of ROUNDS rounds
# (PUBLISH_ROUNDS, default 5) of N messages (PUBLISH_N, default 200000) the three publishers run back to
# back, in an order that turns each round, then the two chains (their order alternating), so that
# drift on a shared machine hits all of them alike; a ratio is the median of its per-round ratios.
#
# Times: P-A and P-G from connected to the last publish ack, P-C from READY to the last PUBOK (jetfan
# already running and connected); Chain-G from bound to the durable, Chain-C from jetfan's socket
# appearing (jetfan connected and bound; the handler not yet started, as bench/drain.sh's C runs),
# each until the server shows the EVENTS consumer with nothing pending or unacked, which for Chain-C
# means every follow-up stored (jetfan sends a held ACK only then). Before each run stream OUT is made
# afresh (empty, remembering no Nats-Msg-Id: a chain's follow-ups repeat their ids from run to run),
# and for a chain the EVENTS consumer is rewound. Every run is checked: OUT holds exactly N messages,
# every PUB was answered PUBOK (none a duplicate) and every publish acknowledged without error.
#
# Needs nats-server, python3 and a build: JETFAN_BUILD_DIR (default build/; an absolute path or one
# under the tree) holding daemon/jetfan, bench/jetfan-bench and bench/jetfan-publish-bench;
# JETFAN_BIN=path measures another jetfan. The full run builds them first (scripts/build.sh) and
# measures a copy of that jetfan, as bench/flow_control.sh does. The nats.go side is built from
# Debian 12's golang-go and golang-github-nats-io-go-nats-dev, offline, as bench/go/go_reader.sh
# builds G; without them (and, outside smoke mode, without root to install them) P-G and Chain-G are
# skipped with a line saying so. PUBLISH_KEEP=DIR keeps the run's files (logs, configs, outputs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. "$root/bench/scratch.sh"
. "$root/bench/drain.sh"
bench_smoke_arg publish "$@"
n=${PUBLISH_N:-200000}
rounds=${PUBLISH_ROUNDS:-5}
[ $smoke = 0 ] || { n=${PUBLISH_SMOKE_N:-2000}; rounds=1; }
[[ $n =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench: PUBLISH_N and PUBLISH_ROUNDS are counts" >&2; exit 64; }
size=128
window=256  # every publisher's unacknowledged publishes at most; jetfan's default publish.max_in_flight
batch=1024  # Chain-G's Fetch, and Chain-C's handler max_inflight: the inputs each may have at once
timeout=600  # seconds any one run may take
[ $smoke = 0 ] || timeout=30

bench_scratch publish PUBLISH_KEEP
JETFAN_BUILD_TARGETS=${JETFAN_BUILD_TARGETS:-jetfan jetfan-bench jetfan-publish-bench} bench_binaries
pbench=$bin/bench/jetfan-publish-bench
[ -x "$pbench" ] || { echo "bench: $pbench is not built (cmake --build $build_dir --target jetfan-publish-bench)" >&2; exit 1; }

# --- the nats.go side: bench/go/publisher.go, built as bench/go/go_reader.sh builds the reader ------
go_publisher=""
go_packages=(golang-go golang-github-nats-io-go-nats-dev)
go_publisher_build() {
  local missing=() p
  for p in "${go_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ $smoke = 1 ]; then
      echo "== P-G and Chain-G (nats.go) skipped in smoke mode: ${missing[*]} not installed (the full run installs them)"
      return 0
    fi
    if [ "$(id -u)" -ne 0 ] || ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" > "$work/go-install.log" 2>&1; then
      echo "== P-G and Chain-G (nats.go) skipped: ${missing[*]} not installed and not installable here$([ "$(id -u)" -ne 0 ] && echo " (needs root)")"
      return 0
    fi
  fi
  # GOPATH mode, offline: the Debian packages' sources are the whole GOPATH; nothing is fetched. The
  # cache is go_reader.sh's, so what one built the other need not build again.
  if ! (cd "$root/bench/go" && GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS='' \
        GOCACHE="$bin/bench/go-cache" go build -o "$work/jetfan-publish-go" publisher.go) > "$work/go-build.log" 2>&1; then
    echo "== P-G and Chain-G (nats.go) skipped: bench/go/publisher.go did not build: $(head -c 300 "$work/go-build.log" | tr '\n' ' ')"
    return 0
  fi
  go_publisher=$work/jetfan-publish-go
}
go_publisher_build

# --- the server, the streams and the configs -------------------------------------------------------
bench_server
# P-C's jetfan binds a consumer as every jetfan does: BENCH's, which stays empty.
"$tool" setup "$url" BENCH bench_durable 20000 > /dev/null
# The chains' input: N messages in EVENTS (events.k0..k7), read through the durable "chain".
"$tool" setup "$url" EVENTS chain 20000 > /dev/null
"$tool" publish "$url" events. k0,k1,k2,k3,k4,k5,k6,k7 "$n" "$size" > /dev/null

jetfan_config() {  # STREAM DURABLE HANDLER [MAX_INFLIGHT]
  {
    printf 'nats:\n  servers: ["%s"]\nconsumer:\n  stream: %s\n  durable: %s\n' "$url" "$1" "$2"
    printf 'key:\n  strip_prefix: "%s."\nsocket:\n  path: %s/jetfan.sock\n' "${1,,}" "$work"
    printf 'handlers:\n  - name: %s\n    patterns: ["#"]\n' "$3"
    [ -z "${4:-}" ] || printf '    max_inflight: %s\n' "$4"
    printf '    publish:\n      subjects: ["out.>"]\n'
    printf 'log:\n  level: warn\n'
  } > "$work/jetfan.yaml"
}

status=0
problem() { echo "bench: $*" >&2; status=1; }
# The run's checks: OUT holds exactly N messages; `what` names the run.
check_out() {  # WHAT
  local stored
  stored=$("$pbench" messages "$url" OUT)
  [ "$stored" = "$n" ] || problem "$1: stream OUT holds $stored messages, not $n"
}
check_values() {  # WHAT FILE KEY=VALUE...: each KEY printed to FILE with that value
  local what=$1 file=$2 kv got; shift 2
  for kv in "$@"; do
    got=$(value "${kv%%=*}" "$file")
    [ "$got" = "${kv#*=}" ] || problem "$what: ${kv%%=*} is '${got}', not ${kv#*=} ($(tr '\n' ' ' < "$file"))"
  done
}
fresh_out() { "$pbench" stream "$url" OUT 'out.>'; }

start_jetfan() {  # LABEL: $jetfan with $work/jetfan.yaml; sets jetfan_pid and log
  log=$work/jetfan-$1.log
  rm -f "$work/jetfan.sock"
  "$jetfan" serve --config "$work/jetfan.yaml" > "$log" 2>&1 &
  jetfan_pid=$!
  for _ in $(seq 3000); do [ -S "$work/jetfan.sock" ] && break; kill -0 $jetfan_pid 2> /dev/null || break; sleep 0.005; done
  if ! kill -0 $jetfan_pid 2> /dev/null || [ ! -S "$work/jetfan.sock" ]; then
    sed 's/^/  jetfan: /' "$log" >&2; echo "bench: jetfan ($1) did not start" >&2; exit 1
  fi
}
stop_jetfan() {  # LABEL [PID...]: stops jetfan (and the PIDs), shows what it logged (at level warn)
  stop_all $jetfan_pid "${@:2}"
  # Less its start-up warning that OUT's duplicate window is shorter than the consumer's unbounded
  # redeliveries: true, and meant (the consumer is run.sh's); no run redelivers (duplicates=0 checks).
  { grep -v 'duplicate_window is' "$log" || true; } | sed 's/^/  jetfan: /' | head -5
}

# Each run sets $sec (0 if it failed) and, for jetfan's, $cpu (jetfan's user + system seconds).
run_direct() {  # LABEL OUT PUBLISHER...: a direct publisher of N messages to OUT
  local label=$1 out=$2
  fresh_out; cpu=""
  if timeout "$timeout" "${@:3}" publish "$url" out. "$n" "$size" "$window" > "$out" 2>> "$work/clients.err"; then
    sec=$(elapsed "$(value ready_ns "$out")" "$(value done_ns "$out")")
  else
    sec=0; problem "$label failed ($(tail -2 "$work/clients.err" | tr '\n' ' '))"
  fi
  check_values "$label" "$out" errors=0
  check_out "$label"
}
run_pa() { run_direct P-A "$work/pa.out" "$pbench"; }
run_pg() { run_direct P-G "$work/pg.out" "$go_publisher"; }
run_pc() {
  fresh_out
  jetfan_config BENCH bench_durable pub
  start_jetfan P-C
  if timeout "$timeout" "$pbench" publisher "$work/jetfan.sock" pub out. "$n" "$size" "$window" > "$work/pc.out" 2>> "$work/clients.err"; then
    sec=$(elapsed "$(value ready_ns "$work/pc.out")" "$(value done_ns "$work/pc.out")")
  else
    sec=0; problem "P-C failed ($(tail -2 "$work/clients.err" | tr '\n' ' '))"
  fi
  cpu=$(cpu_seconds $jetfan_pid)
  stop_jetfan P-C
  check_values P-C "$work/pc.out" pubok="$n" puberr=0 duplicates=0
  check_out P-C
}
run_chain_c() {
  fresh_out
  "$tool" rewind "$url" EVENTS chain 20000 > /dev/null
  jetfan_config EVENTS chain chain "$batch"
  start_jetfan Chain-C
  local t0 handler_pid watched=0
  t0=$("$tool" now)
  "$pbench" chain "$work/jetfan.sock" chain out. "$n" > "$work/cc.out" 2>> "$work/clients.err" &
  handler_pid=$!
  "$tool" watch "$url" EVENTS chain "$timeout" > "$work/watch.out" || watched=$?
  cpu=$(cpu_seconds $jetfan_pid)
  stop_jetfan Chain-C $handler_pid
  if [ $watched = 0 ]; then sec=$(elapsed "$t0" "$(value settled_ns "$work/watch.out")"); else sec=0; problem "Chain-C: the EVENTS consumer did not settle"; fi
  check_values Chain-C "$work/cc.out" received="$n" pubok="$n" puberr=0 duplicates=0
  check_out Chain-C
}
run_chain_g() {
  fresh_out; cpu=""
  "$tool" rewind "$url" EVENTS chain 20000 > /dev/null
  local pid watched=0 ended=0
  timeout "$timeout" "$go_publisher" chain "$url" EVENTS chain events. out. "$n" "$window" "$batch" > "$work/cg.out" 2>> "$work/clients.err" &
  pid=$!
  wait_file "$work/cg.out" ready_ns
  "$tool" watch "$url" EVENTS chain "$timeout" > "$work/watch.out" || watched=$?
  wait $pid || ended=$?
  if [ $watched = 0 ]; then sec=$(elapsed "$(value ready_ns "$work/cg.out")" "$(value settled_ns "$work/watch.out")"); else sec=0; problem "Chain-G: the EVENTS consumer did not settle"; fi
  [ $ended = 0 ] || problem "Chain-G failed ($(tail -2 "$work/clients.err" | tr '\n' ' '))"
  check_values Chain-G "$work/cg.out" acked="$n" errors=0
  check_out Chain-G
}

# --- the rounds ------------------------------------------------------------------------------------
publishers=(P-A P-C); chains=(Chain-C)
[ -z "$go_publisher" ] || { publishers=(P-A P-G P-C); chains=(Chain-C Chain-G); }
rate() { awk -v n="$n" -v s="$1" 'BEGIN {printf "%.0f", (s > 0 ? n / s : 0)}'; }
started=$(date -u +%Y-%m-%dT%H:%MZ)
echo "== publishing: $rounds round(s) of $n messages of $size B; ${publishers[*]} (order turning), then ${chains[*]} (order alternating)"
rounds_csv=$work/publish.csv
echo "round,case,messages,seconds,msgs_per_s,jetfan_cpu_s" > "$rounds_csv"
for r in $(seq "$rounds"); do
  order=()
  for i in $(seq 0 $(( ${#publishers[@]} - 1 ))); do order+=("${publishers[$(( (i + r - 1) % ${#publishers[@]} ))]}"); done
  if [ $((r % 2)) = 1 ]; then order+=("${chains[@]}"); else for (( i = ${#chains[@]} - 1; i >= 0; i-- )); do order+=("${chains[$i]}"); done; fi
  line="  round $r:"
  for c in "${order[@]}"; do
    case $c in
      P-A) run_pa ;; P-G) run_pg ;; P-C) run_pc ;; Chain-C) run_chain_c ;; Chain-G) run_chain_g ;;
    esac
    echo "$r,$c,$n,$sec,$(rate "$sec"),$cpu" >> "$rounds_csv"
    line+=" $c $(rate "$sec") msg/s"
  done
  echo "$line"
done
if [ -s "$work/clients.err" ] && [ $status != 0 ]; then sed 's/^/  client: /' "$work/clients.err" | head -10; fi
cp "$rounds_csv" "$out/publish.csv"

# --- the report ------------------------------------------------------------------------------------
machine="$(nproc) cores ($(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/Mem:/ {print $2}') GiB"
command="bench/publish.sh"
[ $smoke = 0 ] || command="$command --smoke"
[ -z "${JETFAN_BUILD_DIR:-}" ] || command="JETFAN_BUILD_DIR=$JETFAN_BUILD_DIR $command"
[ -z "${PUBLISH_N:-}${PUBLISH_ROUNDS:-}" ] || [ $smoke = 1 ] || command="PUBLISH_N=$n PUBLISH_ROUNDS=$rounds $command"
"$python" - "$rounds_csv" "$out/publish.md" "$started" "$machine" "$(nats-server --version 2>&1 | head -1)" \
  "$n" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)" "$command" "$status" "$window" "$batch" << 'EOF'
import csv, statistics, sys
rcsv, md, started, machine, server, n, rounds, load, command, status, window, batch = sys.argv[1:]
n = int(n)
runs = list(csv.DictReader(open(rcsv)))
med = statistics.median
sec = {}  # case -> {round: seconds}
for r in runs:
    sec.setdefault(r["case"], {})[r["round"]] = float(r["seconds"])
def rate(case):
    s = [v for v in sec.get(case, {}).values() if v > 0]
    return f"{n / med(s):.0f}" if s else "—"
def ratio(case, base):  # median of the per-round ratios of case's rate to base's
    if case not in sec or base not in sec: return None
    rs = [sec[base][k] / v for k, v in sec[case].items() if v > 0 and sec[base].get(k, 0) > 0]
    return med(rs) if rs else None
def cpu(case):
    c = [float(r["jetfan_cpu_s"]) for r in runs if r["case"] == case and r["jetfan_cpu_s"]]
    return f"{med(c) / n * 1e6:.2f}" if c else ""
def show(x, target=None):
    if x is None: return "—"
    return f"{x:.2f}" + ("" if target is None else (" (target ≥ %.1f: %s)" % (target, "met" if x >= target else "**not met**")))
rows = [("P-A", "direct cnats publisher: js_PublishAsync, MaxPending %s, then PublishAsyncComplete" % window, ""),
        ("P-G", "nats.go publisher: js.PublishAsync, PublishAsyncMaxPending(%s), PublishAsyncComplete" % window, ""),
        ("P-C", "through jetfan: a handler with no NATS connection, PUBs over the socket, %s unanswered at most" % window,
         "P-C/P-A " + show(ratio("P-C", "P-A"), 0.8) + "; P-C/P-G " + show(ratio("P-C", "P-G"))),
        ("Chain-G", "nats.go chain: Fetch(%s), PublishMsgAsync with Nats-Msg-Id (%s pending at most), ack after the publish ack" % (batch, window), ""),
        ("Chain-C", "through jetfan: a handler PUBs a follow-up tied to each delivery and ACKs at once",
         "Chain-C/Chain-G " + show(ratio("Chain-C", "Chain-G"), 0.9))]
L = ["## Publishing through jetfan (bench/publish.sh)", "",
     f"Run {started} on {machine}; {server} with file storage on the same machine. Command: `{command}`. "
     f"{n} messages of 128 B a run, {rounds} interleaved round(s).", "",
     "| row | what | msgs/s (median) | ratio (median of per-round ratios) | jetfan CPU µs/msg |",
     "|---|---|---:|---|---:|"]
for case, what, r in rows:
    if case in sec: L.append(f"| {case} | {what} | {rate(case)} | {r} | {cpu(case)} |")
    else: L.append(f"| {case} | {what} | skipped | | |")
L += ["",
      "- P-A, P-G: from connected to the last publish ack; P-C: from the handler's READY to its last PUBOK, jetfan "
      "already connected. Every publisher writes N messages to stream OUT (out.k0..k7, made afresh before each run).",
      "- Chain-C, Chain-G: N messages waiting in EVENTS, each answered by a follow-up of its payload to out.<key>; "
      "from jetfan's socket appearing (Chain-C; jetfan bound, the handler not yet started) or Go's binding (Chain-G) "
      "until the server shows the EVENTS consumer with nothing pending or unacked. jetfan holds each ACK until its "
      "tied follow-up is stored, so settled means every follow-up stored.",
      f"- Each round runs the publishers back to back (their order turning), then the chains (order alternating); "
      f"a ratio is the median over the rounds of the two rates measured in the same round. jetfan CPU: its user + "
      "system seconds over the messages, median.",
      "- Checked in every run: OUT holds exactly N messages, every PUB answered PUBOK (none a duplicate), every "
      "publish acknowledged without error" + (", all passed." if status == "0" else ": **a check failed** (see the run's output)."),
      "", f"Load average at the end: {load}. Per-run figures: bench/results/publish.csv."]
open(md, "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
if [ $smoke = 1 ]; then
  [ $status = 0 ] || { echo "bench: publish smoke run FAILED" >&2; exit 1; }
  echo "bench: publish smoke run OK"
  exit 0
fi
[ $status = 0 ] || { echo "bench: a run lost messages or failed (publish.csv)" >&2; exit 1; }
echo "== results in $out/publish.md"
