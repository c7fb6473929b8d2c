# shellcheck shell=bash disable=SC2154  # tool, url, work, out, pids, handler_cmd ... are run.sh's
# The cost of one delivery, sourced by bench/run.sh after its helpers: jetfan with $pd_handlers
# handlers, all matching every message ("#"), at 128 B, on each client (C++, TypeScript, Python).
#
# Timed rounds (per_delivery_rounds): each point drains $pd_n messages (the consumer rewound between
# runs, as the sweep) and takes, from /proc, the user+system CPU of
#   jetfan                 over the whole run, per delivery (messages × handlers);
#   the handler processes  from the moment each printed ready_ns, per message each handled;
#   the nats-server        over the run (rewind and the watcher's polls included), per message.
# jetfan's pull batch is its default (consumer.batch unset; JETFAN_PULL_BATCH sets it), and each run
# reports the one it used, from /metrics (jetfan_pull_batch).
# /proc counts CPU in clock ticks (10 ms), so a run of N messages resolves 10 ms / N per message:
# 0.033 µs at the full run's 300,000; smoke runs' figures are coarse. 300,000 and not fewer: node's
# JIT warms up after ready_ns, about 75 ms of CPU here, which at 100,000 messages read as 0.75 µs more
# per message for the TypeScript client (2.2 µs against 1.45 µs at 300,000).
#
# Counting round (per_delivery_syscalls): strace traces every system call of every jetfan thread over
# the same drain with the C++ handlers, in a separate run because strace slows the traced process
# down many times (and so lets more pile up for each call: its MSGs per writev and ACKs per read are
# upper bounds of what an untraced jetfan does at full speed). -yy names each call's socket, so the
# calls on handler connections (Unix) and on the server connection (TCP) are told apart:
#   syscalls per delivery  all system calls / deliveries
#   MSGs per writev        deliveries / writes to handler sockets (sendmsg, send, write, writev; a
#                          write that would block, EAGAIN, is not one)
#   ACKs per read          deliveries / reads of handler sockets (recv, recvmsg, read; EAGAIN is not one)
#   ACKs per server write  messages / writes to the server (pull requests and PINGs among them, so a
#                          lower bound of the +ACKs one write carries)
# The timed rounds also read jetfan's own counters from /metrics at the end of each run, untraced:
#   MSGs per write         jetfan_handler_deliveries_total / jetfan_handler_socket_writes_total
#   ACKs per read          jetfan_handler_acks_total / jetfan_handler_socket_reads_total (all handlers)
# strace is a Debian package (bench/run.sh installs it with the other tools); without it, or if ptrace is not allowed, the
# round says so and leaves its columns empty.
#
# Writes $out/delivery.csv and $out/delivery_syscalls.csv; bench/report.sh --delivery draws
# delivery.png and the "Per delivery" section of bench.md from them.

pd_size=128

pd_jetfan() {  # HANDLERS [WRAPPER...]: rewinds the consumer and starts jetfan (under WRAPPER) with HANDLERS
  # all-matching handlers (run.sh's all_handlers sets the caller's spec and names) and /metrics on
  # a free port, pd_port
  all_handlers "$1"; shift
  "$tool" rewind "$url" BENCH bench_durable "$sweep_ack_pending"
  pd_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  jetfan_config "$spec" "metrics:"$'\n'"  listen: \"127.0.0.1:$pd_port\""$'\n'
  start_jetfan "$names" "$@"
}

pd_run() {  # CLIENT HANDLERS N: one timed run; appends a row to delivery.csv
  local client=$1 h=$2 n=$3 server=${pids[0]} s0 s1 hcpu=0 name i=0 jcpu t1 spec names
  handler_on "$client"
  s0=$(cpu_seconds "$server")
  pd_jetfan "$h"
  local -a h0=()
  for name in $names; do
    wait_file "$work/handler-$name.out" ready_ns
    h0+=("$(cpu_seconds "${handler_pids[i]}")")
    i=$((i + 1))
  done
  "$tool" watch "$url" BENCH bench_durable 300 > "$work/watch.out"
  t1=$(value settled_ns "$work/watch.out")
  jcpu=$(cpu_seconds "$jetfan_pid"); s1=$(cpu_seconds "$server")
  local io
  io=$(pd_socket_io "$pd_port")
  for i in "${!handler_pids[@]}"; do
    hcpu=$(awk -v a="$hcpu" -v b="$(cpu_seconds "${handler_pids[i]}")" -v c="${h0[i]}" 'BEGIN {print a + b - c}')
  done
  stop_all "$jetfan_pid" "${handler_pids[@]}"
  handler_on cpp
  awk -v c="$client" -v h="$h" -v s="$pd_size" -v n="$n" -v j="$jcpu" -v hc="$hcpu" -v sv="$(awk -v a="$s0" -v b="$s1" 'BEGIN {print b - a}')" \
      -v sec="$(elapsed "$t0" "$t1")" -v io="$io" 'BEGIN {d = n * h
    split(io, f, ","); printf "%s,%d,%d,%d,%d,%s,%.4f,%.3f,%.3f,%.3f,%s,%s\n", c, h, s, n, d, f[1], sec, j / d * 1e6, hc / d * 1e6, sv / n * 1e6, f[2], f[3]}' >> "$out/delivery.csv"
}

pd_socket_io() {  # PORT: "pull batch,MSGs per write,ACKs per read" from jetfan's /metrics, summed over handlers; ",," if unread
  python3 - "$1" << 'EOF_PY' || echo ",,"
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
sums = {}
batch = ""
for line in text.splitlines():
    if line.startswith("jetfan_pull_batch "):
        batch = line.split()[1]
    if line.startswith("jetfan_handler_"):
        name = line.split("{", 1)[0]
        sums[name] = sums.get(name, 0) + float(line.rsplit(" ", 1)[1])
writes = sums.get("jetfan_handler_socket_writes_total", 0)
reads = sums.get("jetfan_handler_socket_reads_total", 0)
per_write = sums.get("jetfan_handler_deliveries_total", 0) / writes if writes else 0
per_read = sums.get("jetfan_handler_acks_total", 0) / reads if reads else 0
print(f"{batch},{per_write:.1f},{per_read:.1f}")
EOF_PY
}

per_delivery_rounds() {  # N: every client at every handler count, round by round
  local n=$1 client h
  echo "client,handlers,size,messages,deliveries,pull_batch,seconds,jetfan_cpu_us_per_delivery,handler_cpu_us_per_message,server_cpu_us_per_message,msgs_per_write,acks_per_read" > "$out/delivery.csv"
  fresh_stream "$sweep_ack_pending"; prepublish "$n" "$pd_size" "$(keys_for 4)"
  for h in "${pd_handlers[@]}"; do
    for client in "${pd_clients[@]}"; do
      pd_run "$client" "$h" "$n"
      awk -F, 'END {printf "  %-6s %2d h: jetfan %s us/delivery, handler %s us/message, nats-server %s us/message, %s MSGs/write, %s ACKs/read\n", $1, $2, $8, $9, $10, $11, $12}' "$out/delivery.csv"
    done
  done
}

# pd_count FILE: "syscalls handler_writes handler_reads server_writes server_reads" from strace -f -C -yy's
# output: every call's line (with -f: "PID call(FD<TYPE:[...]>, ...) = RESULT") and the summary table.
pd_count() {
  awk '$NF == "total" {total = $4}
    / = -1 EAGAIN/ {next}
    $2 ~ /^(sendmsg|sendto|write|writev)\([0-9]+<UNIX-STREAM:\[[0-9]+->/ {hw++}
    $2 ~ /^(recvfrom|recvmsg|read|readv)\([0-9]+<UNIX-STREAM:\[[0-9]+->/ {hr++}
    $2 ~ /^(sendmsg|sendto|write|writev)\([0-9]+<TCP:/ {sw++}
    $2 ~ /^(recvfrom|recvmsg|read|readv)\([0-9]+<TCP:/ {sr++}
    END {printf "%d %d %d %d %d\n", total, hw, hr, sw, sr}' "$1"
}

per_delivery_syscalls() {  # N: one counted run per handler count, C++ handlers
  local n=$1 h traced calls hw hr sw sr spec names
  echo "handlers,messages,deliveries,syscalls,handler_writes,handler_reads,server_writes,server_reads,syscalls_per_delivery,msgs_per_writev,acks_per_read,acks_per_server_write" > "$out/delivery_syscalls.csv"
  if ! command -v strace > /dev/null; then echo "  (system calls skipped: strace is not installed; apt-get install strace)"; return 0; fi
  if ! strace -o /dev/null true 2> "$work/strace.err"; then
    echo "  (system calls skipped: strace cannot trace here: $(head -c 200 "$work/strace.err"))"; return 0
  fi
  for h in "${pd_handlers[@]}"; do
    # jetfan starts under strace: it reads ahead of its handlers, so its reads from the server come
    # before the first handler connects.
    pd_jetfan "$h" strace -f -C -yy -o "$work/strace.txt"
    "$tool" watch "$url" BENCH bench_durable 600 > /dev/null
    # jetfan_pid is strace's: jetfan (its child) is stopped as always, and strace writes its table
    # when jetfan has gone.
    traced=$(awk '{print $1}' "/proc/$jetfan_pid/task/$jetfan_pid/children")
    stop_all "$traced"
    wait "$jetfan_pid" 2>/dev/null || true
    stop_all "${handler_pids[@]}"
    read -r calls hw hr sw sr <<< "$(pd_count "$work/strace.txt")"
    awk -v h="$h" -v n="$n" -v t="$calls" -v hw="$hw" -v hr="$hr" -v sw="$sw" -v sr="$sr" '
      function per(a, b) {return b > 0 ? sprintf("%.2f", a / b) : ""}
      BEGIN {d = n * h; printf "%d,%d,%d,%d,%d,%d,%d,%d,%s,%s,%s,%s\n", h, n, d, t, hw, hr, sw, sr, per(t, d), per(d, hw), per(d, hr), per(n, sw)}' >> "$out/delivery_syscalls.csv"
    awk -F, 'END {printf "  %2d h: %s system calls per delivery, %s MSGs per writev, %s ACKs per read, %s +ACKs per server write\n", $1, $9, $10, $11, $12}' "$out/delivery_syscalls.csv"
  done
}

per_delivery() {  # the whole section: timed rounds, then the counting round
  echo "== per delivery: ${pd_handlers[*]} all-matching handlers at $pd_size B on ${pd_clients[*]}, $pd_n messages a run, pull batch ${JETFAN_PULL_BATCH:-as jetfan sets it}"
  per_delivery_rounds "$pd_n"
  echo "   system calls (strace, C++ handlers, a separate run of $pd_n messages per point)"
  per_delivery_syscalls "$pd_n"
}
