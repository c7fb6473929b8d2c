#!/usr/bin/env bash
# Checks the tracked files of the repository for leftovers: an empty file is one, unless it is a
# marker whose emptiness is its content (a Python package's __init__.py, PEP 561's py.typed).
#   tests/tree_check.sh REPO_ROOT
# Exit 0: none; 1: some (each named); 77: not a git work tree.
set -euo pipefail
root=$1
if ! git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "SKIPPED: $root is not a git work tree"
  exit 77
fi
found=0
while IFS= read -r -d '' file; do
  [ -f "$root/$file" ] && [ ! -s "$root/$file" ] || continue
  case ${file##*/} in
    __init__.py | py.typed) continue ;;
  esac
  echo "FAILED: $file is tracked and empty: remove it, or give it content that says what it is for"
  found=1
done < <(git -C "$root" ls-files -z)
[ "$found" = 0 ] && echo "OK: no empty tracked files but package markers"
exit "$found"
