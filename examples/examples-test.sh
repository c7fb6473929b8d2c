#!/usr/bin/env bash
# Runs one of the README's "Write a handler" examples against the real jetfan and nats-server, so
# none of them can rot: it must connect, print the events its handler is given, confirm them, and
# leave the consumer with nothing pending.
#   examples/examples-test.sh BUILD_DIR cpp|python|shell
# python installs the client into a fresh venv first (pip, no network), and runs the example there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
source "$here/../tests/support/mesh.sh"
mesh_start "$build"
mesh_jetfan '  - name: builder
    patterns: ["#"]'

case $2 in
  cpp)
    mesh_spawn handler "$build/examples/jetfan-example-handler" "$mesh_socket" builder ;;
  python)
    # As clients/python/README.md installs it offline: Debian's python3, whose venv sees the flit
    # package's build backend, and pip without build isolation or an index.
    /usr/bin/python3 -m venv --system-site-packages "$mesh_dir/venv" > "$mesh_dir/venv.log" 2>&1 ||
      mesh_fail "python3 -m venv failed (python3-venv)"
    "$mesh_dir/venv/bin/pip" install --no-index --no-build-isolation --disable-pip-version-check "$here/../clients/python" \
      > "$mesh_dir/pip.log" 2>&1 || mesh_fail "pip install ./clients/python failed offline: $(tail -n 5 "$mesh_dir/pip.log")"
    cd "$mesh_dir"  # away from the sources: the installed package is what runs
    mesh_spawn handler "$mesh_dir/venv/bin/python" "$here/handler.py" "$mesh_socket" builder ;;
  shell)
    mesh_spawn handler "$build/exec/jetfan-exec" --handler builder --socket "$mesh_socket" -- "$here/handler.sh" ;;
  *) echo "usage: $0 BUILD_DIR cpp|python|shell" >&2; exit 64 ;;
esac
mesh_wait_for "$mesh_dir/handler.out" "connected"
mesh_publish mesh-build-machine.built '{"machine":3}'
mesh_publish mesh-controller.built-before '{"controller":1}'
mesh_wait_for "$mesh_dir/handler.out" 'got mesh-build-machine.built (seq 1'
mesh_wait_for "$mesh_dir/handler.out" 'got mesh-controller.built-before (seq 2'
if [ "$2" = shell ]; then  # exit 100: TERM with the last line of stderr as the reason
  mesh_publish mesh-catalog.upgraded '"bad"'
  mesh_wait_for "$mesh_dir/jetfan.log" 'as poison: cannot handle "bad"'
fi
mesh_wait_settled
grep -q '{"machine":3}' "$mesh_dir/handler.out" || mesh_fail "the payload was not printed"
echo "ok: the $2 example handled every event and the consumer settled"
