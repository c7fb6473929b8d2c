#!/usr/bin/env bash
# Style and static checks, failing on any finding:
#   - clang-format-14 (.clang-format) on every C++ file in the repository, and no ';' in a test's name;
#   - clang-tidy-14 (.clang-tidy) on the C++ sources of handles/, core/, proto/, jetstream/, config/,
#     observe/, clients/cpp/, exec/ and daemon/.
# Needs a configured build/ (compile_commands.json): scripts/build.sh makes one.
#   scripts/lint.sh [--fix | --format-only]
#     --fix          rewrites the files clang-format would change
#     --format-only  checks the format only (no build needed; the test command runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v clang-format-14 > /dev/null || need+=(clang-format-14)
[ "${1:-}" = "--format-only" ] || command -v clang-tidy-14 > /dev/null || need+=(clang-tidy-14)
if [ ${#need[@]} -gt 0 ]; then apt-get install -y -q --no-install-recommends "${need[@]}"; fi
build=${JETFAN_BUILD_DIR:-build}
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' | grep -v -e '^bench/node/' -e '/node_modules/')

if [ "${1:-}" = "--fix" ]; then
  clang-format-14 -i "${files[@]}"
  exit 0
fi

# catch_discover_tests hands CTest a list, so a ';' in a test's name splits it into two tests that
# match nothing and fail.
if grep -nE '(TEST_CASE|SECTION|SCENARIO)\("[^"]*;' "${files[@]}"; then
  echo "lint: a ';' in a test's name above splits it in CTest; use a comma" >&2
  exit 1
fi
echo "== clang-format: ${#files[@]} files"
clang-format-14 --dry-run --Werror "${files[@]}"
if [ "${1:-}" = "--format-only" ]; then
  echo "lint: format clean"
  exit 0
fi

mapfile -t sources < <(printf '%s
' "${files[@]}" | grep -E '^(handles|core|proto|jetstream|config|observe|clients/cpp|exec|daemon)/.*\.cpp$' |
                       grep -v -e '_fuzz\.cpp$' -e '_fuzz_owner\.cpp$')  # built only with JETFAN_FUZZ
echo "== clang-tidy: ${#sources[@]} files"
# One process per file, two at a time; any warning fails the run.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${sources[@]}" |
     xargs -P "$(nproc)" -n 1 clang-tidy-14 -p "$build" --quiet --warnings-as-errors='*' > "$log" 2>&1; then
  grep -v -e '^[0-9]* warnings\? generated' -e '^Suppressed [0-9]* warnings' -e '^Use -header-filter' "$log"
  echo "lint: clang-tidy found the problems above" >&2
  exit 1
fi
echo "lint: clean"
