#!/usr/bin/env bash
# Builds @jetfan/client and runs its tests against the real jetfan and a real nats-server.
#   proto/node/test.sh [JETFAN_BIN]      (default: $JETFAN_BIN, else build/daemon/jetfan)
# Needs node and npm (any version: see below) and nats-server; installs the npm devDependencies
# from the lockfile (from npm's cache when it has them).
set -euo pipefail
cd "$(dirname "$0")"
export JETFAN_BIN=${1:-${JETFAN_BIN:-$(pwd)/../../build/daemon/jetfan}}
[ -x "$JETFAN_BIN" ] || { echo "proto/node/test.sh: no jetfan binary at $JETFAN_BIN; build first (scripts/build.sh)" >&2; exit 1; }
# Node 20 or later: the machine's if it is one, else the official binary from the npm registry
# (package node-linux-<arch>, kept in a cache dir). Debian 12's own nodejs is 18, which can still
# run npm.
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  arch=$(node -p 'process.arch')
  tools=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/jetfan/node-20
  if [ ! -x "$tools/node_modules/node-linux-$arch/bin/node" ]; then
    echo "proto/node/test.sh: node $(node --version) is older than 20; installing node-linux-$arch@20.20.2 from npm into $tools"
    npm install --prefix "$tools" --no-save --no-audit --no-fund --silent "node-linux-$arch@20.20.2"
  fi
  export PATH="$tools/node_modules/node-linux-$arch/bin:$PATH"
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
npm ci --prefer-offline --silent
npx tsc -p tsconfig.json
# One test file at a time: each starts its own nats-server and jetfan, and the machine is small.
exec node --test --test-concurrency=1 test/*.test.mjs
