package natsrelay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// numbered is batch n of a stream: rows values n*1000+i, and a string
// column, so a batch that arrived twice or out of place shows.
func numbered(mem memory.Allocator, n, rows int) arrow.Record {
	ib := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	for i := 0; i < rows; i++ {
		ib.Append(int64(n*1000 + i))
		sb.Append("row " + strconv.Itoa(n) + "/" + strconv.Itoa(i))
	}
	a, b := ib.NewArray(), sb.NewArray()
	ib.Release()
	sb.Release()
	defer a.Release()
	defer b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	return array.NewRecord(schema, []arrow.Array{a, b}, -1)
}

// rowsOf makes batch n large enough to be chunked every 7th batch.
func rowsOf(n int) int {
	if n%7 == 3 {
		return 2000
	}
	return 10
}

// stream sends batches 1..count at epoch n/10, a frontier after every tenth,
// and closes the sender.
func stream(ctx context.Context, mem memory.Allocator, s relay.Sender, count int) error {
	for n := 1; n <= count; n++ {
		rec := numbered(mem, n, rowsOf(n))
		err := s.SendData(ctx, uint64(n/10), rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("batch %d: %w", n, err)
		}
		if n%10 == 0 {
			if err := s.SendProgress(ctx, uint64(n/10+1)); err != nil {
				return fmt.Errorf("frontier after %d: %w", n, err)
			}
		}
	}
	return s.Close()
}

// expectStream receives what stream sent: every batch exactly once, in
// order, with its frontiers, then io.EOF.
func expectStream(ctx context.Context, r relay.Receiver, count int) error {
	n := 0
	for {
		m, err := r.Recv(ctx)
		if err == io.EOF {
			if n != count {
				return fmt.Errorf("end after %d batches, want %d", n, count)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("after batch %d: %w", n, err)
		}
		switch m.Kind {
		case relay.KindProgress:
			if n%10 != 0 || m.Epoch != uint64(n/10+1) {
				return fmt.Errorf("frontier %d after batch %d", m.Epoch, n)
			}
		case relay.KindData:
			n++
			err := checkNumbered(m.Record, n)
			m.Record.Release()
			if err != nil {
				return err
			}
		}
	}
}

func checkNumbered(rec arrow.Record, n int) error {
	x := rec.Column(0).(*array.Int64)
	s := rec.Column(1).(*array.String)
	if int(rec.NumRows()) != rowsOf(n) {
		return fmt.Errorf("batch %d has %d rows, want %d (first value %d)", n, rec.NumRows(), rowsOf(n), x.Value(0))
	}
	for i := 0; i < x.Len(); i++ {
		if x.Value(i) != int64(n*1000+i) || s.Value(i) != "row "+strconv.Itoa(n)+"/"+strconv.Itoa(i) {
			return fmt.Errorf("batch %d row %d is %d %q", n, i, x.Value(i), s.Value(i))
		}
	}
	return nil
}

// dropper loses chosen frames once each, as a server that stopped would.
type dropper struct {
	mu      sync.Mutex
	seen    map[string]bool
	pick    func(h frame.Header) bool
	dropped atomic.Int64
}

func (d *dropper) drop(b []byte) bool {
	h, _, err := frame.Decode(b)
	if err != nil || !d.pick(h) {
		return false
	}
	key := fmt.Sprintf("%s/%d/%d", h.Kind, h.Seq, h.Chunk)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	if d.seen[key] {
		return false
	}
	d.seen[key] = true
	d.dropped.Add(1)
	return true
}

// linkPair is two transports on their own connections to one server, as on
// two workers, over a checked allocator, with a deadline for the test.
// Everything is closed, and the allocator checked, when the test ends.
type linkPair struct {
	ctx  context.Context
	mem  *memory.CheckedAllocator
	a, b *Transport
}

func newLinkPair(t *testing.T, s *natsserver.Server, timeout time.Duration, o Options) *linkPair {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	o.Config.Allocator = mem
	a, b := New(connect(t, s), o), New(connect(t, s), o)
	t.Cleanup(func() { _ = a.Close() })
	t.Cleanup(func() { _ = b.Close() })
	return &linkPair{ctx: ctx, mem: mem, a: a, b: b}
}

// TestLostMessagesAreSentAgain loses frames on their way, once each: the
// receiver still gets every batch exactly once and in order, with every
// frontier and the end. A gap (a later message arrives) is asked for at
// once; a lost tail (nothing comes after it) goes again after the ack
// timeout; lost acks make the sender send again what arrived, and the
// receiver drops those duplicates.
func TestLostMessagesAreSentAgain(t *testing.T) {
	s := startServer(t, 0)
	const count = 120
	cases := []struct {
		name       string
		senderSide bool // drop what the sender publishes, else the receiver
		pick       func(h frame.Header) bool
		check      func(snd, rcv relay.LinkStats) error
	}{
		{"a message", true, func(h frame.Header) bool { return h.Kind == frame.KindData && h.Seq%17 == 5 },
			func(snd, rcv relay.LinkStats) error {
				if rcv.Gaps == 0 || snd.Resent == 0 {
					return fmt.Errorf("no gap asked for (%d) or nothing sent again (%d)", rcv.Gaps, snd.Resent)
				}
				return nil
			}},
		{"a chunk", true, func(h frame.Header) bool { return h.Kind == frame.KindData && h.Chunks > 1 && h.Chunk == 1 },
			func(snd, rcv relay.LinkStats) error {
				if rcv.Gaps == 0 || snd.Resent == 0 {
					return fmt.Errorf("no gap asked for (%d) or nothing sent again (%d)", rcv.Gaps, snd.Resent)
				}
				return nil
			}},
		{"frontiers", true, func(h frame.Header) bool { return h.Kind == frame.KindProgress }, nil},
		{"the tail and the end", true, func(h frame.Header) bool {
			return h.Kind == frame.KindEnd || h.Seq > count+count/10-3
		}, func(snd, rcv relay.LinkStats) error {
			if snd.Resent == 0 {
				return errors.New("nothing sent again")
			}
			return nil
		}},
		{"acks and resend requests", false, func(h frame.Header) bool { return h.Kind == frame.KindAck || h.Kind == frame.KindResend }, nil},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lp := newLinkPair(t, s, 30*time.Second, Options{Config: relay.Config{Window: 8}, MaxChunk: 4096, AckTimeout: 200 * time.Millisecond, Retry: 50 * time.Millisecond})
			ctx := lp.ctx
			d := &dropper{pick: c.pick}
			if c.senderSide {
				lp.a.drop = d.drop
			} else {
				lp.b.drop = d.drop
			}
			// A link of its own per case: the cases share a server, and
			// the last case's receiver says close as it goes, which a
			// sender on the same link would take for its own peer's.
			snd, r := openLink(ctx, t, lp.a, lp.b, relay.LinkID{Query: "q", Edge: uint32(1 + i), Sender: 0, Receiver: 1})
			defer r.Close()
			errc := make(chan error, 1)
			rctx, stop := context.WithCancelCause(ctx)
			defer stop(nil)
			go func() {
				err := stream(ctx, lp.mem, snd, count)
				if err != nil {
					stop(err) // the receiver would wait for the deadline
				}
				errc <- err
			}()
			if err := expectStream(rctx, r, count); err != nil {
				t.Fatalf("%v (sender: %v)", err, context.Cause(rctx))
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			ss, rs := snd.Stats(), r.Stats()
			t.Logf("dropped %d frames; sent again %d messages; receiver: %d gaps, %d duplicates", d.dropped.Load(), ss.Resent, rs.Gaps, rs.Duplicates)
			if d.dropped.Load() == 0 {
				t.Fatal("the test dropped nothing")
			}
			if c.check != nil {
				if err := c.check(ss, rs); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestDuplicatesAreDropped: with every ack of the first window lost (the
// receiver's answers to the sender's hellos included), the sender sends
// that window again after its ack timeout; the receiver counts the copies,
// drops them, and hands out each batch once.
func TestDuplicatesAreDropped(t *testing.T) {
	const window = 4
	lp := newLinkPair(t, startServer(t, 0), 30*time.Second, Options{Config: relay.Config{Window: window}, AckTimeout: 100 * time.Millisecond, Retry: 50 * time.Millisecond})
	ctx := lp.ctx
	lp.b.drop = func(p []byte) bool {
		// Grants acknowledge too: those that answer hellos go as well,
		// and with them no credit the sender lacks (they grant the first
		// window again; nothing is consumed yet).
		h, body, err := frame.Decode(p)
		if err != nil || h.Seq == 0 || h.Seq > window {
			return false
		}
		if h.Kind == frame.KindCredit {
			g, err := frame.DecodeCredit(body)
			return err == nil && g.Messages <= window
		}
		return h.Kind == frame.KindAck
	}
	snd, r := openLink(ctx, t, lp.a, lp.b, relay.LinkID{Query: "q", Edge: 2})
	defer r.Close()
	errc := make(chan error, 1)
	go func() { errc <- stream(ctx, lp.mem, snd, 30) }()
	// Nothing is received yet, so no grant frees the sender: it can only
	// wait for acks, and send the window again.
	waitFor(t, 10*time.Second, func() bool { return r.Stats().Duplicates >= window })
	if err := expectStream(ctx, r, 30); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if ss := snd.Stats(); ss.Resent < window || ss.Batches != 30 {
		t.Fatalf("sender: %d sent again, %d batches", ss.Resent, ss.Batches)
	}
}

// TestServerRestartMidStream stops the real server while batches stream
// and starts it again on the same port: both connections reconnect, what
// the server held when it stopped is sent again, and the receiver gets
// every batch exactly once and in order.
func TestServerRestartMidStream(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.ClientURL())
	port, _ := strconv.Atoi(u.Port())
	current := srv
	defer func() { current.Shutdown() }()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ncA, ncB := connect(t, srv), connect(t, srv)
	o := Options{Config: relay.Config{Allocator: mem, Window: 16}, MaxChunk: 8192, AckTimeout: 300 * time.Millisecond}
	a, b := New(ncA, o), New(ncB, o)
	defer a.Close()
	defer b.Close()
	snd, r := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 3})
	defer r.Close()
	const count = 3000
	errc := make(chan error, 1)
	go func() { errc <- stream(ctx, mem, snd, count) }()
	recvc := make(chan error, 1)
	go func() { recvc <- expectStream(ctx, r, count) }()
	for round := 1; round <= 3; round++ {
		// Restart while batches are on their way.
		at := uint64(round * count / 4)
		for deadline := time.Now().Add(20 * time.Second); r.Stats().Batches < at; time.Sleep(5 * time.Millisecond) {
			select {
			case err := <-recvc:
				t.Fatalf("receiving before restart %d: %v (sender %+v)", round, err, snd.Stats())
			case err := <-errc:
				t.Fatalf("sending before restart %d: %v", round, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("restart %d: %d batches received, want %d: sender %+v receiver %+v", round, r.Stats().Batches, at, snd.Stats(), r.Stats())
			}
		}
		current.Shutdown()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			current, err = natsserver.Start(natsserver.Options{Port: port})
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "address already in use") || time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	if err := <-recvc; err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ss, rs := snd.Stats(), r.Stats()
	t.Logf("3 restarts: sender sent %d messages again; receiver found %d gaps, dropped %d duplicates; reconnects %d/%d",
		ss.Resent, rs.Gaps, rs.Duplicates, ncA.Stats().Reconnects, ncB.Stats().Reconnects)
	if ncA.Stats().Reconnects < 3 || ncB.Stats().Reconnects < 3 {
		t.Fatalf("the connections reconnected %d and %d times, want 3 each", ncA.Stats().Reconnects, ncB.Stats().Reconnects)
	}
}

// TestCloseWaitsForAcks: Close returns once the receiver acknowledged the
// end, sending it again if it was lost; CloseContext with a done context
// does not wait for a receiver that never answers; and a gap its sender
// never fills fails the receiver with ErrLost.
func TestCloseWaitsForAcks(t *testing.T) {
	lp := newLinkPair(t, startServer(t, 0), 30*time.Second, Options{Config: relay.Config{Window: 4}, AckTimeout: 100 * time.Millisecond, Retry: 50 * time.Millisecond, GapTimeout: 500 * time.Millisecond})
	ctx, mem, a, b := lp.ctx, lp.mem, lp.a, lp.b
	var silent atomic.Bool // the receiver's acks and resend requests vanish
	b.drop = func(p []byte) bool {
		h, _, err := frame.Decode(p)
		return err == nil && silent.Load() && (h.Kind == frame.KindAck || h.Kind == frame.KindResend)
	}
	var loseData atomic.Bool // the sender's data frames vanish, sent again or not
	a.drop = func(p []byte) bool {
		h, _, err := frame.Decode(p)
		return err == nil && loseData.Load() && h.Kind == frame.KindData
	}

	// The receiver never acks: a cancelled close returns at once.
	silent.Store(true)
	snd, r := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 4})
	rec := numbered(mem, 1, rowsOf(1))
	if err := snd.SendData(ctx, 0, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool { return r.Stats().Buffered == 1 })
	done, stop := context.WithCancel(ctx)
	stop()
	begin := time.Now()
	if err := snd.(relay.ContextCloser).CloseContext(done); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el > time.Second {
		t.Fatalf("a cancelled close waited %v", el)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// A data message lost for good (its sender gone): the receiver asks
	// for it again, then fails.
	silent.Store(false)
	snd2, r2 := openLink(ctx, t, a, b, relay.LinkID{Query: "q", Edge: 5})
	defer r2.Close()
	loseData.Store(true)
	if err := snd2.SendData(ctx, 0, rec); err != nil {
		t.Fatal(err)
	}
	if err := snd2.(relay.ContextCloser).CloseContext(done); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	_, err := r2.Recv(ctx)
	if !errors.Is(err, relay.ErrLost) || !strings.Contains(err.Error(), "message 1 is missing") {
		t.Fatalf("receive after an unfilled gap: %v, want ErrLost naming message 1", err)
	}
	if st := r2.Stats(); st.Gaps != 1 {
		t.Fatalf("receiver stats: %+v", st)
	}
}
