#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and runs examples/demo-scenario.sh,
# which is the demo itself: a local nats-server with JetStream, a stand-in controller that creates
# the stream and the module's durable consumer, jetfan, and two example handlers.
# Ctrl-C stops everything and removes the temp dir. --no-wait: stop once the demo has shown it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec examples/demo-scenario.sh "$(pwd)/${JETFAN_BUILD_DIR:-build}" "$@"
