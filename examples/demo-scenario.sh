#!/usr/bin/env bash
# The demo scenario, run against a build directory (scripts/demo.sh builds and calls this; a test
# runs it too). It publishes events, shows each handler receiving exactly its own, and checks that
# the consumer ends with nothing pending. Of its two handlers, builder is the TypeScript example
# (examples/handler.ts, on Node) and audit the C++ one (examples/handler.cpp). builder publishes a
# follow-up event through jetfan for each message it gets, tied to it (events.built.<key>: in
# EVENTS, outside builder's patterns, so that only audit gets it); the demo checks that each is
# stored and delivered exactly once.
#   examples/demo-scenario.sh BUILD_DIR [--no-wait]
# The TypeScript handler needs node and npm (scripts/deps.sh installs them); clients/node/env.sh
# brings Node 20 if the machine's is older, and installs the client's devDependencies (tsc).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1
wait_at_end=1
[ "${2:-}" = "--no-wait" ] && wait_at_end=0

dir=$(mktemp -d /tmp/jetfan-demo.XXXXXX)
pids=()
names=()  # of what pids holds
cleanup() {
  trap - EXIT INT TERM
  # The last started is stopped first, each gone before the next: the handlers, then jetfan, which
  # drains and hands back what it holds (it needs the server for that), and nats-server last.
  local i stopped=()
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
    stopped+=("${names[i]}")
  done
  wait 2>/dev/null || true  # the output filters
  rm -rf "$dir"
  local list
  list=$(printf '%s, ' "${stopped[@]}")
  echo "demo: stopped ${list%, } (in that order) and removed $dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A step that fails says which, before the cleanup says what it stopped.
trap 'echo "demo: FAILED at line $LINENO of $0: $BASH_COMMAND (exit $?)" >&2' ERR

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
wait_for() {  # wait_for WHAT SECONDS COMMAND...: polls COMMAND until it succeeds
  local what=$1 seconds=$2; shift 2
  for _ in $(seq $((seconds * 20))); do "$@" && return 0; sleep 0.05; done
  echo "demo: timed out waiting for $what" >&2; exit 1
}

say "the TypeScript example handler (examples/handler.ts), compiled with tsc against @jetfan/client"
source "$here/../clients/node/env.sh"
jetfan_node_env
jetfan_node_build
ts=$dir/ts-handler  # a module's project, with the client in its node_modules
mkdir -p "$ts/node_modules/@jetfan"
ln -s "$jetfan_node_dir" "$ts/node_modules/@jetfan/client"
cp "$here/handler.ts" "$ts/handler.ts"
echo '{"private": true, "type": "module"}' > "$ts/package.json"
cat > "$ts/tsconfig.json" <<JSON
{"compilerOptions": {"target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true,
                     "typeRoots": ["$jetfan_node_dir/node_modules/@types"], "types": ["node"]},
 "files": ["handler.ts"]}
JSON
node "$jetfan_node_dir/node_modules/typescript/bin/tsc" -p "$ts"
echo "node $(node --version): $ts/handler.js"

say "nats-server with JetStream in $dir (random port)"
"${JETFAN_NATS_SERVER:-nats-server}" -js -sd "$dir/jetstream" -a 127.0.0.1 -p -1 > "$dir/nats.log" 2>&1 &
pids+=($!) names+=(nats-server)
wait_for "nats-server" 10 grep -qs "Listening for client connections" "$dir/nats.log"
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
    publish: {subjects: ["events.built.>"]}  # its follow-ups: keys built.*, which only audit's # matches
  - name: audit
    patterns: ["#"]
YAML
say "jetfan serve (config: $dir/jetfan.yaml)"
"$bin/daemon/jetfan" serve --config "$dir/jetfan.yaml" 2> >(sed -u 's/^/  jetfan  | /') &
pids+=($!) names+=(jetfan)
wait_for "jetfan's socket" 10 test -S "$dir/builder.sock"

say "two handler processes: builder (two patterns, publishes follow-ups; TypeScript, on Node) and audit (#; C++)"
for handler in builder audit; do
  if [ $handler = builder ]; then
    command=(env JETFAN_SOCKET="$dir/builder.sock" JETFAN_HANDLER=builder FOLLOW_UPS=events.built node "$ts/handler.js")
  else
    command=("$bin/examples/jetfan-example-handler" "$dir/builder.sock" $handler)
  fi
  "${command[@]}" > >(tee "$dir/$handler.out" | sed -u "s/^/  $(printf '%-7s' $handler) | /") &
  pids+=($!) names+=("$handler")
  # -s: tee makes the file a moment after the handler starts
  wait_for "$handler to connect" 10 grep -qs "connected" "$dir/$handler.out"
done

say "publishing four events"
for event in mesh-build-machine.built:'{"machine":3}' mesh-controller.built-before:'{"controller":1}' \
             mesh-catalog.upgraded:'{"catalog":"v2"}' mesh-build-machine.built:'{"machine":4}'; do
  "$bin/examples/jetfan-demo-controller" "$url" publish "events.${event%%:*}" "${event#*:}"
done

say "the consumer at the server"
"$bin/examples/jetfan-demo-controller" "$url" wait-settled EVENTS node1_builder 10
got() { grep -c " got " "$dir/$1.out" || true; }
# The consumer settles only after builder's follow-ups: jetfan holds the ACK of each of its messages
# until the follow-up tied to it is stored, and a stored one is pending until audit confirms it.
wait_for "the handlers' output" 10 test "$(got audit)" -ge 7
if [ "$(got builder)" != 3 ] || [ "$(got audit)" != 7 ] || grep -q "got mesh-catalog\|got built\." "$dir/builder.out"; then
  echo "demo: FAILED: builder got $(got builder) (expected 3, none of its own follow-ups), audit got $(got audit) (expected 4 and 3 follow-ups)" >&2
  exit 1
fi
# Each of builder's three messages made one follow-up, with its payload, stored once and delivered
# to audit once.
for input in mesh-build-machine.built:'{"machine":3}' mesh-controller.built-before:'{"controller":1}' \
             mesh-build-machine.built:'{"machine":4}'; do
  if [ "$(grep -F -- "got built.${input%%:*} (seq " "$dir/audit.out" | grep -c -F -- "): ${input#*:}" || true)" != 1 ]; then
    echo "demo: FAILED: audit did not get exactly one follow-up of ${input%%:*} ${input#*:}:" >&2
    grep -F "got built." "$dir/audit.out" >&2 || true
    exit 1
  fi
done
stored=$("$bin/examples/jetfan-demo-controller" "$url" messages EVENTS)
if [ "$stored" != 7 ]; then
  echo "demo: FAILED: stream EVENTS holds $stored messages, not the 4 events and 3 follow-ups" >&2
  exit 1
fi
# Which processes jetfan served, by the pids it read from the kernel (jetfan status --json).
instance() {  # instance HANDLER: the command line of its one connected instance
  local pid
  pid=$("$bin/daemon/jetfan" status --json --config "$dir/jetfan.yaml" | node -e '
    let text = ""; process.stdin.on("data", (d) => (text += d)).on("end", () => {
      const instances = JSON.parse(text).handlers.find((h) => h.name === process.argv[1]).instances;
      console.log(instances.length === 1 ? instances[0].pid : "");
    });' "$1")
  [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline"
}
builder_command=$(instance builder) audit_command=$(instance audit)
case $builder_command in
  *node*" $ts/handler.js ") ;;
  *) echo "demo: FAILED: builder is \"$builder_command\", not node running the TypeScript example" >&2; exit 1 ;;
esac
case $audit_command in
  "$bin/examples/jetfan-example-handler "*) ;;
  *) echo "demo: FAILED: audit is \"$audit_command\", not the C++ example" >&2; exit 1 ;;
esac
echo "builder: ${builder_command% }"
echo "audit:   ${audit_command% }"
cat <<TEXT

demo: OK. builder (TypeScript) received the three events its patterns match, and published a
follow-up of each through jetfan (events.built.<key>), tied to it; audit (#, C++) received all four
and the three follow-ups, each once; mesh-catalog.upgraded went to audit only. Each message was
acked to JetStream only after every handler it was for had confirmed it (builder's, after its
follow-up was stored), and nothing is left pending.
TEXT
if [ "$wait_at_end" = 1 ]; then
  say "running; press Ctrl-C to stop and clean up"
  wait "${pids[1]}"
fi
