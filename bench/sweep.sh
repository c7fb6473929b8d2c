# shellcheck shell=bash disable=SC2154  # tool, url, work, out, sec ... and the sweep_* lists are run.sh's
# The cost curve, sourced by bench/run.sh after its helpers (fresh_stream, prepublish, keys_for,
# drain_direct, drain_jetfan, ...): what jetfan costs as the handlers and the payload grow.
#
#   handlers curve: C with each count of $sweep_handlers handlers, all on "#" (every handler gets
#                   every message), at 128 B
#   payload curve:  C with each count of $sweep_fanout all-matching handlers at each size of
#                   $sweep_sizes
#   and A (the direct cnats reader) and G (the nats.go reader, if bench/go/go_reader.sh built it) at
#   every size, for C/A and C/G.
#
# Each point is the median of $sweep_reps runs, each drained end to end as in the throughput table:
# from jetfan's start (t0; A: its ready_ns) until the server shows nothing pending or unacked.
# Steady state: a run drains at least $sweep_multiple × max_held messages, so jetfan's start-up and
# its fill of the held window at the start (and the window's drain at the end) are a small part of
# it. max_held is what jetfan holds at most: the consumer's MaxAckPending ($sweep_ack_pending) or as
# many messages as fit in consumer.max_held_bytes (32 MiB, the default), whichever is fewer. So that
# no run is over in a second, a run is also at least 1 GiB or 400,000 messages, whichever is fewer:
# 400,000 messages at 128 B and 1 KiB, 262,144 at 4 KiB, 65,536 at 16 KiB, 16,384 at 64 KiB and
# 4,096 at 256 KiB. $sweep_n, if set, is the count at every size instead (smoke mode).
#
# The messages of one size are published once; every run then rewinds the consumer
# (`jetfan-bench rewind`: the durable deleted and made again) and drains them all. The runs of one
# size go round by round (A, then C with each handler count, then again), so drift on a shared
# machine hits every point of the size alike.
#
# sweep writes $out/sweep.csv (its columns: the header comment of bench/run.sh); bench/report.sh
# draws sweep.png and the "Cost curve" section of bench.md from it.

sweep_ack_pending=20000        # the stream's MaxAckPending, as fresh_stream's default
sweep_held_bytes=$((32 << 20)) # jetfan's default consumer.max_held_bytes
sweep_multiple=20
sweep_size=128                 # the handlers curve's payload

in_list() { local x=$1 y; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }

sweep_max_held() {  # size -> messages jetfan holds at most at that size
  awk -v s="$1" -v m="$sweep_ack_pending" -v b="$sweep_held_bytes" 'BEGIN {n = int((b + s - 1) / s); print (n < m ? n : m)}'
}
steady_count() {  # size -> messages per run in steady state: the larger of 20 × max_held and 1 GiB (at most 400,000)
  local held=$(( sweep_multiple * $(sweep_max_held "$1") )) floor=$(( (1 << 30) / $1 ))
  [ $floor -gt 400000 ] && floor=400000
  echo $(( held > floor ? held : floor ))
}
sweep_count() {  # size -> messages per run
  if [ -n "${sweep_n:-}" ]; then echo "$sweep_n"; else steady_count "$1"; fi
}

# One run on the messages already in the stream: STACK (A, G or C) HANDLERS SIZE N. Appends
# "stack handlers size n seconds cpu rss" to $work/sweep.reps.
sweep_run() {
  local stack=$1 handlers=$2 size=$3 n=$4 spec="" names=""
  "$tool" rewind "$url" BENCH bench_durable "$sweep_ack_pending"
  if [ "$stack" = A ]; then
    drain_direct "$n" "$size"
    handlers=-
  elif [ "$stack" = G ]; then
    drain_go "$n" "$size"
    handlers=-
  else
    all_handlers "$handlers"
    drain_jetfan "$spec" "$names"
  fi
  echo "$stack $handlers $size $n $sec $cpu $rss" >> "$work/sweep.reps"
}

# The points of $work/sweep.reps (of size SIZE, or all), in the order first run: one line each,
# "stack handlers size n reps seconds seconds_min seconds_max cpu rss" (medians; cpu and rss - for A).
sweep_points() {
  awk -v only="${1:-}" '
    function median(list,   v, k, i, j, t) {
      k = split(list, v, " ")
      for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {t = v[j]; v[j] = v[j - 1]; v[j - 1] = t}
      lo = v[1]; hi = v[k]
      return v[int((k + 1) / 2)]
    }
    only != "" && $3 != only {next}
    {key = $1 " " $2 " " $3 " " $4; if (!(key in reps)) order[++points] = key
     reps[key]++; sec[key] = sec[key] " " $5; cpu[key] = cpu[key] " " $6; rss[key] = rss[key] " " $7}
    END {
      for (p = 1; p <= points; p++) {
        key = order[p]
        s = median(sec[key]); smin = lo; smax = hi
        c = (cpu[key] ~ /-/) ? "-" : median(cpu[key])
        r = (rss[key] ~ /-/) ? "-" : median(rss[key])
        print key, reps[key], s, smin, smax, c, r
      }
    }' "$work/sweep.reps"
}

# The rows of sweep.csv of one curve from sweep_points' lines on stdin.
sweep_rows() {  # CURVE SIZES HANDLERS (space-separated lists)
  awk -v curve="$1" -v sizes=" $2 " -v hs=" $3 " -v bytes="$sweep_held_bytes" -v pending="$sweep_ack_pending" '
    {rate = $4 / $6; if ($1 == "A") a[$3] = rate; if ($1 == "G") g[$3] = rate; line[NR] = $0}
    END {
      for (i = 1; i <= NR; i++) {
        split(line[i], f, " ")
        if (index(sizes, " " f[3] " ") == 0) continue
        if (f[1] == "C" && index(hs, " " f[2] " ") == 0) continue
        rate = f[4] / f[6]; held = int((bytes + f[3] - 1) / f[3]); if (held > pending) held = pending
        printf "%s,%s,%s,%s,%s,%s,%s,%.4f,%.0f,%.0f,%.0f,%.2f,%s,%s,%s,%s\n", curve, f[1], f[2], f[3], f[4],
          (f[1] != "C" ? "-" : held), f[5], f[6], rate, f[4] / f[8], f[4] / f[7], rate * f[3] / 1048576,
          (f[1] == "C" && a[f[3]] ? sprintf("%.2f", rate / a[f[3]]) : ""),
          (f[9] == "-" ? "" : sprintf("%.2f", f[9] / f[4] * 1e6)), (f[10] == "-" ? "" : f[10]),
          (f[1] == "C" && g[f[3]] ? sprintf("%.2f", rate / g[f[3]]) : "")
      }
    }'
}

sweep() {
  local sizes size hs h n points
  sizes=$(printf '%s\n' "$sweep_size" "${sweep_sizes[@]}" | sort -n -u)
  echo "== cost curve: C with ${sweep_handlers[*]} all-matching handlers at $sweep_size B; with ${sweep_fanout[*]} at"
  echo "   ${sweep_sizes[*]} B; A at each size. Median of $sweep_reps runs of the same messages per point"
  : > "$work/sweep.reps"
  for size in $sizes; do
    hs=()
    [ "$size" = "$sweep_size" ] && hs+=("${sweep_handlers[@]}")
    in_list "$size" "${sweep_sizes[@]}" && hs+=("${sweep_fanout[@]}")
    mapfile -t hs < <(printf '%s\n' "${hs[@]}" | sort -n -u)
    n=$(sweep_count "$size")
    echo "  ($size B: $n messages a run, jetfan's max_held $(sweep_max_held "$size"))"
    fresh_stream "$sweep_ack_pending"; prepublish "$n" "$size" "$(keys_for 4)"
    for _ in $(seq "$sweep_reps"); do
      sweep_run A 1 "$size" "$n"
      if [ -n "${go_reader:-}" ]; then sweep_run G 1 "$size" "$n"; fi
      for h in "${hs[@]}"; do sweep_run C "$h" "$size" "$n"; done
    done
    sweep_points "$size" | awk '{printf "    %-8s %9.0f msg/s (%.0f-%.0f)%s\n", ($1 != "C" ? $1 : "C " $2 " h"), $4 / $6, $4 / $8, $4 / $7,
      ($1 != "C" ? "" : sprintf("  %.2f CPU s per 1M  %s MiB peak", $9 / $4 * 1e6, $10))}'
  done

  points=$(sweep_points)
  echo "curve,stack,handlers,size,messages,max_held,reps,seconds,msgs_per_s,msgs_per_s_min,msgs_per_s_max,mb_per_s,c_over_a,jetfan_cpu_s_per_million,jetfan_peak_rss_mib,c_over_g" > "$out/sweep.csv"
  sweep_rows handlers "$sweep_size" "${sweep_handlers[*]}" <<< "$points" >> "$out/sweep.csv"
  sweep_rows payload "${sweep_sizes[*]}" "${sweep_fanout[*]}" <<< "$points" >> "$out/sweep.csv"
}
