# Sourced, not run: clients/node/test.sh and examples/demo-scenario.sh share it.
#   source clients/node/env.sh; jetfan_node_env; jetfan_node_build
# jetfan_node_env puts a Node 20 or later first in PATH: the machine's if it is one, else the
# official binary from the npm registry (package node-linux-<arch>, kept in a cache dir). Debian
# 12's own nodejs is 18, which can still run npm; scripts/deps.sh installs it when npm is missing.
# jetfan_node_build installs the npm devDependencies of @jetfan/client from the lockfile (from
# npm's cache when it has them) and compiles it to clients/node/dist with tsc.
jetfan_node_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

jetfan_node_env() {
  command -v node > /dev/null && command -v npm > /dev/null ||
    { echo "clients/node/env.sh: node and npm are needed (scripts/deps.sh installs them)" >&2; return 1; }
  local major arch tools
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    arch=$(node -p 'process.arch')
    tools=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/jetfan/node-20
    if [ ! -x "$tools/node_modules/node-linux-$arch/bin/node" ]; then
      echo "clients/node/env.sh: node $(node --version) is older than 20; installing node-linux-$arch@20.20.2 from npm into $tools" >&2
      npm install --prefix "$tools" --no-save --no-audit --no-fund --silent "node-linux-$arch@20.20.2" >&2
    fi
    export PATH="$tools/node_modules/node-linux-$arch/bin:$PATH"
  fi
  export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
}

jetfan_node_build() {
  (cd "$jetfan_node_dir" && npm ci --prefer-offline --silent && npx tsc -p tsconfig.json)
}
