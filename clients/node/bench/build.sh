#!/usr/bin/env bash
# Makes the benchmark handler runnable, doing only what is out of date: node 20 or later
# (../node20.sh), the devDependencies from the lockfile (npm ci, as test.sh does), the package
# (tsc, into dist/) and the handler (tsc -p bench, into bench/dist/). Prints the path of the node
# binary to run bench/dist/handler.js with. bench/run.sh calls it; test.sh builds the same things.
#   clients/node/bench/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
node=$(./node20.sh)
[ "$node" = "$(command -v node)" ] || PATH="$(dirname "$node"):$PATH"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
stale() {  # stale TARGET SOURCE...: TARGET is missing or older than one of the SOURCEs
  [ -e "$1" ] || return 0
  local target=$1; shift
  [ -n "$(find "$@" -newer "$target" -print -quit)" ]
}
# npm ci writes node_modules/.package-lock.json, newer than the lockfile it installed.
if stale node_modules/.package-lock.json package-lock.json; then npm ci --prefer-offline --silent >&2; fi
if stale dist/index.js src tsconfig.json node_modules/.package-lock.json; then npx tsc -p tsconfig.json >&2; fi
if stale bench/dist/handler.js bench/handler.ts bench/tsconfig.json dist/index.d.ts; then npx tsc -p bench >&2; fi
echo "$node"
