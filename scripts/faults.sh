#!/usr/bin/env bash
# jetfan's fault-injection suite: installs what it needs, builds, runs.
#   scripts/faults.sh --short              every fault class briefly, the regression cases, a 1-minute soak
#   scripts/faults.sh --full               every class, 10 runs of 60 s each, and a 10-minute soak
#   scripts/faults.sh --soak 10m           the soak alone (--rate N, default 20000 msg/s)
#   scripts/faults.sh --class NAME [--seed N] [--duration 60]   one class; a failure prints this line
#   scripts/faults.sh --regress NAME|all   the regression cases of the bugs the suite found
#   scripts/faults.sh --list
# A failing run keeps its directory (seed, logs, histories) and prints how to re-run it.
# JETFAN_BUILD_DIR picks the build directory (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if ! command -v python3 > /dev/null; then
  echo "installing: python3"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3
fi
build=${JETFAN_BUILD_DIR:-build}
JETFAN_BUILD_DIR=$build scripts/build.sh > /dev/null
exec python3 tests/faults/faults.py --build "$build" "$@"
