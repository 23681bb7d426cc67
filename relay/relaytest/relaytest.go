// Package relaytest is the conformance suite every relay backend must pass:
// ordering per sender, no loss or duplication, progress after data,
// backpressure with bounded buffering, large (multi-chunk) batches, many peers,
// clean close, and no leaked Arrow memory. A backend's test calls Run with a
// factory. It imports only relay and the standard testing tools.
package relaytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
)

// Factory returns two transports on one network: the suite opens senders on
// send and receivers on recv (they may be the same value). The factory
// registers their cleanup with t.
type Factory func(t *testing.T, cfg relay.Config) (send, recv relay.Transport)

// Run runs the whole suite against a backend.
func Run(t *testing.T, factory Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"Order", testOrder},
		{"ProgressAfterData", testProgressAfterData},
		{"Backpressure", testBackpressure},
		{"LargeBatches", testLargeBatches},
		{"ManyPeers", testManyPeers},
		{"LateReceiver", testLateReceiver},
		{"SenderClose", testSenderClose},
		{"ReceiverClose", testReceiverClose},
		{"TransportClose", testTransportClose},
		{"BadLinks", testBadLinks},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, factory) })
	}
}

const testTimeout = 15 * time.Second

// setup returns a checked allocator whose leak check runs after the
// transports are closed, a context bounded by the test timeout, and the pair.
func setup(t *testing.T, f Factory, window int) (*memory.CheckedAllocator, context.Context, relay.Transport, relay.Transport) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	s, r := f(t, relay.Config{Window: window, Allocator: mem})
	return mem, ctx, s, r
}

func link(edge, from, to uint32) relay.LinkID {
	return relay.LinkID{Query: "q-test_1", Edge: edge, Sender: from, Receiver: to}
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "sender", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// batch builds the n-th batch of a sender: rows rows whose n column is
// n*1_000_000+i, so any loss, duplication or reordering shows in the values.
func batch(mem memory.Allocator, sender uint32, n, rows int) arrow.Record {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	sb := b.Field(0).(*array.Uint32Builder)
	nb := b.Field(1).(*array.Int64Builder)
	tb := b.Field(2).(*array.StringBuilder)
	sb.Reserve(rows)
	nb.Reserve(rows)
	for i := 0; i < rows; i++ {
		sb.UnsafeAppend(sender)
		nb.UnsafeAppend(int64(n)*1_000_000 + int64(i))
		if i%7 == 3 {
			tb.AppendNull()
		} else {
			tb.Append("v")
		}
	}
	return b.NewRecord()
}

// checkBatch verifies that rec is batch(sender, n, rows).
func checkBatch(rec arrow.Record, sender uint32, n, rows int) error {
	if int(rec.NumRows()) != rows {
		return fmt.Errorf("batch %d of sender %d: %d rows, want %d", n, sender, rec.NumRows(), rows)
	}
	if !rec.Schema().Equal(schema) {
		return fmt.Errorf("batch %d of sender %d: schema %s", n, sender, rec.Schema())
	}
	s := rec.Column(0).(*array.Uint32)
	v := rec.Column(1).(*array.Int64)
	tg := rec.Column(2).(*array.String)
	for i := 0; i < rows; i++ {
		want := int64(n)*1_000_000 + int64(i)
		if s.Value(i) != sender || v.Value(i) != want || tg.IsNull(i) != (i%7 == 3) {
			return fmt.Errorf("batch %d of sender %d row %d: got (%d, %d), want (%d, %d)", n, sender, i, s.Value(i), v.Value(i), sender, want)
		}
	}
	return nil
}

func sendBatches(ctx context.Context, mem memory.Allocator, s relay.Sender, sender uint32, count, rows int) error {
	return sendRange(ctx, mem, s, sender, 0, count, rows)
}

// sendRange sends batches from..to-1 of sender, batch n at epoch n/4.
func sendRange(ctx context.Context, mem memory.Allocator, s relay.Sender, sender uint32, from, to, rows int) error {
	for n := from; n < to; n++ {
		rec := batch(mem, sender, n, rows)
		var err error
		if n%2 == 1 {
			err = s.SendDataAt(ctx, uint64(n/4), ingestOf(n), rec)
		} else {
			err = s.SendData(ctx, uint64(n/4), rec)
		}
		rec.Release()
		if err != nil {
			return fmt.Errorf("send batch %d on %s: %w", n, s.Link(), err)
		}
	}
	return nil
}

// ingestOf is the ingest time batch n is sent with: odd batches carry one
// (SendDataAt), even ones none (SendData), and the receiver must tell them
// apart.
func ingestOf(n int) int64 {
	if n%2 == 0 {
		return 0
	}
	return 1_700_000_000_000_000_000 + int64(n)*1_000_003
}

// recvBatches receives count batches in order, then expects io.EOF if wantEOF.
func recvBatches(ctx context.Context, r relay.Receiver, sender uint32, count, rows int, wantEOF bool) error {
	for n := 0; n < count; n++ {
		m, err := r.Recv(ctx)
		if err != nil {
			return fmt.Errorf("receive batch %d on %s: %w", n, r.Link(), err)
		}
		if m.Kind != relay.KindData {
			return fmt.Errorf("message %d on %s is %s, want data", n, r.Link(), m.Kind)
		}
		err = checkBatch(m.Record, sender, n, rows)
		m.Record.Release()
		if err != nil {
			return err
		}
		if m.Seq != uint64(n+1) || m.Epoch != uint64(n/4) || m.Ingest != ingestOf(n) {
			return fmt.Errorf("batch %d on %s: seq %d epoch %d ingest %d, want %d, %d and %d", n, r.Link(), m.Seq, m.Epoch, m.Ingest, n+1, n/4, ingestOf(n))
		}
	}
	if wantEOF {
		m, err := r.Recv(ctx)
		if err != io.EOF {
			if m.Record != nil {
				m.Record.Release()
			}
			return fmt.Errorf("after %d batches on %s: got %v (kind %s), want io.EOF", count, r.Link(), err, m.Kind)
		}
	}
	return nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testOrder(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 8)
	l := link(1, 0, 1)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	const count, rows = 300, 10
	errc := make(chan error, 1)
	go func() {
		// The first batch is empty: zero rows must travel like any other.
		rec := batch(mem, 7, 0, 0)
		err := s.SendData(ctx, 0, rec)
		rec.Release()
		if err == nil {
			err = sendBatches(ctx, mem, s, 7, count, rows)
		}
		if err == nil {
			err = s.Close()
		}
		errc <- err
	}()
	m, err := r.Recv(ctx)
	must(t, err)
	if m.Kind != relay.KindData || m.Record.NumRows() != 0 || m.Seq != 1 {
		t.Fatalf("first message: kind %s rows %v seq %d, want an empty batch at seq 1", m.Kind, m.Record, m.Seq)
	}
	m.Record.Release()
	must(t, recvBatches(ctx, &offsetReceiver{r, 1}, 7, count, rows, true))
	must(t, <-errc)
	ss, rs := s.Stats(), r.Stats()
	if ss.Batches != count+1 || rs.Batches != count+1 || ss.Rows != count*rows || rs.Rows != ss.Rows {
		t.Fatalf("meters: sent %d batches %d rows, received %d batches %d rows; want %d and %d", ss.Batches, ss.Rows, rs.Batches, rs.Rows, count+1, count*rows)
	}
	if ss.Bytes == 0 || ss.Bytes != rs.Bytes || ss.Frames != rs.Frames {
		t.Fatalf("meters: sent %d bytes in %d frames, received %d in %d", ss.Bytes, ss.Frames, rs.Bytes, rs.Frames)
	}
	if rs.MaxBuffered > 8 {
		t.Fatalf("receiver buffered %d messages with a window of 8", rs.MaxBuffered)
	}
	must(t, r.Close())
	found := 0
	for _, st := range append(st.Stats(), rt.Stats()...) {
		if st.Link == l {
			found++
		}
	}
	if found < 2 {
		t.Fatalf("transport stats list %d ends of %s, want both", found, l)
	}
}

// offsetReceiver shifts sequence numbers so the shared helpers can run after
// a first message sent by hand.
type offsetReceiver struct {
	relay.Receiver
	off int
}

func (o *offsetReceiver) Recv(ctx context.Context) (relay.Message, error) {
	m, err := o.Receiver.Recv(ctx)
	if err == nil {
		m.Seq -= uint64(o.off)
	}
	return m, err
}

func testProgressAfterData(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 4)
	l := link(2, 3, 4)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	const epochs, perEpoch = 30, 5
	errc := make(chan error, 1)
	go func() {
		errc <- func() error {
			for e := 0; e < epochs; e++ {
				for i := 0; i < perEpoch; i++ {
					rec := batch(mem, 3, e*perEpoch+i, 3)
					err := s.SendData(ctx, uint64(e), rec)
					rec.Release()
					if err != nil {
						return err
					}
				}
				if err := s.SendProgress(ctx, uint64(e+1)); err != nil {
					return err
				}
			}
			return s.Close()
		}()
	}()
	seen := make(map[uint64]int)
	closed := 0
	var seq uint64
	for {
		m, err := r.Recv(ctx)
		if err == io.EOF {
			break
		}
		must(t, err)
		seq++
		if m.Seq != seq {
			t.Fatalf("message seq %d, want %d", m.Seq, seq)
		}
		switch m.Kind {
		case relay.KindData:
			if int(m.Epoch) < closed {
				t.Fatalf("batch at epoch %d after the frontier passed %d", m.Epoch, closed)
			}
			seen[m.Epoch]++
			m.Record.Release()
		case relay.KindProgress:
			if int(m.Epoch) != closed+1 {
				t.Fatalf("frontier %d after %d, want %d", m.Epoch, closed, closed+1)
			}
			e := m.Epoch - 1
			if seen[e] != perEpoch {
				t.Fatalf("progress closing epoch %d overtook its batches: %d of %d arrived", e, seen[e], perEpoch)
			}
			closed = int(e) + 1
		}
	}
	must(t, <-errc)
	if closed != epochs {
		t.Fatalf("frontier reached %d, want %d", closed, epochs)
	}
	if got := r.Stats().Progress; got != epochs {
		t.Fatalf("receiver counted %d progress messages, want %d", got, epochs)
	}
}

func testBackpressure(t *testing.T, f Factory) {
	const window, total, rows = 4, 40, 1000
	mem, ctx, st, rt := setup(t, f, window)
	l := link(3, 0, 0)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	// A receiver that reads nothing gets exactly window messages...
	must(t, sendBatches(ctx, mem, s, 1, window, rows))
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	rec := batch(mem, 1, window, rows)
	err = s.SendData(short, uint64(window/4), rec)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		rec.Release()
		t.Fatalf("send beyond the window of a stalled receiver: err = %v, want it to block until the deadline", err)
	}
	waitFor(t, "the window to arrive at the receiver", func() bool { return r.Stats().Buffered == window })
	if s.Stats().Batches != window {
		t.Fatalf("sender counted %d batches, want %d", s.Stats().Batches, window)
	}
	// ...and once it reads, the rest flows with the buffer never above window.
	errc := make(chan error, 1)
	go func() {
		err := s.SendData(ctx, uint64(window/4), rec)
		rec.Release()
		if err == nil {
			err = sendRange(ctx, mem, s, 1, window+1, total, rows)
		}
		if err == nil {
			err = s.Close()
		}
		errc <- err
	}()
	must(t, recvBatches(ctx, r, 1, total, rows, true))
	must(t, <-errc)
	rs, ss := r.Stats(), s.Stats()
	if rs.MaxBuffered > window {
		t.Fatalf("receiver buffered up to %d messages with a window of %d", rs.MaxBuffered, window)
	}
	if ss.Stalls == 0 {
		t.Fatalf("sender never waited for credit")
	}
	// Bytes are bounded too: window messages of this size, plus framing.
	if per := int64(rs.Bytes / rs.Batches); rs.MaxBufferedBytes > window*per*11/10 {
		t.Fatalf("receiver buffered up to %d bytes, bound %d", rs.MaxBufferedBytes, window*per)
	}
}

func testLargeBatches(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 2)
	l := link(4, 1, 2)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	const count, rows = 4, 150_000 // about 2.5 MB per batch
	errc := make(chan error, 1)
	go func() {
		err := sendBatches(ctx, mem, s, 1, count, rows)
		if err == nil {
			err = s.Close()
		}
		errc <- err
	}()
	must(t, recvBatches(ctx, r, 1, count, rows, true))
	must(t, <-errc)
	if b := r.Stats().Bytes; b < count*rows*12 {
		t.Fatalf("receiver metered %d bytes for %d rows of 12+ bytes", b, count*rows)
	}
}

func testManyPeers(t *testing.T, f Factory) {
	const senders, receivers, count, rows = 4, 3, 40, 50
	mem, ctx, st, rt := setup(t, f, 4)
	var wg sync.WaitGroup
	errc := make(chan error, senders*receivers*2)
	var rs []relay.Receiver
	for to := uint32(0); to < receivers; to++ {
		for from := uint32(0); from < senders; from++ {
			r, err := rt.OpenReceiver(ctx, link(5, from, to))
			must(t, err)
			rs = append(rs, r)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- recvBatches(ctx, r, from, count, rows, true)
			}()
		}
	}
	for from := uint32(0); from < senders; from++ {
		// Each sender fans out to every receiver from one goroutine, batch by
		// batch, as an exchange edge would.
		var ss []relay.Sender
		for to := uint32(0); to < receivers; to++ {
			s, err := st.OpenSender(ctx, link(5, from, to))
			must(t, err)
			ss = append(ss, s)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- func() error {
				for n := 0; n < count; n++ {
					rec := batch(mem, from, n, rows)
					for _, s := range ss {
						if err := s.SendDataAt(ctx, uint64(n/4), ingestOf(n), rec); err != nil {
							rec.Release()
							return err
						}
					}
					rec.Release()
				}
				for _, s := range ss {
					if err := s.Close(); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		must(t, err)
	}
	for _, r := range rs {
		if got := r.Stats().Batches; got != count {
			t.Fatalf("%s received %d batches, want %d", r.Link(), got, count)
		}
		must(t, r.Close())
	}
}

func testLateReceiver(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 4)
	l := link(6, 9, 8)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	errc := make(chan error, 1)
	go func() {
		err := sendBatches(ctx, mem, s, 9, 20, 10)
		if err == nil {
			err = s.Close()
		}
		errc <- err
	}()
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	must(t, recvBatches(ctx, r, 9, 20, 10, true))
	must(t, <-errc)
}

func testSenderClose(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 8)
	l := link(7, 1, 1)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	must(t, sendBatches(ctx, mem, s, 1, 5, 10))
	must(t, s.Close())
	must(t, s.Close()) // idempotent
	rec := batch(mem, 1, 5, 10)
	err = s.SendData(ctx, 0, rec)
	rec.Release()
	if !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("send after close: %v, want ErrClosed", err)
	}
	if err := s.SendProgress(ctx, 1); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("progress after close: %v, want ErrClosed", err)
	}
	// Batches sent before Close all arrive, then EOF, and EOF again.
	must(t, recvBatches(ctx, r, 1, 5, 10, true))
	if _, err := r.Recv(ctx); err != io.EOF {
		t.Fatalf("second receive after end: %v, want io.EOF", err)
	}
	if !s.Stats().Closed {
		t.Fatalf("sender stats do not say closed")
	}
	must(t, r.Close())
	must(t, r.Close())
	if _, err := r.Recv(ctx); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("receive after close: %v, want ErrClosed", err)
	}
}

func testReceiverClose(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 3)
	l := link(8, 2, 2)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	errc := make(chan error, 1)
	go func() { errc <- sendBatches(ctx, mem, s, 2, 100, 10) }()
	waitFor(t, "the window to fill", func() bool { return r.Stats().Buffered == 3 })
	// Closing with unreceived batches releases them (the allocator check at
	// the end proves it) and fails the blocked sender.
	must(t, r.Close())
	select {
	case err := <-errc:
		if !errors.Is(err, relay.ErrPeerClosed) {
			t.Fatalf("blocked sender after receiver close: %v, want ErrPeerClosed", err)
		}
	case <-ctx.Done():
		t.Fatalf("sender still blocked after its receiver closed")
	}
	must(t, s.Close())
}

func testTransportClose(t *testing.T, f Factory) {
	mem, ctx, st, rt := setup(t, f, 4)
	l := link(9, 0, 1)
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	must(t, sendBatches(ctx, mem, s, 0, 2, 10))
	waitFor(t, "two batches to arrive", func() bool { return r.Stats().Buffered == 2 })
	must(t, rt.Close())
	if _, err := r.Recv(ctx); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("receive after transport close: %v, want ErrClosed", err)
	}
	if _, err := rt.OpenReceiver(ctx, link(9, 0, 2)); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("open on a closed transport: %v, want ErrClosed", err)
	}
	must(t, st.Close())
	if err := s.SendProgress(ctx, 1); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("send after transport close: %v, want ErrClosed", err)
	}
}

func testBadLinks(t *testing.T, f Factory) {
	_, ctx, st, rt := setup(t, f, 4)
	for _, q := range []string{"", "a.b", "a b", "q*", "q>"} {
		l := relay.LinkID{Query: q}
		if _, err := st.OpenSender(ctx, l); !errors.Is(err, relay.ErrBadLink) {
			t.Errorf("sender on query %q: %v, want ErrBadLink", q, err)
		}
		if _, err := rt.OpenReceiver(ctx, l); !errors.Is(err, relay.ErrBadLink) {
			t.Errorf("receiver on query %q: %v, want ErrBadLink", q, err)
		}
	}
	l := link(10, 0, 0)
	s, err := st.OpenSender(ctx, l)
	must(t, err)
	if _, err := st.OpenSender(ctx, l); !errors.Is(err, relay.ErrLinkInUse) {
		t.Fatalf("second sender on %s: %v, want ErrLinkInUse", l, err)
	}
	r, err := rt.OpenReceiver(ctx, l)
	must(t, err)
	if _, err := rt.OpenReceiver(ctx, l); !errors.Is(err, relay.ErrLinkInUse) {
		t.Fatalf("second receiver on %s: %v, want ErrLinkInUse", l, err)
	}
	must(t, s.Close())
	must(t, r.Close())
}
