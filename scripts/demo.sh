#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and runs examples/demo-scenario.sh,
# which is the demo itself: a local nats-server with JetStream, a stand-in controller that creates
# the stream and the module's durable consumer, jetfan, and two example handlers.
# Ctrl-C stops everything and removes the temp dir. --no-wait: stop once the demo has shown it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs is installed and built: jetfan, the stand-in controller and the C++
# example handler (the TypeScript one is compiled by the scenario). The flags are the test command's,
# so that a later scripts/test.sh builds on what this built.
scripts/deps.sh --demo
JETFAN_BUILD_TARGETS="jetfan jetfan-demo-controller jetfan-example-handler" \
  scripts/build.sh -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
exec examples/demo-scenario.sh "$(pwd)/${JETFAN_BUILD_DIR:-build}" "$@"
