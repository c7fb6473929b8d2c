#!/usr/bin/env bash
# Builds @jetfan/client and runs its tests against the real jetfan and a real nats-server.
#   proto/node/test.sh [JETFAN_BIN]      (default: $JETFAN_BIN, else build/daemon/jetfan)
# Needs node and npm (any version: see below) and nats-server; installs the npm devDependencies
# from the lockfile (from npm's cache when it has them).
set -euo pipefail
cd "$(dirname "$0")"
export JETFAN_BIN=${1:-${JETFAN_BIN:-$(pwd)/../../build/daemon/jetfan}}
[ -x "$JETFAN_BIN" ] || { echo "proto/node/test.sh: no jetfan binary at $JETFAN_BIN; build first (scripts/build.sh)" >&2; exit 1; }
# Node 20 or later (node20.sh: the machine's, else the official binary from npm, cached).
node=$(./node20.sh)
[ "$node" = "$(command -v node)" ] || PATH="$(dirname "$node"):$PATH"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
npm ci --prefer-offline --silent
npx tsc -p tsconfig.json
npx tsc -p bench  # the benchmark handler (bench/run.sh runs it) type-checks against the package
# One test file at a time: each starts its own nats-server and jetfan, and the machine is small.
exec node --test --test-concurrency=1 test/*.test.mjs
