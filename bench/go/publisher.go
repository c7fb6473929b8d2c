// The nats.go side of bench/publish.sh: a JetStream async publisher (P-G) and the chain a Go service
// writes to react to a message by publishing another (Chain-G), each the way nats.go's own API has
// it, as baselines for publishing through jetfan. Built as bench/go/reader.go is (Debian 12's
// golang-go and golang-github-nats-io-go-nats-dev, nats.go 1.22.1, GOPATH mode, offline), on its
// own: `go build publisher.go`.
//
//	jetfan-publish-go publish URL PREFIX COUNT SIZE WINDOW
//	jetfan-publish-go chain URL STREAM DURABLE STRIP OUT_PREFIX COUNT WINDOW BATCH
//
// publish: js.PublishAsync of COUNT messages of SIZE bytes to PREFIX k0..k7 in turn, at most WINDOW
// unacknowledged (PublishAsyncMaxPending), then waits for PublishAsyncComplete. Prints
// ready_ns=<CLOCK_MONOTONIC ns, connected>, done_ns=<every ack in> and errors=<publishes refused>;
// exits 1 if there was one.
//
// chain: binds to the durable pull consumer (never creates it), Fetches BATCH at a time and, for each
// message, js.PublishMsgAsync of its payload to OUT_PREFIX<its subject less STRIP> with a Nats-Msg-Id
// made from its stream and sequence (so a redelivery's follow-up is dropped as a duplicate), at most
// WINDOW unacknowledged; a second goroutine acks each input only after its follow-up's publish ack
// (never before the follow-up is stored: acking first could lose it). Ends once COUNT inputs are
// acked and flushed, or on SIGTERM/SIGINT. Prints ready_ns= (bound), done_ns= (the last ack
// flushed), acked=, errors=; exits 1 on any failed publish or ack.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/sys/unix"
)

const keys = 8 // k0..k7, as jetfan-bench publish is given them

func nowNs() uint64 {
	var t unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &t); err != nil {
		return 0
	}
	return uint64(t.Sec)*1_000_000_000 + uint64(t.Nsec)
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "jetfan-publish-go: %s: %v\n", what, err)
	os.Exit(1)
}

func count(what, text string) int64 {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 {
		fail(what, fmt.Errorf("not a count: %q", text))
	}
	return n
}

// jetStream connects and makes a JetStream context whose async publishes have at most window
// unacknowledged. A publish past it waits for an ack (StallWait, given with each publish: a wait on
// a loaded machine is not an error) instead of failing after nats.go's 200 ms.
func jetStream(url string, window int64, failed *atomic.Int64) (*nats.Conn, nats.JetStreamContext) {
	nc, err := nats.Connect(url)
	if err != nil {
		fail("connect", err)
	}
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(int(window)),
		nats.PublishAsyncErrHandler(func(_ nats.JetStream, _ *nats.Msg, err error) {
			if failed.Add(1) <= 5 {
				fmt.Fprintf(os.Stderr, "jetfan-publish-go: publish: %v\n", err)
			}
		}))
	if err != nil {
		fail("jetstream", err)
	}
	return nc, js
}

const stallWait = 10 * time.Second

func publish(args []string) {
	url, prefix := args[0], args[1]
	n, size, window := count("COUNT", args[2]), count("SIZE", args[3]), count("WINDOW", args[4])
	var errs atomic.Int64
	nc, js := jetStream(url, window, &errs)
	defer nc.Close()
	subjects := make([]string, keys)
	for k := range subjects {
		subjects[k] = fmt.Sprintf("%sk%d", prefix, k)
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = 'x'
	}
	fmt.Printf("ready_ns=%d\n", nowNs())
	for i := int64(0); i < n; i++ {
		if _, err := js.PublishAsync(subjects[i%keys], payload, nats.StallWait(stallWait)); err != nil {
			fail("publish", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		fail("publish", errors.New("not every publish acknowledged within 2 minutes"))
	}
	fmt.Printf("done_ns=%d\nerrors=%d\n", nowNs(), errs.Load())
	if errs.Load() > 0 {
		os.Exit(1)
	}
}

// One input whose follow-up was published: acked once the follow-up is stored.
type pending struct {
	input *nats.Msg
	ack   nats.PubAckFuture
}

func chain(args []string) {
	url, stream, durable, strip, outPrefix := args[0], args[1], args[2], args[3], args[4]
	n, window, batch := count("COUNT", args[5]), count("WINDOW", args[6]), count("BATCH", args[7])

	// Fetch waits at most a second for its batch, so a stop is noticed within one.
	var stopping atomic.Bool
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; stopping.Store(true) }()

	var errs atomic.Int64
	nc, js := jetStream(url, window, &errs)
	defer nc.Close()
	sub, err := js.PullSubscribe("", durable, nats.Bind(stream, durable))
	if err != nil {
		fail("bind to the durable", err)
	}
	fmt.Printf("ready_ns=%d\n", nowNs())

	// The acker takes the inputs in the order their follow-ups were published; nats.go's window
	// (PublishAsyncMaxPending) bounds the follow-ups in flight, a fetched batch the inputs queued here.
	queue := make(chan pending, 2*batch)
	acked := make(chan int64)
	go func() {
		var done int64
		for p := range queue {
			select {
			case <-p.ack.Ok():
			case err := <-p.ack.Err():
				fail("follow-up of "+p.input.Subject, err)
			}
			if err := p.input.Ack(); err != nil {
				fail("ack", err)
			}
			done++
		}
		acked <- done
	}()

	var taken int64
	for taken < n && !stopping.Load() {
		want := batch
		if n-taken < want {
			want = n - taken
		}
		msgs, err := sub.Fetch(int(want), nats.MaxWait(time.Second))
		if err != nil && !errors.Is(err, nats.ErrTimeout) {
			fail("fetch", err)
		}
		for _, m := range msgs {
			meta, err := m.Metadata()
			if err != nil {
				fail("metadata", err)
			}
			out := nats.NewMsg(outPrefix + strings.TrimPrefix(m.Subject, strip))
			out.Data = m.Data
			ack, err := js.PublishMsgAsync(out,
				nats.MsgId(fmt.Sprintf("go:%s:%s:%d:0", meta.Stream, meta.Consumer, meta.Sequence.Stream)),
				nats.StallWait(stallWait))
			if err != nil {
				fail("publish", err)
			}
			queue <- pending{m, ack}
			taken++
		}
	}
	close(queue)
	done := <-acked
	if err := nc.Flush(); err != nil {
		fail("flush the acks", err)
	}
	fmt.Printf("done_ns=%d\nacked=%d\nerrors=%d\n", nowNs(), done, errs.Load())
	if errs.Load() > 0 || done < n {
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) == 7 && os.Args[1] == "publish" {
		publish(os.Args[2:])
	} else if len(os.Args) == 10 && os.Args[1] == "chain" {
		chain(os.Args[2:])
	} else {
		fmt.Fprintln(os.Stderr, "usage: jetfan-publish-go publish URL PREFIX COUNT SIZE WINDOW\n"+
			"       jetfan-publish-go chain URL STREAM DURABLE STRIP OUT_PREFIX COUNT WINDOW BATCH")
		os.Exit(64)
	}
}
