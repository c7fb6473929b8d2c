#!/usr/bin/env bash
# Prints the path of a node binary of version 20 or later: the machine's if it is one, else the
# official binary from the npm registry (package node-linux-<arch>, kept in a cache dir), fetched
# once. Debian 12's own nodejs is 18, which can still run npm. Messages go to stderr.
#   proto/node/node20.sh
set -euo pipefail
node=$(command -v node)
major=$("$node" -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  arch=$("$node" -p 'process.arch')
  tools=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/jetfan/node-20
  node=$tools/node_modules/node-linux-$arch/bin/node
  if [ ! -x "$node" ]; then
    echo "proto/node: node $(command node --version) is older than 20; installing node-linux-$arch@20.20.2 from npm into $tools" >&2
    npm install --prefix "$tools" --no-save --no-audit --no-fund --silent "node-linux-$arch@20.20.2" >&2
  fi
fi
echo "$node"
