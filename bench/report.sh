#!/usr/bin/env bash
# Writes bench.md (tables, targets) and bench.png (plot) from the CSVs bench/run.sh wrote. bench/run.sh
# copies bench.md into docs/BENCHMARKS.md, so its links to the plots are relative to docs/.
#   bench/report.sh RESULTS_DIR HELD_RSS_MIB HELD_PEAK_MIB HELD_N REPS [LATENCY_RATE]
#   bench/report.sh --clients RESULTS_DIR     only the clients' table (clients.csv), on stdout
#   bench/report.sh --order RESULTS_DIR       only the ordered delivery's ratio (order.csv), on stdout
#   bench/report.sh --delivery RESULTS_DIR    only the per-delivery costs (delivery.csv and
#                                             delivery_syscalls.csv): draws delivery.png, prints the section
#   bench/report.sh --ratios RESULTS_DIR      only the interleaved rounds' ratios (rounds.csv), on stdout
#   bench/report.sh --sweep RESULTS_DIR       only the cost curve (sweep.csv): draws sweep.png, puts
#                                             its section into RESULTS_DIR/bench.md if there is one,
#                                             and prints the section
set -euo pipefail

median() { sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }

# The clients' table from clients.csv (round,client,messages,seconds,ready_seconds): per client the
# median over rounds of its rate, and of its per-round ratio to the C++ client's rate (range in
# brackets), both from the handler's start and from its ready_ns.
clients_table() {  # RESULTS_DIR
  local csv=$1/clients.csv client label target
  rate() { awk -F, -v c="$1" -v col="$2" '$2 == c {printf "%.0f\n", $3 / $col}' "$csv" | median; }
  ratios() { awk -F, -v c="$1" -v col="$2" '$2 == "cpp" {cpp[$1] = $col} $2 == c {t[$1] = $col}
    END {for (r in t) if (r in cpp) printf "%.2f\n", cpp[r] / t[r]}' "$csv" | sort -n; }
  ratio() { local all; all=$(ratios "$1" "$2"); printf '%s× (%s)' "$(median <<< "$all")" "$(sed -n '1p;$p' <<< "$all" | paste -sd-)"; }
  local rounds; rounds=$(awk -F, '$2 == "cpp"' "$csv" | wc -l)
  echo "## Clients"
  echo
  echo "jetfan with one handler (h0 on \`#\`, acking each message at once) on each client, 128 B, $(awk -F, 'NR == 2 {print $3}' "$csv")"
  echo "messages already in the stream; the three clients run back to back in each of $rounds rounds. Time from the"
  echo "handler's start (as for C) until nothing is pending or unacked; \"from ready\" leaves out the handler's"
  echo "start-up (from the ready_ns it prints once connected). Median over rounds; the ratio is the median of"
  echo "the per-round ratios to the C++ client (range in brackets)."
  echo
  echo "| client | msg/s | ratio to C++ | target | msg/s from ready | ratio from ready |"
  echo "|---|---:|---:|---|---:|---:|"
  for client in cpp ts python; do
    case $client in
      cpp) label="C++ (\`jetfan-bench handler\`)"; target="—" ;;
      ts) label="TypeScript (clients/node/bench/handler.ts, $(awk -F, '$1 == "ts" {print $2}' "$1/clients.txt"))"; target="≥ 0.8×" ;;
      python) label="Python (clients/python/bench_handler.py, $(awk -F, '$1 == "python" {print $2}' "$1/clients.txt"))"; target="≥ 0.5×" ;;
    esac
    echo "| $label | $(rate $client 4) | $(ratio $client 4) | $target | $(rate $client 5) | $(ratio $client 5) |"
  done
}

# The cost curve from sweep.csv (bench/run.sh's header comment names its columns).
size_label() { awk -v s="$1" 'BEGIN {if (s < 1024) printf "%d B", s; else if (s < 1048576) printf "%g KiB", s / 1024; else printf "%g MiB", s / 1048576}'; }

sweep_section() {  # RESULTS_DIR: the "Cost curve" section of bench.md
  local csv=$1/sweep.csv reps steady hsize
  reps=$(awk -F, 'NR == 2 {print $7}' "$csv")
  hsize=$(awk -F, '$1 == "handlers" {print $4; exit}' "$csv")
  steady=$(awk -F, 'NR > 1 && $2 == "C" && $5 < 20 * $6 {bad = 1} END {print bad ? 0 : 1}' "$csv")
  echo "## Cost curve"
  echo
  echo "What jetfan costs as its handlers and the payload grow: msg/s end to end, jetfan's CPU seconds per million"
  echo "messages (user + system) and its peak RSS. Every handler matches every message (\`#\`) and acks it at once;"
  echo "A is the direct cnats reader on the same messages, G the nats.go reader (Fetch(2048), +ACK each). Each point is the median of $reps runs over the same"
  echo "messages (the consumer rewound between runs; msg/s of the slowest and fastest run in brackets), each timed"
  echo "from jetfan's start (A: its ready_ns) until nothing is pending or unacked."
  if [ "$steady" = 1 ]; then
    echo "A run is at least 20 × max_held messages, max_held being what jetfan holds at most (the consumer's"
    echo "MaxAckPending, 20,000, or what fits in \`consumer.max_held_bytes\`, 32 MiB), and at least 1 GiB or 400,000"
    echo "messages: start-up and the held window's fill and drain are a small part of it. Command:"
    echo "\`bench/run.sh --sweep [REPS]\` (part of \`bench/run.sh\`)."
  else
    echo "A run is the number of messages below, fewer than 20 × max_held at some points: not steady state."
  fi
  echo
  echo "By handlers, $(size_label "$hsize"), $(awk -F, '$1 == "handlers" {print $5; exit}' "$csv") messages a run:"
  echo
  echo "| handlers | msg/s | MiB/s | C/A | C/G | jetfan CPU s per 1M msgs | jetfan peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  awk -F, '$1 == "handlers" {printf "| %s | %s (%s-%s) | %s | %s | %s | %s | %s |\n",
    ($2 == "A" ? "A (direct cnats reader)" : $2 == "G" ? "G (nats.go reader)" : $3), $9, $10, $11, $12, $13, $16, $14, $15}' "$csv"
  echo
  echo "By payload:"
  echo
  echo "| size | messages | max_held | stack | msg/s | MiB/s | C/A | C/G | jetfan CPU s per 1M msgs | jetfan peak RSS MiB |"
  echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
  awk -F, '$1 == "payload" {print}' "$csv" | while IFS=, read -r _ stack handlers size messages held _ _ rate lo hi mib ca cpu rss cg; do
    echo "| $(size_label "$size") | $messages | $held | $([ "$stack" = C ] && echo "C $handlers h" || echo "$stack") | $rate ($lo-$hi) | $mib | $ca | $cg | $cpu | $rss |"
  done
  echo
  echo "![cost curve](../bench/results/sweep.png)"
}

sweep_plot() {  # RESULTS_DIR: sweep.png from sweep.csv
  local dir=$1 csv=$1/sweep.csv tmp a_rate g_rate hsize h hmin hmax smin smax xt_h xt_s cpu_log=1 rate_plot="" ca_plot="" cpu_plot="" rss_plot=""
  local -a fan
  tmp=$(mktemp -d)
  # handlers.dat: handlers msgs/s cpu rss c/a min max; A.dat: size msgs/s min max; C<h>.dat as handlers.dat by size
  awk -F, -v t="$tmp" 'NR == 1 {next}
    $1 == "handlers" && $2 == "C" {print $3, $9, $14, $15, $13, $10, $11 > (t "/handlers.dat")}
    $1 == "payload" && $2 == "A" {print $4, $9, $10, $11 > (t "/A.dat")}
    $1 == "payload" && $2 == "C" {print $4, $9, $14, $15, $13, $10, $11 > (t "/C" $3 ".dat")}' "$csv"
  a_rate=$(awk -F, '$1 == "handlers" && $2 == "A" {print $9}' "$csv")
  g_rate=$(awk -F, '$1 == "handlers" && $2 == "G" {print $9}' "$csv")
  awk -F, -v t="$tmp" '$1 == "payload" && $2 == "G" {print $4, $9, $10, $11 > (t "/G.dat")}' "$csv"
  hsize=$(awk -F, '$1 == "handlers" {print $4; exit}' "$csv")
  read -r hmin hmax < <(awk '{print $1}' "$tmp/handlers.dat" | sort -n | sed -n '1p;$p' | paste -sd' ')
  read -r smin smax < <(awk '{print $1}' "$tmp/A.dat" | sort -n | sed -n '1p;$p' | paste -sd' ')
  [ -n "$hmax" ] || hmax=$hmin; [ -n "$smax" ] || smax=$smin
  xt_h=$(awk '{printf "%s\"%s\" %s", (NR > 1 ? ", " : ""), $1, $1}' "$tmp/handlers.dat")
  xt_s=$(while read -r size _; do printf '"%s" %s\n' "$(size_label "$size")" "$size"; done < "$tmp/A.dat" | paste -sd,)
  mapfile -t fan < <(awk -F, '$1 == "payload" && $2 == "C" {print $3}' "$csv" | sort -n -u)
  local colors=("#3b6ea8" "#c0504d" "#4e9a06" "#8064a2" "#e69f00") i=0 lc
  for h in "${fan[@]}"; do  # one colour per handler count in every panel of the payload row
    lc="lc rgb \"${colors[i++ % ${#colors[@]}]}\""
    rate_plot+=", \"$tmp/C$h.dat\" using 1:2:6:7 with yerrorlines lw 2 $lc title \"C, $h handler$([ "$h" = 1 ] || echo s)\""
    ca_plot+=", \"$tmp/C$h.dat\" using 1:5 axes x1y2 with linespoints dashtype 2 $lc title \"C/A, $h h\""
    cpu_plot+="${cpu_plot:+, }\"$tmp/C$h.dat\" using 1:3 with linespoints lw 2 $lc title \"$h h\""
    rss_plot+="${rss_plot:+, }\"$tmp/C$h.dat\" using 1:4 with linespoints lw 2 $lc title \"$h h\""
    awk '$3 <= 0 {exit 1}' "$tmp/C$h.dat" || cpu_log=0  # log scale only if every CPU figure is above 0
  done
  gnuplot <<GP
set terminal pngcairo size 1500,900 font "sans,10"
set output "$dir/sweep.png"
set multiplot layout 2,3 title "jetfan cost curve: C (jetfan and handler processes) against A (direct cnats reader) and G (nats.go reader); median of runs, range as bars"
set grid
set key top right
set logscale x 2
set xrange [$hmin / 1.4 : $hmax * 1.4]
set xtics ($xt_h)
set xlabel "handlers, all matching every message ($(size_label "$hsize"))"
set yrange [0:*]
set format y "%.0s%c"
set title "msg/s"
plot "$tmp/handlers.dat" using 1:2:6:7 with yerrorlines lw 2 lc rgb "#3b6ea8" title "C", $a_rate with lines dashtype 2 lc rgb "#666666" title "A"$([ -n "$g_rate" ] && echo ", $g_rate with lines dashtype 3 lc rgb \"#000000\" title \"G\"")
set format y "%g"
set title "jetfan CPU s per 1M messages"
plot "$tmp/handlers.dat" using 1:3 with linespoints lw 2 lc rgb "#3b6ea8" notitle
set title "jetfan peak RSS (MiB)"
plot "$tmp/handlers.dat" using 1:4 with linespoints lw 2 lc rgb "#3b6ea8" notitle
set xrange [$smin / 1.6 : $smax * 1.6]
set xtics ($xt_s)
set xlabel "payload"
set title "msg/s (log scale); C/A dashed, right axis"
set logscale y
set yrange [*:*]
set ytics nomirror
set y2tics
set y2range [0:*]
set y2label "C/A"
set key bottom left
set format y "%.0s%c"
plot "$tmp/A.dat" using 1:2:3:4 with yerrorlines lw 2 lc rgb "#666666" title "A"$([ -s "$tmp/G.dat" ] && echo ", \"$tmp/G.dat\" using 1:2:3:4 with yerrorlines lw 2 lc rgb \"#000000\" title \"G\"")$rate_plot$ca_plot
unset y2tics
unset y2label
set format y "%g"
set ytics mirror
set key top left
set title "jetfan CPU s per 1M messages$([ $cpu_log = 1 ] && echo " (log scale)")"
$([ $cpu_log = 1 ] || echo "unset logscale y; set yrange [0:*]")
plot $cpu_plot
unset logscale y
set yrange [0:*]
set title "jetfan peak RSS (MiB)"
plot $rss_plot
unset multiplot
GP
  rm -rf "$tmp"
}

# The per-delivery costs (bench/per_delivery.sh says how each figure is taken).
delivery_section() {  # RESULTS_DIR
  local dir=$1
  echo "## Per delivery"
  echo
  echo "jetfan with 1 to 16 handlers, all matching every message (\`#\`) and acking it at once, $(awk -F, 'NR == 2 {print $3}' "$dir/delivery.csv") B,"
  echo "$(awk -F, 'NR == 2 {print $4}' "$dir/delivery.csv") messages a run (the consumer rewound between runs), jetfan's pull batch $(awk -F, 'NR == 2 {print $6}' "$dir/delivery.csv")."
  echo "CPU is user + system from /proc: jetfan's per delivery (messages × handlers) with the C++ handlers; the"
  echo "handlers' from their ready_ns on, per message each handled; the nats-server's per message (in 10 ms clock"
  echo "ticks: a run resolves 10 ms over its messages). System calls:"
  echo "strace on jetfan in a separate run with the C++ handlers; it slows jetfan many times, which lets more"
  echo "pile up per call, so MSGs per writev (deliveries over writes to handler sockets) and ACKs per read"
  echo "(deliveries over reads of them) are upper bounds, and no time is taken from that run. The untraced"
  echo "figures come from jetfan's own counters (\`jetfan_handler_socket_writes_total\`, \`_reads_total\` on"
  echo "/metrics) at the end of each timed run with the C++ handlers."
  echo "Command: \`bench/run.sh --delivery [N]\` (part of \`bench/run.sh\`)."
  echo
  echo "| handlers | jetfan CPU µs per delivery | C++ handler CPU µs per message | TypeScript | Python | nats-server CPU µs per message | pull batch | MSGs per write (untraced) | ACKs per read (untraced) | system calls per delivery | MSGs per writev | ACKs per read | +ACKs per server write |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, 'FNR == 1 {file++; next}
    file == 1 {h[$2] = 1; batch[$2] = $6; hc[$1, $2] = $9; if ($1 == "cpp") {j[$2] = $8; sv[$2] = $10; uw[$2] = $11; ur[$2] = $12}}
    file == 2 {sc[$1] = $9; mw[$1] = $10; ar[$1] = $11; as[$1] = $12}
    END {n = 0; for (k in h) list[++n] = k + 0
      for (a = 2; a <= n; a++) for (b = a; b > 1 && list[b - 1] > list[b]; b--) {t = list[b]; list[b] = list[b - 1]; list[b - 1] = t}
      for (a = 1; a <= n; a++) {k = list[a]
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k, j[k], hc["cpp", k], hc["ts", k], hc["python", k], sv[k], batch[k], uw[k], ur[k], sc[k], mw[k], ar[k], as[k]}}' \
    "$dir/delivery.csv" "$dir/delivery_syscalls.csv"
  echo
  echo "![per delivery](../bench/results/delivery.png)"
}

delivery_plot() {  # RESULTS_DIR: delivery.png from delivery.csv and delivery_syscalls.csv
  local dir=$1 tmp xt
  tmp=$(mktemp -d)
  # cpu.dat: handlers jetfan cpp ts python server; calls.dat: handlers syscalls/delivery msgs/writev acks/read
  awk -F, 'NR > 1 {h[$2] = 1; v[$1, $2] = $9; if ($1 == "cpp") {j[$2] = $8; s[$2] = $10}}
    END {for (k in h) printf "%s %s %s %s %s %s\n", k, j[k], (("cpp", k) in v ? v["cpp", k] : "NaN"),
      (("ts", k) in v ? v["ts", k] : "NaN"), (("python", k) in v ? v["python", k] : "NaN"), s[k]}' "$dir/delivery.csv" | sort -n > "$tmp/cpu.dat"
  awk -F, 'NR > 1 {printf "%s %s %s %s\n", $1, ($9 == "" ? "NaN" : $9), ($10 == "" ? "NaN" : $10), ($11 == "" ? "NaN" : $11)}' "$dir/delivery_syscalls.csv" | sort -n > "$tmp/calls.dat"
  [ -s "$tmp/calls.dat" ] || echo "1 NaN NaN NaN" > "$tmp/calls.dat"
  xt=$(awk '{printf "%s\"%s\" %s", (NR > 1 ? ", " : ""), $1, $1}' "$tmp/cpu.dat")
  gnuplot <<GP
set terminal pngcairo size 1300,520 font "sans,10"
set output "$dir/delivery.png"
set multiplot layout 1,2 title "jetfan per delivery: all-matching handlers, $(awk -F, 'NR == 2 {print $3}' "$dir/delivery.csv") B"
set grid
set logscale x 2
set xtics ($xt)
set xlabel "handlers, all matching every message"
set yrange [0:*]
set key top left
set title "CPU µs (user + system)"
plot "$tmp/cpu.dat" using 1:2 with linespoints lw 2 title "jetfan, per delivery", \
     "" using 1:3 with linespoints lw 2 title "C++ handler, per message", \
     "" using 1:4 with linespoints lw 2 title "TypeScript handler", \
     "" using 1:5 with linespoints lw 2 title "Python handler", \
     "" using 1:6 with linespoints dashtype 2 lw 2 title "nats-server, per message"
set title "jetfan's system calls (strace, a separate run)"
plot "$tmp/calls.dat" using 1:2 with linespoints lw 2 title "system calls per delivery", \
     "" using 1:3 with linespoints lw 2 title "MSGs per writev", \
     "" using 1:4 with linespoints lw 2 title "ACKs per read"
unset multiplot
GP
  rm -rf "$tmp"
}

# rounds.csv (round,size,case,seconds,jetfan_peak_rss_mib,messages): the per-round ratio of CASE to DEN (A,
# or B), as rates (the inverse ratio of times), one line per round.
round_ratios() {  # SIZE CASE DEN
  awk -F, -v size="$1" -v c="$2" -v d="$3" 'NR > 1 && $2 == size {t[$1, $3] = $4; r[$1] = 1}
    END {for (i in r) if (t[i, c] && t[i, d]) printf "%.2f\n", t[i, d] / t[i, c]}' "$out/rounds.csv"
}
round_ratio() { round_ratios "$@" | median; }
round_range() { round_ratios "$@" | sort -n | sed -n '1p;$p' | paste -sd- ; }

# The rounds' ratios alone (bench/run.sh --ratios): for each size and case, the median over rounds
# of its rate over A's and over G's in the same round (range in brackets).
# G: the nats.go reader's rows, if this run had them (bench/go/go_reader.sh skips G where it cannot build it).
g_present() { awk -F, 'NR > 1 && $3 == "G" {found = 1} END {exit !found}' "$out/rounds.csv"; }
ratios_table() {
  local size c g=0
  g_present && g=1
  echo "| size | case | rounds | msg/s (median) | ×A | ×G |"
  echo "|---:|---|---:|---:|---:|---:|"
  awk -F, 'NR > 1 && !seen[$2 FS $3]++ {print $2, $3}' "$out/rounds.csv" | while read -r size c; do
    echo "| $size | $c | $(awk -F, -v s="$size" -v c="$c" 'NR > 1 && $2 == s && $3 == c' "$out/rounds.csv" | wc -l) |" \
      "$(awk -F, -v s="$size" -v c="$c" 'NR > 1 && $2 == s && $3 == c {printf "%.0f\n", $6 / $4}' "$out/rounds.csv" | median) |" \
      "$([ "$c" = A ] || echo "$(round_ratio "$size" "$c" A)× ($(round_range "$size" "$c" A))") |" \
      "$([ $g = 1 ] && [ "$c" != G ] && echo "$(round_ratio "$size" "$c" G)× ($(round_range "$size" "$c" G))") |"
  done
}
if [ "${1:-}" = "--ratios" ]; then
  out=$2
  ratios_table
  exit 0
fi

# order.csv (round,case,keys,messages,seconds): the median over rounds of ordered's rate over
# unordered's in the same round, and the serial run on one key (round "single").
if [ "${1:-}" = "--order" ]; then
  ratio=$(awk -F, 'NR > 1 && $1 != "single" {t[$1, $2] = $5; r[$1] = 1}
    END {for (i in r) if (t[i, "ordered"]) printf "%.3f\n", t[i, "unordered"] / t[i, "ordered"]}' "$2/order.csv" | median)
  echo "  ordered / unordered, median of the rounds: $(printf '%.2f' "$ratio")x (target at least 0.8x)"
  awk -F, '$1 == "single" {printf "  one key, serial: %.0f msg/s, one round trip (MSG, ACK, next MSG) %.0f us\n", $4 / $5, $5 / $4 * 1e6}' "$2/order.csv"
  exit 0
fi

if [ "${1:-}" = "--delivery" ]; then
  delivery_plot "$2"
  delivery_section "$2"
  exit 0
fi

if [ "${1:-}" = "--sweep" ]; then
  sweep_plot "$2"
  if [ -f "$2/bench.md" ]; then  # the section is the last of bench.md: the old one goes, the new one is appended
    { awk '/^## Cost curve/ {skip = 1; next} skip && /^## / {skip = 0}
        !skip {line[++n] = $0} END {while (n > 0 && line[n] == "") n--; for (i = 1; i <= n; i++) print line[i]}' "$2/bench.md"
      echo; sweep_section "$2"; } > "$2/bench.md.new"
    mv "$2/bench.md.new" "$2/bench.md"
  fi
  sweep_section "$2"
  exit 0
fi

if [ "${1:-}" = "--clients" ]; then
  clients_table "$2"
  exit 0
fi

out=$1 held_rss=$2 held_peak=$3 held_n=$4 reps=$5 lat_rate=${6:-10000}
csv=$out/bench.csv md=$out/bench.md

# C/A, C/B and C/G use the A, B and G rows of the same size from the same run (columns 12, 13, 14).
ratios=$out/ratios.csv
awk -F, 'NR == 1 {next}
  $2 == "A" {a[$5] = $8} $2 == "G" {g[$5] = $8} $2 == "B" && $3 == 1 {b[$5] = $8} {row[NR] = $0; size[NR] = $5; rate[NR] = $8; stack[NR] = $2}
  END {for (i = 2; i <= NR; i++) printf "%s,%s,%s,%s\n", row[i], (a[size[i]] ? sprintf("%.2f", rate[i] / a[size[i]]) : ""),
                                                     (b[size[i]] ? sprintf("%.2f", rate[i] / b[size[i]]) : ""),
                                                     (g[size[i]] ? sprintf("%.2f", rate[i] / g[size[i]]) : "")}' "$csv" > "$ratios"

# Median over rounds of one stack's latency column; and of C minus A per round (column 2 p50, 3 p99).
lat() { awk -F, -v s="$1" -v col="$2" '$1 == s {print $col}' "$out/latency.csv" | median; }
added() { awk -F, -v col="$1" '$1 == "A" {a[$6] = $col} $1 == "C" {c[$6] = $col} END {for (r in c) print c[r] - a[r]}' "$out/latency.csv" | median; }
rounds=$(awk -F, 'NR > 1 {print $1}' "$out/rounds.csv" | sort -u | wc -l)
ipm() { awk -F, -v p="$1" -v col="$2" '$1 == p {print $col}' "$out/instructions.csv"; }
# The highest peak RSS of jetfan in any run with default settings (all but the held-memory case):
# the throughput table, the rounds and the cost curve. Prints "MiB case".
peak_rss_all() {
  { awk -F, 'NR > 1 && $2 == "C" && $11 != "" {print $11, $1 ", " $5 " B"}' "$csv"
    awk -F, 'NR > 1 && $5 != "" {print $5, $3 " at " $2 " B, round " $1}' "$out/rounds.csv"
    [ -f "$out/sweep.csv" ] && awk -F, 'NR > 1 && $2 == "C" && $15 != "" {print $15, "cost curve, " $3 " h at " $4 " B"}' "$out/sweep.csv"
  } | sort -g -r | head -1
}
# met VALUE OP LIMIT: "met" or "missed" (OP: ge or le)
met() { awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {ok = (op == "ge") ? v + 0 >= l : v + 0 <= l; print (v == "" ? "no figure" : ok ? "met" : "**missed**")}'; }
ratio_row() {  # LABEL SIZE CASE TARGET [DEN=A]
  local den=${5:-A} r; r=$(round_ratio "$2" "$3" "$den")
  echo "| $1 | ≥ $4× $den | ${r}× ($(round_range "$2" "$3" "$den")) | $(met "$r" ge "$4") |"
}
delivery_row() {  # LABEL CLIENT HANDLERS COLUMN LIMIT: a per-delivery figure (delivery.csv) against its target
  local v; v=$(awk -F, -v c="$2" -v h="$3" -v col="$4" '$1 == c && $2 == h {print $col; exit}' "$out/delivery.csv")
  echo "| $1 | ≤ $5 µs | ${v:-no figure}${v:+ µs} | $(met "$v" le "$5") |"
}
g_version() { dpkg-query -W -f='${Version}' golang-github-nats-io-go-nats-dev 2>/dev/null || echo "(not installed)"; }

{
  echo "# jetfan benchmark"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/Mem:/ {print $2}') GiB;"
  echo "$(nats-server --version 2>&1 | head -1) with file storage on the same machine; cnats $(dpkg-query -W -f='${Version}' libnats-dev 2>/dev/null);"
  echo "node $(node --version), npm nats $(node -p 'require("./bench/node/node_modules/nats/package.json").version' 2>/dev/null)."
  echo "End to end: from the moment the reader can read (messages already in the stream) until the server shows"
  echo "num_pending = 0 and num_ack_pending = 0. A: direct cnats pull reader acking itself. G: nats.go $(g_version) reader,"
  echo "PullSubscribe bound to the durable, Fetch(2048) in a loop, +ACK each (bench/go/reader.go)$(g_present || echo "; skipped in this run"). B: Node, consume() and"
  echo "in-process dispatch (the in-process single reader in nats.js, the design jetfan replaces). C: jetfan and"
  echo "handler processes on the C++ client."
  echo "Each throughput row is the median of $reps runs; ratios are within this run. Command: \`bench/run.sh\`."
  echo "Messages a run drains, published once per size (the consumer rewound between runs):"
  echo "$(awk -F, 'NR > 1 && !seen[$5]++ {printf "%s%s B: %s", (n++ ? ", " : ""), $5, $6}' "$csv")."
  echo
  echo "| case | size | msg/s | MB/s | C/A | C/G | C/B | jetfan CPU s per 1M msgs | jetfan peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, '{ca = ($2 == "C") ? $12 : ""; cb = ($2 == "C") ? $13 : ""; cg = ($2 == "C") ? $14 : "";
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $5, $8, $9, ca, cg, cb, $10, $11}' "$ratios"
  echo
  echo "Publish-to-handler latency, 128 B at the paced rate (µs):"
  echo
  echo "| stack | p50 | p99 | p99.9 | samples |"
  echo "|---|---:|---:|---:|---:|"
  for stack in A B C; do echo "| $stack | $(lat $stack 2) | $(lat $stack 3) | $(lat $stack 4) | $(lat $stack 5) |"; done
  echo
  echo "(median over rounds of each percentile)"
  echo
  clients_table "$out"
  echo
  echo "## Targets"
  echo
  echo "Ratios: the median over $rounds interleaved rounds of C's rate over A's (or G's) in the same round, on the same"
  echo "messages (range in brackets); each run drains $(awk -F, '$2 == 128 {print $6; exit}' "$out/rounds.csv") messages at 128 B,"
  echo "$(awk -F, '$2 == 256 {print $6; exit}' "$out/rounds.csv") at 256 B and"
  echo "$(awk -F, '$2 == 16384 {print $6; exit}' "$out/rounds.csv") at 16 KiB (at least 20 × max_held in a full run), timed from the reader's start. Latency: median of the"
  echo "rounds' C − A, $(awk -F, 'NR > 1 {print $5; exit}' "$out/latency.csv") messages per round published at $lat_rate msg/s. CPU: the \"Per delivery\" section's"
  echo "figures (user + system from /proc, $(awk -F, 'NR == 2 {print $4}' "$out/delivery.csv" 2>/dev/null) messages a run)."
  echo
  added_p50=$(added 2); added_p99=$(added 3); read -r peak peak_case <<< "$(peak_rss_all)"
  echo "| case | target | measured | |"
  echo "|---|---|---|---|"
  ratio_row "128 B, 1 handler" 128 C1 0.95
  ratio_row "128 B, 4 all-matching" 128 C4 0.85
  ratio_row "128 B, 8 all-matching" 128 C8 0.70
  ratio_row "128 B, 1 handler, 100 patterns" 128 Cp100 0.90
  ratio_row "16 KiB, 4 all-matching" 16384 C4 0.70
  ratio_row "16 KiB, 8 all-matching" 16384 C8 0.50
  if g_present; then
    echo "| G, the nats.go reader, against A (the second ceiling) | — | $(round_ratio 128 G A)× ($(round_range 128 G A)) at 128 B, $(round_ratio 16384 G A)× at 16 KiB | |"
    ratio_row "256 B, 1 handler" 256 C1 0.95 G
    ratio_row "128 B, 1 handler" 128 C1 0.95 G
    ratio_row "128 B, 4 all-matching" 128 C4 0.5 G
    ratio_row "128 B, 8 all-matching" 128 C8 0.3 G
    ratio_row "16 KiB, 4 all-matching" 16384 C4 0.5 G
  else
    echo "| against G (nats.go reader) | | skipped: G was not built in this run | |"
  fi
  if [ -f "$out/delivery.csv" ]; then
    delivery_row "jetfan CPU per delivery, 8 all-matching handlers, 128 B" cpp 8 8 0.7
    delivery_row "C++ client CPU per message (1 handler)" cpp 1 9 0.7
    delivery_row "TypeScript client CPU per message (1 handler)" ts 1 9 2
    delivery_row "Python client CPU per message (1 handler)" python 1 9 3
  fi
  echo "| peak RSS, every case, default settings | ≤ 64 MiB | $peak MiB ($peak_case) | $(met "$peak" le 64) |"
  echo "| RSS with $held_n × 1 KiB held | ≤ 24 MiB | $held_rss MiB (peak $held_peak) | $(met "$held_rss" le 24) |"
  echo "| added latency at $lat_rate msg/s (C − A, same round) | p50 ≤ 50 µs, p99 ≤ 500 µs | p50 $added_p50 µs, p99 $added_p99 µs | $(met "$added_p50" le 50), $(met "$added_p99" le 500) |"
  echo "| instructions per message inside jetfan (callgrind), 2 patterns | ≤ 6,000 | $(ipm 2 2) ($(ipm 2 3) without lock acquisition) | $(met "$(ipm 2 2)" le 6000) |"
  echo "| the same, 100 patterns | as 2 patterns | $(ipm 100 2) ($(ipm 100 3) without lock acquisition) | |"
  echo "| 128 B, 1 handler, against B (the in-process design) | ≥ 2.5× B | $(round_ratio 128 C1 B)× ($(round_range 128 C1 B)); A itself is $(round_ratio 128 A B)× B | $(met "$(round_ratio 128 C1 B)" ge 2.5) |"
  echo
  echo "![msg/s by case, 128 B](../bench/results/bench.png)"
  if [ -f "$out/sweep.csv" ]; then echo; sweep_section "$out"; fi
  if [ -f "$out/delivery.csv" ]; then echo; delivery_section "$out"; fi
} > "$md"

# The plot: msg/s per case at 128 B.
awk -F, '$5 == 128 {gsub(/"/, "", $1); printf "\"%s\" %s\n", $1, $8}' "$ratios" > "$out/plot.dat"
gnuplot <<GP
set terminal pngcairo size 1000,520 font "sans,10"
set output "$out/bench.png"
set title "jetfan vs direct reader (A) and in-process dispatch (B): 128 B messages, drained"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set ylabel "messages per second"
set xtics rotate by -35 scale 0
set grid ytics
set yrange [0:*]
unset key
plot "$out/plot.dat" using 2:xtic(1) linecolor rgb "#3b6ea8"
GP
if [ -f "$out/sweep.csv" ]; then sweep_plot "$out"; fi
if [ -f "$out/delivery.csv" ]; then delivery_plot "$out"; fi
cat "$md"
