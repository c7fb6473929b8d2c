#!/usr/bin/env bash
# The demo scenario, run against a build directory (scripts/demo.sh builds and calls this; a test
# runs it too). It publishes events, shows each handler receiving exactly its own, and checks that
# the consumer ends with nothing pending.
#   examples/demo-scenario.sh BUILD_DIR [--no-wait]
set -euo pipefail
bin=$1
wait_at_end=1
[ "${2:-}" = "--no-wait" ] && wait_at_end=0

dir=$(mktemp -d /tmp/jetfan-demo.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
  echo "demo: stopped everything and removed $dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
wait_for() {  # wait_for WHAT SECONDS COMMAND...: polls COMMAND until it succeeds
  local what=$1 seconds=$2; shift 2
  for _ in $(seq $((seconds * 20))); do "$@" && return 0; sleep 0.05; done
  echo "demo: timed out waiting for $what" >&2; exit 1
}

say "nats-server with JetStream in $dir (random port)"
nats-server -js -sd "$dir/jetstream" -a 127.0.0.1 -p -1 > "$dir/nats.log" 2>&1 &
pids+=($!)
wait_for "nats-server" 10 grep -q "Listening for client connections" "$dir/nats.log"
port=$(sed -n 's/.*Listening for client connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/nats.log")
url="nats://127.0.0.1:$port"
echo "listening on $url"

say "the controller creates the stream and the module's durable consumer (jetfan never does)"
"$bin/examples/jetfan-demo-controller" "$url" setup EVENTS 'events.>' node1_builder

cat > "$dir/jetfan.yaml" <<YAML
nats:
  servers: ["$url"]
consumer:
  stream: EVENTS
  durable: node1_builder
key:
  strip_prefix: "events."
socket:
  path: $dir/builder.sock
  mode: "0660"
handlers:
  - name: builder
    patterns: ["mesh-build-machine.built", "mesh-controller.built-before"]
    max_inflight: 64
    ack_timeout: 30s
  - name: audit
    patterns: ["#"]
YAML
say "jetfan serve (config: $dir/jetfan.yaml)"
"$bin/daemon/jetfan" serve --config "$dir/jetfan.yaml" 2> >(sed -u 's/^/  jetfan  | /') &
pids+=($!)
wait_for "jetfan's socket" 10 test -S "$dir/builder.sock"

say "two handler processes: builder (two patterns) and audit (#)"
for handler in builder audit; do
  "$bin/examples/jetfan-example-handler" "$dir/builder.sock" $handler \
    > >(tee "$dir/$handler.out" | sed -u "s/^/  $(printf '%-7s' $handler) | /") &
  pids+=($!)
  wait_for "$handler to connect" 10 grep -q "connected" "$dir/$handler.out"
done

say "publishing four events"
for event in mesh-build-machine.built:'{"machine":3}' mesh-controller.built-before:'{"controller":1}' \
             mesh-catalog.upgraded:'{"catalog":"v2"}' mesh-build-machine.built:'{"machine":4}'; do
  "$bin/examples/jetfan-demo-controller" "$url" publish "events.${event%%:*}" "${event#*:}"
done

say "the consumer at the server"
"$bin/examples/jetfan-demo-controller" "$url" wait-settled EVENTS node1_builder 10
got() { grep -c " got " "$dir/$1.out" || true; }
wait_for "the handlers' output" 10 test "$(got audit)" -ge 4
if [ "$(got builder)" != 3 ] || [ "$(got audit)" != 4 ] || grep -q "got mesh-catalog" "$dir/builder.out"; then
  echo "demo: FAILED: builder got $(got builder) (expected 3), audit got $(got audit) (expected 4)" >&2
  exit 1
fi
cat <<TEXT

demo: OK. builder received the three events its patterns match; audit (#) received all four;
mesh-catalog.upgraded went to audit only. Each message was acked to JetStream only after every
handler it was for had confirmed it, and nothing is left pending.
TEXT
if [ "$wait_at_end" = 1 ]; then
  say "running; press Ctrl-C to stop and clean up"
  wait "${pids[1]}"
fi
