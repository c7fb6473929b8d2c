// The nats.go reader (G), a second ceiling beside the cnats one (A): the way a Go service reads a
// durable pull consumer with nats.go's own API, Fetch in a loop, an explicit +ACK for each message,
// without the hop to a handler. bench/run.sh builds it from Debian 12's golang-go and
// golang-github-nats-io-go-nats-dev (nats.go 1.22.1) in GOPATH mode, offline.
//
//	jetfan-bench-go URL STREAM DURABLE COUNT LATENCY_FILE [BATCH]
//
// Binds to the durable (never creates it), fetches BATCH (default 2048) at a time and acks each
// message as it takes it; ends once COUNT messages are acked and flushed, or on SIGTERM/SIGINT.
// Prints ready_ns=<CLOCK_MONOTONIC ns when it could first receive>, as jetfan-bench's readers do, and
// at the end writes one publish-to-receipt latency in microseconds per line to LATENCY_FILE (the
// payload starts with its publish time, CLOCK_MONOTONIC ns). Prints received=<count> when done.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/sys/unix"
)

func nowNs() uint64 {
	var t unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &t); err != nil {
		return 0
	}
	return uint64(t.Sec)*1_000_000_000 + uint64(t.Nsec)
}

// latencyMicros reads the publish time at the start of data; 0 and false if there is none.
func latencyMicros(data []byte, now uint64) (uint32, bool) {
	var sent uint64
	for _, c := range data {
		if c < '0' || c > '9' {
			break
		}
		sent = sent*10 + uint64(c-'0')
	}
	if sent == 0 || sent >= now {
		return 0, false
	}
	return uint32((now - sent) / 1000), true
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "jetfan-bench-go: %s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 6 && len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: jetfan-bench-go URL STREAM DURABLE COUNT LATENCY_FILE [BATCH]")
		os.Exit(64)
	}
	url, stream, durable, latencyFile := os.Args[1], os.Args[2], os.Args[3], os.Args[5]
	count, err := strconv.ParseInt(os.Args[4], 10, 64)
	if err != nil || count < 0 {
		fail("COUNT", fmt.Errorf("not a count: %q", os.Args[4]))
	}
	batch := 2048
	if len(os.Args) == 7 {
		if batch, err = strconv.Atoi(os.Args[6]); err != nil || batch < 1 {
			fail("BATCH", fmt.Errorf("not a batch size: %q", os.Args[6]))
		}
	}

	// Fetch waits at most a second for its batch, so a stop is noticed within one.
	var stopping atomic.Bool
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; stopping.Store(true) }()

	nc, err := nats.Connect(url)
	if err != nil {
		fail("connect", err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		fail("jetstream", err)
	}
	sub, err := js.PullSubscribe("", durable, nats.Bind(stream, durable))
	if err != nil {
		fail("bind to the durable", err)
	}
	fmt.Printf("ready_ns=%d\n", nowNs())

	latencies := make([]uint32, 0, count)
	var received int64
	for received < count && !stopping.Load() {
		msgs, err := sub.Fetch(batch, nats.MaxWait(time.Second))
		if err != nil && !errors.Is(err, nats.ErrTimeout) {
			fail("fetch", err)
		}
		for _, m := range msgs {
			if l, ok := latencyMicros(m.Data, nowNs()); ok {
				latencies = append(latencies, l)
			}
			if err := m.Ack(); err != nil {
				fail("ack", err)
			}
			received++
		}
	}
	if err := nc.Flush(); err != nil {
		fail("flush the acks", err)
	}

	out, err := os.Create(latencyFile)
	if err != nil {
		fail("latency file", err)
	}
	w := bufio.NewWriter(out)
	for _, l := range latencies {
		fmt.Fprintln(w, l)
	}
	if err := w.Flush(); err != nil {
		fail("latency file", err)
	}
	out.Close()
	fmt.Printf("received=%d\n", received)
}
