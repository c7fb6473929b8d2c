#!/usr/bin/env bash
# jetfan against each nats-server release it is tested with: Debian 12's (on PATH, 2.9.10), Debian
# 13's 2.10.x and the newest one Debian ships (testing), the last two fetched by
# scripts/nats_servers.sh. Against each: the integration suite (ctest -L integration -LE slow) and the
# fault suite's short run. A release that cannot be fetched is skipped with a line saying so.
#   scripts/compat.sh                  all of it
#   scripts/compat.sh --quick          the integration suite only, no fault run
#   scripts/compat.sh --print-exclusions   the tests scripts/test.sh skips against the newest
# JETFAN_BUILD_DIR picks the build directory (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
# What the test command leaves out against the newest server (scripts/test.sh): tests of the
# clients, examples, packages and containers, which talk to the server as the C++ tests do.
exclusions='^(node_client|client-install|python-client|demo-scenario|example-.*|systemd-boot|docker-rootfs|debian-package)$'
if [ "${1:-}" = --print-exclusions ]; then
  echo "$exclusions"
  exit 0
fi
server_independent='^(client-install|systemd-boot|docker-rootfs|debian-package)$'
quick=0
[ "${1:-}" = --quick ] && quick=1
scripts/deps.sh
build=${JETFAN_BUILD_DIR:-build}
JETFAN_BUILD_DIR=$build scripts/build.sh > /dev/null
jobs=$(nproc)

servers=("debian12 $(nats-server --version | sed 's/^nats-server: v//') $(command -v nats-server)")
while read -r line; do servers+=("$line"); done < <(scripts/nats_servers.sh trixie forky)

failed=()
for entry in "${servers[@]}"; do
  read -r suite version binary <<< "$entry"
  echo "== nats-server $version (Debian $suite): $binary"
  export JETFAN_NATS_SERVER=$binary
  # The package, container and boot checks run Debian 12's server whatever is chosen: once is enough.
  skip='^$'
  [ "$suite" = debian12 ] || skip=$server_independent
  if ! ctest --test-dir "$build" -j "$jobs" --output-on-failure -L integration -LE slow -E "$skip"; then
    failed+=("integration suite on $version")
  fi
  if [ "$quick" = 0 ] && ! python3 tests/faults/faults.py --short --build "$build" --out "$build/faults/compat-$version"; then
    failed+=("fault short run on $version")
  fi
done
unset JETFAN_NATS_SERVER

echo "== tested: $(for e in "${servers[@]}"; do read -r _ v _ <<< "$e"; printf '%s ' "$v"; done)"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "compat: all passed"
