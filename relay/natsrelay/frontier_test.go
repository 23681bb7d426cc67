package natsrelay

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
)

// TestFrontierRidesOnTheBatch: SendDataThen puts the frontier on the
// batch's own frame, also when the batch is cut into chunks; the first
// one goes apart (a progress message alone, the probe of the payload-free
// round trip), so the link has a base round trip from its first ack on.
func TestFrontierRidesOnTheBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := startServer(t, 0)
	opts := Options{Config: relay.Config{Allocator: mem, Window: 8}, MaxChunk: 1024, ProbeEvery: time.Hour}
	a, b := New(connect(t, s), opts), New(connect(t, s), opts)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snd, r := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 1})
	rec := bytesRecord(mem, 3000) // 3 chunks of 1 KiB
	defer rec.Release()
	const n = 30
	go func() {
		for e := uint64(1); e <= n; e++ {
			if e == 2 {
				// The probe (the first frontier, alone) is acked once the
				// receiver has caught up: its round trip is the base one.
				for snd.Stats().BaseRTT <= 0 && ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
			}
			if err := snd.(relay.FrontierSender).SendDataThen(ctx, e, 0, rec, e+1); err != nil {
				t.Error(err)
				return
			}
		}
		if err := snd.Close(); err != nil {
			t.Error(err)
		}
	}()
	type got struct {
		kind     relay.Kind
		epoch    uint64
		frontier uint64
	}
	var msgs []got
	for {
		m, err := r.Recv(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Record != nil {
			if m.Record.NumRows() != 1 {
				t.Errorf("batch %d has %d rows", m.Epoch, m.Record.NumRows())
			}
			m.Record.Release()
		}
		msgs = append(msgs, got{m.Kind, m.Epoch, m.Frontier})
	}
	_ = r.Close()
	want := []got{{relay.KindData, 1, 0}, {relay.KindProgress, 2, 0}}
	for e := uint64(2); e <= n; e++ {
		want = append(want, got{relay.KindData, e, e + 1})
	}
	if len(msgs) != len(want) {
		t.Fatalf("received %d messages, want %d: %v", len(msgs), len(want), msgs)
	}
	for i := range want {
		if msgs[i] != want[i] {
			t.Fatalf("message %d is %+v, want %+v", i, msgs[i], want[i])
		}
	}
	st := snd.Stats()
	// Every batch the same chunks, and one progress message alone.
	if chunks := (st.Frames - 1) / n; st.Batches != n || st.Progress != n || chunks < 3 || st.Frames != chunks*n+1 {
		t.Errorf("sender counted %d batches, %d progress updates, %d frames; want %d, %d, a multiple of %d (3 or more) and 1", st.Batches, st.Progress, st.Frames, n, n, n)
	}
	if snd.Stats().BaseRTT <= 0 {
		t.Error("no base round trip from the probe")
	}
	if rs := r.Stats(); rs.Batches != n || rs.Progress != n {
		t.Errorf("receiver counted %d batches and %d progress updates, want %d and %d", rs.Batches, rs.Progress, n, n)
	}
}
