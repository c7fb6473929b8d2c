# Test support for shell tests, sourced: a whole mesh made of real parts, as mesh.hpp makes it for
# C++ tests. A temp dir; a real nats-server with JetStream on a free port; stream EVENTS on
# events.> and durable pull consumer node1_builder, made as a controller would; the real jetfan.
# Everything started here is killed, and the dir removed, when the shell exits.
#
#   mesh_start BUILD_DIR                 sets mesh_dir, mesh_url, mesh_socket
#   mesh_jetfan HANDLERS_YAML [EXTRA]    starts jetfan serve (log: $mesh_dir/jetfan.log), waits for it
#   mesh_spawn NAME CMD...               starts CMD in the background, output to $mesh_dir/NAME.out
#   mesh_publish KEY PAYLOAD             publishes events.KEY
#   mesh_wait_for FILE TEXT [COUNT]      waits (20 s at most) until FILE has COUNT lines with TEXT
#   mesh_wait_settled                    waits until the consumer has nothing pending or unacked
#   mesh_fail WHY                        prints WHY and the logs, exits 1

mesh_pids=()
mesh_cleanup() {
  for pid in "${mesh_pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  if [ -n "${mesh_dir:-}" ] && [ -z "${JETFAN_KEEP_TEST_DIRS:-}" ]; then rm -rf "$mesh_dir"; fi
}
trap mesh_cleanup EXIT

mesh_fail() {
  echo "FAILED: $*" >&2
  for log in "$mesh_dir"/*.log "$mesh_dir"/*.out; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -n 40 "$log" >&2; }
  done
  exit 1
}

mesh_wait_for() {  # FILE TEXT [COUNT]
  local file=$1 text=$2 count=${3:-1}
  for _ in $(seq 400); do
    [ "$(grep -cF -- "$text" "$file" 2> /dev/null || true)" -ge "$count" ] && return 0
    sleep 0.05
  done
  mesh_fail "waited 20 s for $count line(s) with \"$text\" in $file"
}

mesh_start() {  # BUILD_DIR
  mesh_bin=$1
  mesh_dir=$(mktemp -d /tmp/jetfan-test.XXXXXX)
  mesh_socket=$mesh_dir/jetfan.sock
  "${JETFAN_NATS_SERVER:-nats-server}" -js -sd "$mesh_dir/jetstream" -a 127.0.0.1 -p -1 > "$mesh_dir/nats.log" 2>&1 &
  mesh_pids+=($!)
  mesh_wait_for "$mesh_dir/nats.log" "Listening for client connections"
  mesh_url="nats://127.0.0.1:$(sed -n 's/.*Listening for client connections on 127.0.0.1:\([0-9]*\).*/\1/p' "$mesh_dir/nats.log")"
  "$mesh_bin/examples/jetfan-demo-controller" "$mesh_url" setup EVENTS 'events.>' node1_builder > /dev/null ||
    mesh_fail "could not create the stream and consumer"
}

mesh_jetfan() {  # HANDLERS_YAML [EXTRA_YAML]
  cat > "$mesh_dir/jetfan.yaml" << YAML
nats:
  servers: ["$mesh_url"]
consumer:
  stream: EVENTS
  durable: node1_builder
key:
  strip_prefix: "events."
socket:
  path: $mesh_socket
handlers:
$1
${2:-}
YAML
  "$mesh_bin/daemon/jetfan" serve --config "$mesh_dir/jetfan.yaml" > "$mesh_dir/jetfan.log" 2>&1 &
  mesh_pids+=($!)
  mesh_wait_for "$mesh_dir/jetfan.log" "serving consumer"
}

mesh_spawn() {  # NAME CMD...
  local name=$1
  shift
  "$@" > "$mesh_dir/$name.out" 2>&1 &
  mesh_pids+=($!)
}

mesh_publish() {  # KEY PAYLOAD
  "$mesh_bin/examples/jetfan-demo-controller" "$mesh_url" publish "events.$1" "$2" > /dev/null ||
    mesh_fail "could not publish $1"
}

mesh_wait_settled() {
  "$mesh_bin/examples/jetfan-demo-controller" "$mesh_url" wait-settled EVENTS node1_builder 20 > "$mesh_dir/settled.out" ||
    mesh_fail "the consumer did not settle: $(cat "$mesh_dir/settled.out")"
}
