#!/usr/bin/env bash
# What the confirmation ledger (config `ledger:`, docs/OPERATING.md "Ledger") costs in the steady
# state, where every handler confirms at once and so nothing is written: jetfan with the ledger off
# and on (bucket bench_ledger, made by `jetfan-bench setup`; interval 1s), on the same messages.
#
#   bench/ledger.sh          the full run (about 25 minutes on 2 cores): callgrind's instructions per
#                            message inside jetfan (bench/run.sh --instructions with 1 and with 4
#                            handlers), then bench/run.sh --ratios (LEDGER_N messages of 128 B, default
#                            150000; LEDGER_ROUNDS rounds, default 3) off and on: C1, C4 and C8 against
#                            A and G, and jetfan's CPU per message. Writes bench/results/ledger.md.
#   bench/ledger.sh --smoke  one small ratios round with the ledger on (a few seconds a case); fails if
#                            the consumer does not drain (CI runs this)
#
# Needs what bench/run.sh needs; JETFAN_BUILD_DIR as there.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
ledger=$'ledger:\n  bucket: bench_ledger\n  interval: 1s'
work=$(mktemp -d /tmp/jetfan-ledger.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" = --smoke ]; then
  BENCH_OUT_DIR=$work/on BENCH_CONFIG_EXTRA=$ledger bench/run.sh --ratios 3000 1
  exit 0
fi

n=${LEDGER_N:-150000}
rounds=${LEDGER_ROUNDS:-3}
for mode in off on; do
  extra=""; [ $mode = on ] && extra=$ledger
  echo "== instructions, ledger $mode"
  BENCH_INSTRUCTIONS_C4=1 BENCH_CONFIG_EXTRA=$extra bench/run.sh --instructions | tee "$work/instructions-$mode.txt"
done
for mode in off on; do
  extra=""; [ $mode = on ] && extra=$ledger
  echo "== ratios, ledger $mode"
  BENCH_OUT_DIR=$work/$mode BENCH_CONFIG_EXTRA=$extra bench/run.sh --ratios "$n" "$rounds" | tee "$work/ratios-$mode.txt"
done

# figure FILE LABEL: the instructions per message (without lock acquisition) of that line.
figure() { sed -n "s/.*$2: \([0-9]*\) instructions\/message (\([0-9]*\) without.*/\2/p" "$1"; }
# cpu MODE CASE: the median over the rounds of jetfan's CPU microseconds per message at 128 B.
cpu() {
  awk -F, -v c="$2" '$2 == 128 && $3 == c && $7 != "" {printf "%.2f\n", $7 / $6 * 1e6}' "$work/$1/rounds.csv" |
    sort -n | awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : "-")}'
}
# ratio MODE CASE DEN: the median per-round ratio of CASE's rate to DEN's at 128 B.
ratio() {
  awk -F, -v c="$2" -v d="$3" '$2 == 128 {t[$1, $3] = $4; r[$1]} END {for (i in r) if (t[i, c] && t[i, d]) printf "%.2f\n", t[i, d] / t[i, c]}' \
    "$work/$1/rounds.csv" | sort -n | awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : "-")}'
}
{
  echo "| ledger | instructions/msg C1 | instructions/msg C4 | CPU µs/msg C1 | CPU µs/msg C4 | C1/A | C1/G | C4/A | C4/G | C8/A | C8/G |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for mode in off on; do
    echo "| $mode | $(figure "$work/instructions-$mode.txt" "2 patterns") | $(figure "$work/instructions-$mode.txt" "4 handlers") |" \
      "$(cpu $mode C1) | $(cpu $mode C4) | $(ratio $mode C1 A) | $(ratio $mode C1 G) | $(ratio $mode C4 A) | $(ratio $mode C4 G) |" \
      "$(ratio $mode C8 A) | $(ratio $mode C8 G) |"
  done
  echo
  echo "bench/ledger.sh, $(date -u +%Y-%m-%d): $n messages of 128 B per run, $rounds rounds; instructions without lock"
  echo "acquisition (callgrind, 2000 against 10000 messages); CPU is jetfan's user + system per message, the"
  echo "median over the rounds; ratios are medians of per-round rate ratios (bench/run.sh --ratios)."
} | tee "$root/bench/results/ledger.md"
