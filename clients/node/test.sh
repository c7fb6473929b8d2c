#!/usr/bin/env bash
# Builds @jetfan/client and runs its tests against the real jetfan and a real nats-server.
#   clients/node/test.sh [JETFAN_BIN]      (default: $JETFAN_BIN, else build/daemon/jetfan)
# Needs node and npm (any version: env.sh brings Node 20 if it is older) and nats-server; installs
# the npm devDependencies from the lockfile (from npm's cache when it has them).
set -euo pipefail
cd "$(dirname "$0")"
export JETFAN_BIN=${1:-${JETFAN_BIN:-$(pwd)/../../build/daemon/jetfan}}
[ -x "$JETFAN_BIN" ] || { echo "clients/node/test.sh: no jetfan binary at $JETFAN_BIN; build first (scripts/build.sh)" >&2; exit 1; }
source ./env.sh  # Node 20 or later, and the client's build
jetfan_node_env
jetfan_node_build
npx tsc -p bench  # the benchmark handler (bench/run.sh runs it) type-checks against the package
# One test file at a time: each starts its own nats-server and jetfan, and the machine is small.
exec node --test --test-concurrency=1 test/*.test.mjs
