#!/usr/bin/env bash
# Checks the tracked files of the repository for leftovers:
#   - a stray file: every tracked file is one of top_files below, or lies under one of top_folders;
#   - an empty file, unless it is a marker whose emptiness is its content (a Python package's
#     __init__.py, PEP 561's py.typed).
#   tests/tree_check.sh REPO_ROOT
# Exit 0: none; 1: some (each named, with what to do); 77: not a git work tree.
set -euo pipefail
root=$1

# What the root holds: ARCHITECTURE.md's table says what each folder is for.
top_folders=(
  .ci                           # the CI entry point
  bench clients config core daemon docker docs examples exec fuzz handles jetstream observe packaging proto
  scripts systemd tests
)
top_files=(
  .clang-format .clang-tidy .gitignore  # the tools' settings
  ARCHITECTURE.md CHANGELOG.md README.md SECURITY.md
  CMakeLists.txt                # the build
  LICENSE VERSION               # the licence; the one version of every package
)

if ! git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "SKIPPED: $root is not a git work tree"
  exit 77
fi
found=0
while IFS= read -r -d '' file; do
  if [[ $file == */* ]]; then
    if [[ " ${top_folders[*]} " != *" ${file%%/*} "* ]]; then
      echo "FAILED: $file is in ${file%%/*}/, which is none of top_folders in tests/tree_check.sh: move it, remove it (git rm), or add the folder there with why"
      found=1
    fi
  elif [[ " ${top_files[*]} " != *" $file "* ]]; then
    echo "FAILED: $file is tracked at the root and is none of top_files in tests/tree_check.sh: remove it (git rm), or add it there with why"
    found=1
  fi
  [ -f "$root/$file" ] && [ ! -s "$root/$file" ] || continue
  case ${file##*/} in
    __init__.py | py.typed) continue ;;
  esac
  echo "FAILED: $file is tracked and empty: remove it, or give it content that says what it is for"
  found=1
done < <(git -C "$root" ls-files -z)
[ "$found" = 0 ] && echo "OK: every tracked file is in a known place; no empty ones but package markers"
exit "$found"
