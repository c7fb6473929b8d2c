#!/usr/bin/env bash
# The README's test command: installs what is missing, checks the code's format, builds, runs every
# test (the fault suite's short run and its regressions among them) against Debian 12's nats-server,
# and the integration suite again against the newest one Debian ships; runs the benchmark harness in
# smoke mode (it must work; no timing is asserted); runs clang-tidy; then builds once more, with clang,
# AddressSanitizer, UndefinedBehaviorSanitizer, the debug checks and libFuzzer's coverage, runs each
# fuzz target for a short while (any finding fails), and runs every test in that build but the slow
# ones (the fault runs and the 100-stop loop, which exercise the same code for longer).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

echo "== format (clang-format-14, .clang-format)"
scripts/lint.sh --format-only

echo "== build and test (build/)"
scripts/build.sh
ctest --test-dir build -j "$jobs" --output-on-failure

echo "== the C++ integration tests against the newest nats-server Debian ships (scripts/nats_servers.sh)"
# Beside Debian 12's 2.9.10 above; scripts/compat.sh runs the whole integration suite and the fault
# short run against each release. Left out here, for time (about 6 of the suite's 8 minutes of
# test time): the clients' and examples' suites, the demo, and the package, container and boot checks.
newest=$(scripts/nats_servers.sh forky | awk '{print $3}')
if [ -n "$newest" ]; then
  echo "nats-server: $("$newest" --version) ($newest)"
  JETFAN_NATS_SERVER=$newest ctest --test-dir build -j "$jobs" --output-on-failure -L integration -LE slow \
    -E "$(scripts/compat.sh --print-exclusions)"
fi

echo "== benchmark harness, smoke mode"
bench/run.sh --smoke

echo "== clang-tidy-14 (.clang-tidy), on build/'s compile commands"
scripts/lint.sh

echo "== one build (build-fuzz/: clang, ASan, UBSan, the debug checks) for the fuzz targets and the tests"
# One instrumented build serves both: gcc's sanitizer build took three times as long as clang's.
scripts/fuzz.sh --short --with-tests
echo "== every test but the slow ones, with ASan and UBSan (build-fuzz/)"
# A sanitizer finding stops the process, so the test that exercised it fails.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir build-fuzz -j "$jobs" --output-on-failure -LE slow
