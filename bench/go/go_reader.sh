# shellcheck shell=bash disable=SC2154,SC2034  # tool, url, work, mode ... are run.sh's; sec, cpu, rss are for it
# G, the nats.go reader (bench/go/reader.go), sourced by bench/run.sh: built from Debian 12's packages,
# golang-go and golang-github-nats-io-go-nats-dev (nats.go 1.22.1), offline in GOPATH mode from
# /usr/share/gocode. go_reader_build installs them if they are missing and it may (root; not in the
# smoke run, which uses them only if they are there), builds the
# reader and sets go_reader to its path; if it cannot, it says why on one line and leaves go_reader
# empty, and every G case of the run is skipped.

go_reader_packages=(golang-go golang-github-nats-io-go-nats-dev)
go_reader_batch=2048  # what one Fetch asks for

go_reader_build() {  # OUT_DIR: sets go_reader
  local dir=$1 missing=() p
  go_reader=""
  for p in "${go_reader_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    # The smoke run (part of the test command) proves the harness, not the ceiling: it builds G when
    # the packages are there and does not spend minutes installing and compiling a Go toolchain's worth.
    if [ "$mode" = smoke ]; then  # --ratios and --sweep are against G: they install
      echo "== G (nats.go reader) skipped in smoke mode: ${missing[*]} not installed (the full run installs them)"
      return 0
    fi
    if [ "$(id -u)" -ne 0 ] || ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" > "$work/go-install.log" 2>&1; then
      echo "== G (nats.go reader) skipped: ${missing[*]} not installed and not installable here$([ "$(id -u)" -ne 0 ] && echo " (needs root)")"
      return 0
    fi
  fi
  mkdir -p "$dir"
  # GOPATH mode, offline: the Debian packages' sources are the whole GOPATH; nothing is fetched.
  if ! (cd "$root/bench/go" && GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS='' \
        GOCACHE="$dir/go-cache" go build -o "$dir/jetfan-bench-go" reader.go) > "$work/go-build.log" 2>&1; then
    echo "== G (nats.go reader) skipped: it did not build: $(head -c 300 "$work/go-build.log" | tr '\n' ' ')"
    return 0
  fi
  go_reader=$dir/jetfan-bench-go
}

drain_go() {  # N SIZE: G reads the N messages waiting for the consumer (run.sh's drain_reader)
  # A Fetch for more than the consumer's MaxAckPending stalled G here (nats-server 2.9.10, MaxAckPending 1000).
  local batch=$go_reader_batch; [ "${max_ack_pending:-$batch}" -lt "$batch" ] && batch=$max_ack_pending
  # nats.go drops a subscription's messages as a slow consumer past 64 MiB pending, and Fetch(2048) of
  # 64 KiB is 128 MiB; G then waits out AckWait. Cap one Fetch at 32 MiB, jetfan's max_held_bytes.
  local by_bytes=$(( (32 << 20) / ${2:-1} )); [ "$by_bytes" -lt 1 ] && by_bytes=1
  [ "$by_bytes" -lt "$batch" ] && batch=$by_bytes
  drain_reader go "$go_reader" "$url" BENCH bench_durable "$1" "$work/go.lat" "$batch"
}

run_go() {  # size
  messages_ready "$1"
  drain_go "${count[$1]}" "$1"
}
