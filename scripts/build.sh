#!/usr/bin/env bash
# Configures and builds into build/ (or $JETFAN_BUILD_DIR). Extra arguments go to cmake.
# $JETFAN_BUILD_TARGETS (names, blank-separated): build only those (the demo), else everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${JETFAN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" > /dev/null
targets=()
for target in ${JETFAN_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
