#!/usr/bin/env bash
# Builds @jetfan/client and runs its tests against the real jetfan and a real nats-server.
#   proto/node/test.sh [JETFAN_BIN]      (default: $JETFAN_BIN, else build/daemon/jetfan)
# Needs Node 20 or later with npm, and nats-server; installs the npm devDependencies from the
# lockfile (from npm's cache when it has them).
set -euo pipefail
cd "$(dirname "$0")"
export JETFAN_BIN=${1:-${JETFAN_BIN:-$(pwd)/../../build/daemon/jetfan}}
[ -x "$JETFAN_BIN" ] || { echo "proto/node/test.sh: no jetfan binary at $JETFAN_BIN; build first (scripts/build.sh)" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "proto/node/test.sh: node $(node --version) is too old: @jetfan/client needs Node 20 or later" >&2
  exit 1
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
npm ci --prefer-offline --silent
npx tsc -p tsconfig.json
# One test file at a time: each starts its own nats-server and jetfan, and the machine is small.
exec node --test --test-concurrency=1 test/*.test.mjs
