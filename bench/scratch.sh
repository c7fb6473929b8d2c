# shellcheck shell=bash
# Sourced by the feature benchmarks (bench/adaptive.sh, bench/tracing.sh, bench/flow_control.sh):
# their scratch directory and what cleans it up, however the run ends.
#
#   bench_smoke_arg NAME [ARG]   sets $smoke: 1 for --smoke, 0 for none; else says how
#                                 bench/NAME.sh is run and exits 64
#   bench_scratch NAME KEEP_VAR   makes $work (/tmp/jetfan-NAME.XXXXXX) and $out (bench/results, or
#                                 $work/results in smoke mode: $smoke=1), empties $pids, and on exit
#                                 kills what is in $pids and every job, copies $work to the directory
#                                 named by the variable KEEP_VAR if set (the run's logs and files,
#                                 the server's store left out), and removes $work.
# Needs $root (the tree) and $smoke set first.

bench_smoke_arg() {
  smoke=0
  case ${2:-} in
    --smoke) smoke=1 ;;
    "") ;;
    *) echo "usage: bench/$1.sh [--smoke]" >&2; exit 64 ;;
  esac
}

bench_scratch() {
  work=$(mktemp -d "/tmp/jetfan-$1.XXXXXX")
  if [ "${smoke:?}" = 1 ]; then out=$work/results; else out=${root:?}/bench/results; fi
  mkdir -p "$out"
  pids=()
  bench_keep=${!2:-}
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for pid in "${pids[@]}" $(jobs -p); do kill "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  if [ -n "$bench_keep" ]; then mkdir -p "$bench_keep" && cp -r "$work"/. "$bench_keep"/ && rm -rf "$bench_keep/js"; fi
  rm -rf "$work"
}
