package natsrelay

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// A steady stream of small batches allocates, per batch, what decoding
// its record takes and what NATS itself takes to move its messages (the
// batch and its share of the receiver's acks and grants), each counted in
// this test, and less than half an allocation more (#30): the sender's
// buffers, messages and waits, the ack and credit frames are reused. A
// per-message allocation on the relay's hot path fails it. Counts, not
// times: load changes how many control frames go, and they are counted.
func TestSteadyStreamAllocations(t *testing.T) {
	const n = 3000
	rec := numbered(memory.DefaultAllocator, 1, 300) // ~5 KB on the wire
	defer rec.Release()

	// What decoding the batch takes, as the receiver decodes it (before
	// the server runs: its goroutines would count too).
	enc := frame.NewEncoder(memory.DefaultAllocator)
	var first, steady bytes.Buffer
	if _, err := enc.Encode(&first, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Encode(&steady, rec); err != nil {
		t.Fatal(err)
	}
	dec := frame.NewDecoder(memory.DefaultAllocator)
	if got, err := dec.Decode(first.Bytes(), true); err == nil {
		got.Release()
	} else {
		t.Fatal(err)
	}
	decode := testing.AllocsPerRun(1000, func() {
		if got, err := dec.Decode(steady.Bytes(), false); err == nil {
			got.Release()
		}
	})
	dec.Close()

	// What NATS takes per message of that size, publisher to callback.
	s := startServer(t, 0)
	pub, sub := connect(t, s), connect(t, s)
	var got atomic.Int64
	rs, err := sub.Subscribe("raw", func(*nats.Msg) { got.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, steady.Len()+64)
	raw := mallocsPer(n, func() {
		for i := 0; i < n; i++ {
			if err := pub.Publish("raw", payload); err != nil {
				t.Fatal(err)
			}
			for int64(i)-got.Load() >= 32 { // the relay's window
				runtime.Gosched()
			}
		}
		waitFor(t, 20*time.Second, func() bool { return got.Load() == n })
	})
	_ = rs.Unsubscribe()

	// The relay, after a warm-up that fills its free lists.
	a, b := New(connect(t, s), Options{ProbeEvery: -1}), New(connect(t, s), Options{ProbeEvery: -1})
	var control atomic.Int64 // what the receiver publishes: acks and grants
	b.drop = func([]byte) bool { control.Add(1); return false }
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snd, rcv := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 1})
	defer snd.Close()
	defer rcv.Close()
	var received atomic.Int64
	go func() {
		for {
			m, err := rcv.Recv(ctx)
			if err != nil {
				return
			}
			m.Record.Release()
			received.Add(1)
		}
	}()
	send := func(k int) {
		for i := 0; i < k; i++ {
			if err := snd.SendData(ctx, 1, rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(500)
	waitFor(t, 20*time.Second, func() bool { return received.Load() == 500 })
	control.Store(0)
	relayed := mallocsPer(n, func() {
		send(n)
		waitFor(t, 20*time.Second, func() bool { return received.Load() == 500+n })
	})
	perBatch := float64(control.Load()) / n
	nats := raw * (1 + perBatch)
	t.Logf("allocations per batch: relay %.2f; NATS %.2f (%.2f per message, %.3f control frames per batch); decoding %.0f", relayed, nats, raw, perBatch, decode)
	if extra := relayed - nats - decode; extra >= 0.5 {
		t.Errorf("the relay allocates %.2f times per batch beyond NATS's %.2f and decoding's %.0f: want less than half", extra, nats, decode)
	}
}

// mallocsPer runs f and returns the process's allocations per unit of n.
func mallocsPer(n int, f func()) float64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n)
}
