package natsrelay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
)

// Acks are cumulative per burst: a stream sent back to back is
// acknowledged with fewer ack frames than messages (at most half a window
// apart), every message is acknowledged in the end, and a message that
// comes alone is acknowledged at once (its bandwidth sample is as fresh as
// with an ack per message).
func TestAcksAreCumulative(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := startServer(t, 0)
	a := New(connect(t, s), Options{Config: relay.Config{Allocator: mem, Window: 32}})
	b := New(connect(t, s), Options{Config: relay.Config{Allocator: mem, Window: 32}})
	defer a.Close()
	defer b.Close()
	link := relay.LinkID{Query: "q", Edge: 1}
	_, credit := a.Subjects(link)
	var acks atomic.Int64
	watch := connect(t, s)
	sub, err := watch.Subscribe(credit, func(m *nats.Msg) {
		if h, _, err := frame.Decode(m.Data); err == nil && h.Kind == frame.KindAck {
			acks.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snd, r := openLink(ctx, t, a, b, link)
	defer snd.Close()
	defer r.Close()
	go drainReceiver(ctx, r)
	rec := bytesRecord(mem, 64)
	defer rec.Release()
	const n = 2000
	for i := 0; i < n; i++ {
		if err := snd.SendData(ctx, 1, rec); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return snd.Stats().Acks >= n })
	burst := acks.Load()
	t.Logf("%d messages back to back: %d ack frames", n, burst)
	if burst >= n || burst < n/16 {
		t.Errorf("%d messages back to back took %d ack frames: want fewer than one a message, at least one per half window", n, burst)
	}
	// One message alone: its ack comes at once.
	before, at := acks.Load(), time.Now()
	if err := snd.SendData(ctx, 1, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, func() bool { return snd.Stats().Acks >= n+1 })
	if acks.Load() != before+1 || time.Since(at) > 500*time.Millisecond {
		t.Errorf("a message alone: %d ack frames after %v", acks.Load()-before, time.Since(at))
	}
}
