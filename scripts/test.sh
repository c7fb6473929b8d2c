#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
build=${JETFAN_BUILD_DIR:-build}
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure
