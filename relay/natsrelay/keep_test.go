package natsrelay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// TestUnackedBatchesKeepTheirRecords: while its batches wait for their
// acks, a sender holds their records (retained), not a copy of each
// frame: after the producer let go of them, the sending query's memory
// holds exactly the records it made, no more, and nothing once the acks
// came. (A batch with the schema is kept as its bytes, and charged.)
func TestUnackedBatchesKeepTheirRecords(t *testing.T) {
	s := startServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	budget := dataflow.NewMemory("query q on worker w", 64<<20, nil)
	mem := budget.Allocator(memory.NewGoAllocator())
	a := New(connect(t, s), Options{Config: relay.Config{Window: 8, Allocator: mem}})
	b := New(connect(t, s), Options{Config: relay.Config{Window: 8}})
	defer a.Close()
	defer b.Close()
	// While hold is set the receiver's acks are lost (grants that
	// acknowledge too), so the sender keeps what it sent.
	var hold atomic.Bool
	b.drop = func(p []byte) bool {
		h, _, err := frame.Decode(p)
		return err == nil && hold.Load() && (h.Kind == frame.KindAck || h.Kind == frame.KindCredit) && h.Seq > 0
	}
	snd, r := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 1})
	defer r.Close()
	recv := func(n int) {
		t.Helper()
		for range n {
			m, err := r.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m.Record.Release()
		}
	}
	first := numbered(mem, 1, 10)
	err := snd.SendData(ctx, 0, first)
	first.Release()
	if err != nil {
		t.Fatal(err)
	}
	recv(1)
	for snd.Stats().UnackedBytes != 0 {
		if ctx.Err() != nil {
			t.Fatal("the batch with the schema was never acknowledged")
		}
		time.Sleep(time.Millisecond)
	}
	hold.Store(true)
	recs := make([]arrow.Record, 7) // the rest of the window
	for i := range recs {
		recs[i] = numbered(mem, i+2, 10)
	}
	made := budget.Used()
	for _, rec := range recs {
		if err := snd.SendData(ctx, 0, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if u := snd.Stats().UnackedBytes; u == 0 {
		t.Fatal("nothing waits for an ack: the test lost no acks")
	}
	if u := budget.Used(); u != made {
		t.Fatalf("the sending query holds %d bytes with 7 batches unacknowledged, want %d: the records it made and no copies", u, made)
	}
	hold.Store(false)
	recv(len(recs))
	if err := snd.Close(); err != nil {
		t.Fatal(err)
	}
	if u := budget.Used(); u != 0 {
		t.Fatalf("the sending query still holds %d bytes once every batch is acknowledged", u)
	}
}

// TestKeptRecordSentAgainWithItsFrontier: a batch kept as its record goes
// out again, when its first frame is lost, encoded as it was the first
// time, with the frontier that rode on it.
func TestKeptRecordSentAgainWithItsFrontier(t *testing.T) {
	s := startServer(t, 0)
	lp := newLinkPair(t, s, 20*time.Second, Options{Config: relay.Config{Window: 8}, ProbeEvery: -1, AckTimeout: 100 * time.Millisecond, Retry: 20 * time.Millisecond})
	d := &dropper{pick: func(h frame.Header) bool { return h.Kind == frame.KindData && h.Flags&frame.FlagFrontier != 0 }}
	lp.a.drop = d.drop
	snd, r := openLink(lp.ctx, t, lp.a, lp.b, relay.LinkID{Query: "q", Edge: 1})
	defer r.Close()
	fs := snd.(relay.FrontierSender)
	for n := 1; n <= 5; n++ {
		rec := numbered(lp.mem, n, rowsOf(n))
		err := fs.SendDataThen(lp.ctx, 0, 0, rec, uint64(10+n))
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 5; n++ {
		m, err := r.Recv(lp.ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = checkNumbered(m.Record, n)
		m.Record.Release()
		if err != nil {
			t.Fatal(err)
		}
		if m.Frontier != uint64(10+n) {
			t.Fatalf("batch %d came with frontier %d, want %d", n, m.Frontier, 10+n)
		}
	}
	if err := snd.Close(); err != nil {
		t.Fatal(err)
	}
	if d.dropped.Load() < 4 || snd.Stats().Resent == 0 {
		t.Fatalf("%d frames lost, %d messages sent again: the test lost too little", d.dropped.Load(), snd.Stats().Resent)
	}
}
