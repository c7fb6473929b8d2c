#!/usr/bin/env bash
# The README's test command: installs what is missing, checks the code's format, builds, runs every
# test (the fault suite's short run and its regressions among them) against Debian 12's nats-server,
# and the integration suite again against the newest one Debian ships, with clang-tidy beside them at
# idle priority; runs the benchmark harness in smoke mode (it must work; no timing is asserted); then
# builds once more, with clang, AddressSanitizer, UndefinedBehaviorSanitizer, the debug checks and
# libFuzzer's coverage, runs each fuzz target for a short while (any finding fails), and runs every
# test in that build but the slow ones (the fault runs and the 100-stop loop, which exercise the same
# code for longer).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
# Each stage's header says when it began, so a slow run shows where its time went.
stage() { echo "== $* [at $((SECONDS / 60)) min $((SECONDS % 60)) s]"; }

stage "format (clang-format-14, .clang-format)"
scripts/lint.sh --format-only

stage "build and test (build/)"
# Line tables only (-g1): backtraces keep their files and lines, and the build takes half the time
# that full debug information (-g) costs with Asio and Beast.
scripts/build.sh -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
# clang-tidy (.clang-tidy, on build/'s compile commands) runs meanwhile at idle priority (SCHED_IDLE):
# the tests leave most of both cores idle, waiting on servers and timeouts, and a task at idle priority
# gets a core only when no test wants it, so the tests' timing is what it is without it (the tests took
# 579 s with it and 578 s without). Its findings are shown after the tests.
tidy_log=$(mktemp)
idle=(chrt --idle 0)
"${idle[@]}" true 2> /dev/null || idle=(nice -n 19)
"${idle[@]}" scripts/lint.sh > "$tidy_log" 2>&1 &
tidy=$!
trap 'kill "$tidy" 2> /dev/null || true; rm -f "$tidy_log"' EXIT
ctest --test-dir build -j "$jobs" --output-on-failure

stage "the C++ integration tests against the newest nats-server Debian ships (scripts/nats_servers.sh)"
# Beside Debian 12's 2.9.10 above; scripts/compat.sh runs the whole integration suite and the fault
# short run against each release. Left out here, for time (about 6 of the suite's 8 minutes of
# test time): the clients' and examples' suites, the demo, and the package, container and boot checks.
newest=$(scripts/nats_servers.sh forky | awk '{print $3}')
if [ -n "$newest" ]; then
  echo "nats-server: $("$newest" --version) ($newest)"
  JETFAN_NATS_SERVER=$newest ctest --test-dir build -j "$jobs" --output-on-failure -L integration -LE slow \
    -E "$(scripts/compat.sh --print-exclusions)"
fi

stage "clang-tidy-14's findings"
if ! wait "$tidy"; then
  cat "$tidy_log"
  exit 1
fi
cat "$tidy_log"

stage "benchmark harness, smoke mode"
bench/run.sh --smoke
bench/adaptive.sh --smoke  # the adaptive in-flight limit: ~25 s, fails if anything is lost
bench/tracing.sh --smoke   # tracing at sample_ratio 1 to a null collector: ~5 s, fails if a message is lost or no span arrives
bench/flow_control.sh --smoke  # off, max_rate and adaptive_inflight, a few thousand messages each: ~10 s, fails if one is lost
bench/publish.sh --smoke       # publishing through jetfan against cnats and nats.go publishers, and a chain: ~15 s, fails if a follow-up is missing or doubled
bench/ledger.sh --smoke        # the confirmation ledger on, one small ratios round: fails if the consumer does not drain

stage "one build (build-fuzz/: clang, ASan, UBSan, the debug checks) for the fuzz targets and the tests"
# One instrumented build serves both: gcc's sanitizer build took three times as long as clang's.
# Unoptimised (scripts/fuzz.sh says why).
scripts/fuzz.sh --short --with-tests
stage "every test but the slow ones, with ASan and UBSan (build-fuzz/)"
# A sanitizer finding stops the process, so the test that exercised it fails.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir build-fuzz -j "$jobs" --output-on-failure -LE slow
stage "done"
