#!/usr/bin/env bash
# Installs the C++ client from BUILD_DIR into a temp prefix, builds a module's own CMake project
# against it (find_package(jetfan_client), jetfan::client), and runs the result against the real
# jetfan and nats-server. CXX_FLAGS and CXX are the flags (e.g. sanitizers) and compiler the client was
# built with.
#   clients/cpp/install_test/run.sh BUILD_DIR [CXX_FLAGS [CXX]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
source "$here/../../../tests/support/mesh.sh"
mesh_start "$build"

prefix=$mesh_dir/prefix
cmake --install "$build" --prefix "$prefix" --component dev > "$mesh_dir/install.log" ||
  mesh_fail "cmake --install failed"
[ -f "$prefix/include/jetfan/handler_client.hpp" ] || mesh_fail "not installed: include/jetfan/handler_client.hpp"
# The package goes to lib/ or, on Debian, to the multiarch lib/<triplet>/ (CMake searches both).
ls "$prefix"/lib/*/cmake/jetfan_client/jetfan_client-config.cmake "$prefix"/lib/cmake/jetfan_client/jetfan_client-config.cmake \
  > /dev/null 2>&1 || [ -n "$(find "$prefix" -name jetfan_client-config.cmake)" ] || mesh_fail "not installed: jetfan_client-config.cmake"
# Only the prefix: nothing from the source tree or the build tree may be needed.
cmake -S "$here" -B "$mesh_dir/module" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="${2:-}" \
  ${3:+-DCMAKE_CXX_COMPILER="$3"} \
  > "$mesh_dir/configure.log" 2>&1 || mesh_fail "configuring the module's project failed"
cmake --build "$mesh_dir/module" > "$mesh_dir/compile.log" 2>&1 || mesh_fail "building the module's project failed"

mesh_jetfan '  - name: builder
    patterns: ["#"]'
mesh_spawn handler "$mesh_dir/module/handler" "$mesh_socket" builder
mesh_wait_for "$mesh_dir/handler.out" "[builder] connected"
mesh_publish mesh-build-machine.built '{"machine":3}'
mesh_wait_for "$mesh_dir/handler.out" '[builder] got mesh-build-machine.built (seq 1): {"machine":3}'
mesh_wait_settled
echo "ok: installed into $prefix, built a module's project with find_package(jetfan_client), ran it against jetfan"
