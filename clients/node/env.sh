# Sourced, not run: clients/node/test.sh and examples/demo-scenario.sh share it.
#   source clients/node/env.sh; jetfan_node_env; jetfan_node_build
# jetfan_node_env puts a Node 20 or later, and its npm, first in PATH: the machine's if it has one,
# else the official binary and npm's own package from the npm registry, fetched by fetch_node.py
# (python3 alone; checked against the registry's sha512) into a cache dir. Debian 12's own nodejs
# is 18, and its npm package pulls in some 300 others: the demo installs neither (scripts/deps.sh
# --demo), the test command installs both (find_program(node) in clients/CMakeLists.txt).
# jetfan_node_build installs the npm devDependencies of @jetfan/client from the lockfile (from
# npm's cache when it has them) and compiles it to clients/node/dist with tsc.
jetfan_node_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

jetfan_node_env() {
  local major=0 tools
  if command -v node > /dev/null && command -v npm > /dev/null; then
    major=$(node -p 'process.versions.node.split(".")[0]')
  fi
  if [ "$major" -lt 20 ]; then
    tools=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/jetfan/node-20.20.2
    if [ ! -x "$tools/bin/npm" ]; then
      echo "clients/node/env.sh: no Node 20 here; fetching node 20.20.2 and npm 10.8.2 from the npm registry into $tools" >&2
      python3 "$jetfan_node_dir/fetch_node.py" "$tools" 20.20.2 10.8.2 || return 1
    fi
    export PATH="$tools/bin:$PATH"
  fi
  export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
}

jetfan_node_build() {
  (cd "$jetfan_node_dir" && npm ci --prefer-offline --loglevel=error && npx tsc -p tsconfig.json)
}
