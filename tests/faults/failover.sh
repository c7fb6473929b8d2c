#!/usr/bin/env bash
# The failover class (tests/faults/failover.py) as CTest runs it (faults-failover): it needs a
# nats-server with pinned_client groups (2.12.12+, 2.14.3+, 2.15+). $JETFAN_NATS_SERVER when set,
# otherwise the newest one Debian ships (scripts/nats_servers.sh forky, cached in the build
# directory); with neither the class prints a "skipped:" line and exits 77 (CTest: skipped).
#   tests/faults/failover.sh BUILD_DIR [faults.py options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shift
if [ -z "${JETFAN_NATS_SERVER:-}" ]; then
  server=$(JETFAN_NATS_CACHE=${JETFAN_NATS_CACHE:-$build/nats-servers} "$here/../../scripts/nats_servers.sh" forky | awk '{print $3}')
  [ -n "$server" ] && export JETFAN_NATS_SERVER=$server
fi
exec python3 "$here/faults.py" --class failover --build "$build" --out "$build/faults/failover" "$@"
