#!/usr/bin/env bash
# The repository checks can fail: tests/layer_check.sh and tests/tree_check.sh, copied with the rest
# of this tree (its tracked files as they are in the work tree) into a git repository of its own and
# run there, pass on the copy as it is and fail, naming what is wrong, on each break below.
#   tests/checks_test.sh REPO_ROOT
# Exit 0: each check passed and failed as it should; 1: not (each FAILED line says which case);
# 77: REPO_ROOT is not a git work tree.
set -euo pipefail
root=$(cd "$1" && pwd)
if ! git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "SKIPPED: $root is not a git work tree"
  exit 77
fi
copy=$(mktemp -d /tmp/jetfan-checks.XXXXXX)
trap 'rm -rf "$copy"' EXIT
(cd "$root" && git ls-files -z | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  xargs -0 cp --parents -t "$copy")
git() { command git -C "$copy" -c user.name=check -c user.email=check@localhost "$@"; }
git init -q && git add -A && git commit -q -m copy

failures=0
# expect CHECK STATUS TEXT CASE: CHECK on the copy exits STATUS and, if TEXT is not empty, prints it.
expect() {
  local check=$1 want=$2 text=$3 name=$4 output status=0
  git add -A
  output=$("$copy/tests/$check" "$copy" 2>&1) || status=$?
  if [ "$status" != "$want" ] || [[ $output != *"$text"* ]]; then
    echo "FAILED: $check, $name: exit $status (want $want${text:+, printing \"$text\"}); it printed:"
    printf '  %s\n' "${output//$'\n'/$'\n'  }"
    failures=$((failures + 1))
  else
    echo "ok: $check, $name: exit $status"
  fi
  git reset -q --hard && git clean -fdq
}

expect layer_check.sh 0 "OK:" "the tree as it is"
printf '// stray\n#include <nats/nats.h>\n' > "$copy/core/stray.cpp"
expect layer_check.sh 1 "core/stray.cpp:2 includes <nats/nats.h>" "core/ includes <nats/nats.h>"
printf '// stray\n#  include "nats_handles.hpp"\n' > "$copy/core/stray.cpp"
expect layer_check.sh 1 "core/stray.cpp:2 includes nats_handles.hpp, which sees cnats" \
  "core/ includes a header of the tree that includes cnats"
sed -i 's|^cnats_files=(|&\n  core/pull_ledger.hpp|' "$copy/tests/layer_check.sh"
expect layer_check.sh 1 "names core/pull_ledger.hpp, which sees no cnats" "an entry of cnats_files that sees no cnats"
printf '#include "dispatcher.hpp"\n' > "$copy/core/stray.cpp"
expect layer_check.sh 1 "core/stray.cpp:1 includes dispatcher.hpp, of daemon/, a higher layer than core/" \
  "core/ includes a header of daemon/"

expect tree_check.sh 0 "OK:" "the tree as it is"
printf '127.0.0.1 localhost\n' > "$copy/hosts"
expect tree_check.sh 1 "FAILED: hosts is tracked at the root" "a stray file at the root"
mkdir "$copy/stray" && echo stray > "$copy/stray/file"
expect tree_check.sh 1 "FAILED: stray/file is in stray/" "a file in an unknown top-level folder"
: > "$copy/docs/empty.md"
expect tree_check.sh 1 "FAILED: docs/empty.md is tracked and empty" "an empty file"

[ "$failures" = 0 ] && echo "OK: both checks pass on the tree and fail on each break" || exit 1
