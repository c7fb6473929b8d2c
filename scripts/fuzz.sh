#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each in turn:
#   parser_fuzz   the protocol parsers (proto/),        seeds in fuzz/corpus/parser_fuzz/
#   config_fuzz   the config loader and the matcher,    seeds in fuzz/corpus/config_fuzz/
#   session_fuzz  whole handler sessions against the real Dispatcher, checking the core's rules after
#                 every input (fuzz/session_fuzz.cpp), seeds in fuzz/corpus/session_fuzz/
#
#   scripts/fuzz.sh [--short] [--with-tests] [SECONDS] [TARGET...]
#     SECONDS per target: 600 by default (or $JETFAN_FUZZ_SECONDS); --short: 25, as scripts/test.sh runs it.
#     --with-tests: build every test too, so that the same instrumented build (clang, AddressSanitizer,
#                   UndefinedBehaviorSanitizer, the debug checks) runs the test suite after the fuzzers
#                   (`ctest --test-dir build-fuzz`); scripts/test.sh does, and so builds once for both.
#                   That build is unoptimised (-O0): it takes half the time of -O2 under clang's
#                   sanitizers, which matters more to the test command than the fuzzers' speed in a
#                   25-second run. Without --with-tests the fuzzers get -O2. Debug information is
#                   line tables only (-gline-tables-only): what a sanitizer's report needs, its
#                   functions, files and lines, and a faster build than full -g.
#     TARGET: some of the targets above; all of them by default.
#
# The committed seeds are only read. What a run finds worth keeping goes to build-fuzz/corpus/<target>/
# and seeds the next run. A finding (a crash, a broken rule, a leak, an input that hangs or runs out of
# memory; for session_fuzz also an input that makes something else happen when run again in another
# order) makes the script exit 1 after the other targets have run, printing for each the input
# that shows it (kept in build-fuzz/findings/<target>/) and the command that runs it again. Fix the
# bug, and keep the input as a regression in fuzz/regressions/<target>/ (config_fuzz's are replayed by
# config_test).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${JETFAN_FUZZ_SECONDS:-600}
short=
with_tests=OFF
targets=()
for arg in "$@"; do
  case "$arg" in
    --short) seconds=25 short=1 ;;
    --with-tests) with_tests=ON ;;
    [0-9]*) seconds=$arg ;;
    parser_fuzz | config_fuzz | session_fuzz) targets+=("$arg") ;;
    *)
      echo "usage: scripts/fuzz.sh [--short] [--with-tests] [SECONDS] [parser_fuzz|config_fuzz|session_fuzz ...]" >&2
      exit 2
      ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(parser_fuzz config_fuzz session_fuzz)

scripts/deps.sh
build=build-fuzz
optimise=-O2
[ "$with_tests" = OFF ] || optimise=-O0
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimise -gline-tables-only -DNDEBUG" \
      -DCMAKE_CXX_COMPILER="$(command -v clang++-14)" -DJETFAN_FUZZ=ON \
      -DBUILD_TESTING=$with_tests > /dev/null
if [ "$with_tests" = ON ]; then
  cmake --build "$build" -j "${JETFAN_JOBS:-$(nproc)}"
else
  cmake --build "$build" -j "${JETFAN_JOBS:-$(nproc)}" --target "${targets[@]}"
fi

# Undefined behaviour is a finding too, not a line in the log.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
found=()
for target in "${targets[@]}"; do
  case "$target" in
    parser_fuzz) seeds=fuzz/corpus/parser_fuzz max_len=8192 ;;
    config_fuzz) seeds=fuzz/corpus/config_fuzz max_len=8192 ;;
    session_fuzz) seeds=fuzz/corpus/session_fuzz max_len=4096 ;;
  esac
  corpus=$build/corpus/$target findings=$build/findings/$target
  mkdir -p "$corpus" "$findings"
  log=$findings/last-run.log
  echo "== $target: ${seconds}s, seeds $seeds/, corpus $corpus/"
  # One input may take at most 10 s; LeakSanitizer checks every input that allocates more than it frees.
  # Memory grows by some 50 MiB a minute in config_fuzz even so: AddressSanitizer keeps every new
  # allocation stack, and the YAML parser recurses (flat with ASAN_OPTIONS=malloc_context_size=0).
  # Hence 4 GiB rather than libFuzzer's 2 GiB before a run counts as out of memory.
  status=0
  "$build/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$corpus" "$seeds" > "$log" 2>&1 || status=$?
  # The last progress line says how far it got: "#N DONE cov: C ft: F corp: ...".
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  summary=$(sed -E 's/^#[0-9]+[[:space:]]+[A-Z]+[[:space:]]+//; s/ lim:.*| exec\/s:.*//' <<< "$last")
  echo "   ${runs:-?} runs${summary:+; $summary}"
  if [ "$status" -ne 0 ]; then
    reproducer=$(sed -n 's/^.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "   FOUND a problem (exit status $status):" >&2
    grep -E -m 8 'ERROR:|broken:|runtime error:|SUMMARY:|Timeout|out-of-memory' "$log" | sed 's/^/     /' >&2 || true
    echo "   input:  ${reproducer:-none written; see the log}" >&2
    [ -z "$reproducer" ] || echo "   re-run: $build/$target $reproducer" >&2
    echo "   log:    $log" >&2
    found+=("$target")
  elif [ "$target" = session_fuzz ]; then
    # Each input must make the same things happen whatever ran before it in the process: the
    # inputs run twice, in two orders, and each prints a digest of what it made happen.
    inputs=("$seeds")
    [ -n "$short" ] || inputs+=("$corpus")
    scratch=$(mktemp -d)
    for order in 1 2; do
      JETFAN_FUZZ_DIGEST=1 "$build/$target" -runs=0 -seed="$order" -max_len="$max_len" "$scratch" "${inputs[@]}" \
        2> /dev/null | grep '^session_fuzz digest' | sort -u > "$findings/digests-$order"
    done
    rm -rf "$scratch"
    if ! diff -q "$findings/digests-1" "$findings/digests-2" > /dev/null; then
      echo "   FOUND inputs that behave differently from one run to the next:" >&2
      diff "$findings/digests-1" "$findings/digests-2" | sed -n 's/^[<>] session_fuzz digest /     input fnv1a /p' >&2
      echo "   digests: $findings/digests-1, $findings/digests-2; re-run:" \
           "JETFAN_FUZZ_DIGEST=1 $build/$target -runs=0 ${inputs[*]}" >&2
      found+=("$target")
    else
      echo "   the same digest for each of $(wc -l < "$findings/digests-1") inputs, in two orders"
    fi
  fi
done

if [ ${#found[@]} -gt 0 ]; then
  echo "fuzz: findings in ${found[*]}" >&2
  exit 1
fi
echo "fuzz: no findings"
