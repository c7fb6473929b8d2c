#!/usr/bin/env bash
# The ERR before a close reaches a peer that is still writing: a Node peer writes 1 MiB without a
# newline (its line is far too long), and must read jetfan's ERR; a few times over, as a close at
# once loses it every time.
#   tests/linger_test.sh BUILD_DIR
# Needs Node (exit 77, skipped, without it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node > /dev/null; then echo "SKIPPED: node is not installed"; exit 77; fi
source "$here/support/mesh.sh"
mesh_start "$1"
mesh_jetfan '  - name: builder
    patterns: ["#"]'
for attempt in 1 2 3; do
  output=$(node "$here/support/flood_peer.js" "$mesh_socket") || mesh_fail "attempt $attempt: $output"
  [[ $output == *"control line longer than 1024 bytes"* ]] || mesh_fail "attempt $attempt: $output"
  echo "$output"
done
echo "OK: a Node peer still writing 1 MiB reads the ERR every time"
