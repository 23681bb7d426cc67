package dataflow_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// recorder is a Transport that exposes both ends to the test: the inboxes a
// worker listens with, and every message a worker sends.
type recorder struct {
	mu      sync.Mutex
	inboxes map[dataflow.ChannelID]dataflow.Inbox
	sent    []dataflow.Message
	closed  []dataflow.ChannelID
}

func (r *recorder) Listen(ch dataflow.ChannelID, in dataflow.Inbox) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inboxes == nil {
		r.inboxes = map[dataflow.ChannelID]dataflow.Inbox{}
	}
	r.inboxes[ch] = in
	return nil
}

func (r *recorder) Dial(ch dataflow.ChannelID) (dataflow.Sender, error) {
	return &recSender{r: r, ch: ch}, nil
}

type recSender struct {
	r  *recorder
	ch dataflow.ChannelID
}

func (s *recSender) Send(_ context.Context, m dataflow.Message) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if m.Record != nil {
		m.Record.Release() // the transport owns it; a real one serialises it
	}
	s.r.sent = append(s.r.sent, m)
	return nil
}

func (s *recSender) Close() error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.closed = append(s.r.closed, s.ch)
	return nil
}

// What a relay sees on the sending side: one channel per receiver, data
// stamped with epoch and sequence, frontiers after the data they cover,
// Closed last, then Close.
func TestSenderSideOfARemoteChannel(t *testing.T) {
	mem := checkedAlloc(t)
	g := &dataflow.Graph{Query: "r"}
	src := g.AddOperator(sliceSource("src", []int{0}, func(int) []dataflow.Batch {
		return []dataflow.Batch{{Epoch: 1, Record: kvRecord(mem, 0, 2)}, {Epoch: 4, Record: kvRecord(mem, 2, 2)}}
	}))
	sink := g.AddOperator(capture("sink", 1, []int{1}, &builtin.Captured{}))
	g.Connect(src, 0, sink, 0)
	var tr recorder
	w, err := dataflow.NewWorker(g, 0, dataflow.Config{Allocator: mem, Transport: &tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone([]*dataflow.Worker{w}, 100); err != nil {
		t.Fatal(err)
	}
	ch := dataflow.ChannelID{Query: "r", Edge: 0, Sender: 0, Receiver: 0}
	type msg struct {
		kind  dataflow.Kind
		epoch dataflow.Epoch
	}
	want := []msg{{dataflow.Data, 1}, {dataflow.Progress, 1}, {dataflow.Data, 4}, {dataflow.Progress, dataflow.Closed}}
	if len(tr.sent) != len(want) {
		t.Fatalf("sent %d messages: %+v", len(tr.sent), tr.sent)
	}
	for i, m := range tr.sent {
		if m.Channel != ch || m.Seq != uint64(i) || m.Kind != want[i].kind || m.Epoch != want[i].epoch {
			t.Fatalf("message %d = %+v, want %v seq %d %v", i, m.Header, ch, i, want[i])
		}
	}
	if len(tr.closed) != 1 || tr.closed[0] != ch {
		t.Fatalf("closed %v", tr.closed)
	}
}

// The receiving side checks what a transport delivers: sequence numbers,
// data behind an announced frontier, frontier regressions.
func TestReceiverSideChecksTheChannelProtocol(t *testing.T) {
	ch := dataflow.ChannelID{Query: "r", Edge: 0, Sender: 0, Receiver: 0}
	data := func(seq uint64, e dataflow.Epoch) func(*testing.T, dataflow.Inbox) error {
		return func(t *testing.T, in dataflow.Inbox) error {
			mem := checkedAllocFor(t)
			return in.Deliver(context.Background(), dataflow.Message{Header: dataflow.Header{Channel: ch, Kind: dataflow.Data, Epoch: e, Seq: seq}, Record: kvRecord(mem, int(seq), 1)})
		}
	}
	prog := func(seq uint64, e dataflow.Epoch) func(*testing.T, dataflow.Inbox) error {
		return func(_ *testing.T, in dataflow.Inbox) error {
			return in.Deliver(context.Background(), dataflow.Message{Header: dataflow.Header{Channel: ch, Kind: dataflow.Progress, Epoch: e, Seq: seq}})
		}
	}
	tests := []struct {
		name    string
		msgs    []func(*testing.T, dataflow.Inbox) error
		wantErr error
		rows    int64
	}{
		{"in order", []func(*testing.T, dataflow.Inbox) error{data(0, 2), prog(1, 3), data(2, 3), prog(3, dataflow.Closed)}, nil, 2},
		{"gap", []func(*testing.T, dataflow.Inbox) error{data(0, 2), data(2, 3)}, dataflow.ErrProtocol, 1},
		{"data behind frontier", []func(*testing.T, dataflow.Inbox) error{prog(0, 5), data(1, 4)}, dataflow.ErrProtocol, 0},
		{"frontier regress", []func(*testing.T, dataflow.Inbox) error{prog(0, 5), prog(1, 4)}, dataflow.ErrProtocol, 0},
		{"wrong receiver", []func(*testing.T, dataflow.Inbox) error{func(_ *testing.T, in dataflow.Inbox) error {
			bad := ch
			bad.Receiver = 3
			return in.Deliver(context.Background(), dataflow.Message{Header: dataflow.Header{Channel: bad, Kind: dataflow.Progress, Epoch: 1}})
		}}, dataflow.ErrProtocol, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			var got builtin.Captured
			defer got.Release()
			g := &dataflow.Graph{Query: "r"}
			src := g.AddOperator(sliceSource("src", []int{1}, func(int) []dataflow.Batch { return nil }))
			sink := g.AddOperator(capture("sink", 1, []int{0}, &got))
			g.Connect(src, 0, sink, 0)
			var tr recorder
			w, err := dataflow.NewWorker(g, 0, dataflow.Config{Allocator: mem, Transport: &tr})
			if err != nil {
				t.Fatal(err)
			}
			in := tr.inboxes[ch]
			if in == nil {
				t.Fatalf("worker did not listen on %v: %v", ch, tr.inboxes)
			}
			for _, m := range tt.msgs {
				if err := m(t, in); err != nil {
					t.Fatal(err)
				}
			}
			err = dataflow.StepUntilDone([]*dataflow.Worker{w}, 100)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if got.Rows() != tt.rows {
				t.Fatalf("sink got %d rows, want %d", got.Rows(), tt.rows)
			}
			// A finished or failed instance refuses and releases late data.
			if err := data(9, 9)(t, in); !errors.Is(err, dataflow.ErrClosed) {
				t.Fatalf("late delivery: %v", err)
			}
		})
	}
}

// checkedAllocFor is checkedAlloc for helpers handed a *testing.T late.
func checkedAllocFor(t *testing.T) *memory.CheckedAllocator { return checkedAlloc(t) }

// A transport that loses a channel fails the receiving instance, and with
// it the run, with ErrTransport.
func TestTransportFailureFailsTheRun(t *testing.T) {
	for _, mode := range []string{"stepped", "concurrent"} {
		t.Run(mode, func(t *testing.T) {
			mem := checkedAlloc(t)
			var got builtin.Captured
			defer got.Release()
			g := &dataflow.Graph{Query: "r"}
			src := g.AddOperator(sliceSource("src", []int{1}, func(int) []dataflow.Batch { return nil }))
			sink := g.AddOperator(capture("sink", 1, []int{0}, &got))
			g.Connect(src, 0, sink, 0)
			var tr recorder
			w, err := dataflow.NewWorker(g, 0, dataflow.Config{Allocator: mem, Transport: &tr})
			if err != nil {
				t.Fatal(err)
			}
			ch := dataflow.ChannelID{Query: "r", Edge: 0, Sender: 0, Receiver: 0}
			in := tr.inboxes[ch]
			lost := errors.New("connection lost")
			if err := in.Deliver(context.Background(), dataflow.Message{Header: dataflow.Header{Channel: ch, Kind: dataflow.Data, Seq: 0}, Record: kvRecord(mem, 0, 1)}); err != nil {
				t.Fatal(err)
			}
			if mode == "stepped" {
				in.Fail(ch, lost)
				_, err = w.Step()
			} else {
				go in.Fail(ch, lost)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err = w.Run(ctx)
			}
			if !errors.Is(err, dataflow.ErrTransport) || !errors.Is(err, lost) {
				t.Fatalf("got %v, want ErrTransport wrapping the cause", err)
			}
			if err := in.Deliver(context.Background(), dataflow.Message{Header: dataflow.Header{Channel: ch, Kind: dataflow.Data, Seq: 1}, Record: kvRecord(mem, 1, 1)}); !errors.Is(err, dataflow.ErrClosed) {
				t.Fatalf("delivery after failure: %v", err)
			}
		})
	}
}

// togetherTransport is a recorder whose Listen and Dial each wait until n
// opens are under way at once (or a deadline passes): most is the most
// that were.
type togetherTransport struct {
	recorder
	n        int
	all      chan struct{}
	mu       sync.Mutex
	inFlight int
	most     int
}

func (t *togetherTransport) gather() {
	t.mu.Lock()
	t.inFlight++
	t.most = max(t.most, t.inFlight)
	if t.inFlight == t.n {
		close(t.all)
	}
	t.mu.Unlock()
	select {
	case <-t.all:
	case <-time.After(2 * time.Second): // the opens came one at a time
	}
	t.mu.Lock()
	t.inFlight--
	t.mu.Unlock()
}

func (t *togetherTransport) Listen(ch dataflow.ChannelID, in dataflow.Inbox) error {
	t.gather()
	return t.recorder.Listen(ch, in)
}

func (t *togetherTransport) Dial(ch dataflow.ChannelID) (dataflow.Sender, error) {
	t.gather()
	return t.recorder.Dial(ch)
}

// A worker opens its remote channels together: over NATS each open waits
// a round trip for the server to register it, and one after the other a
// part with n remote channels waited n of them as it was built (#25).
// Here three channels cross from worker 0 to worker 1: each worker's
// opens are all under way at once.
func TestWorkerOpensItsRemoteChannelsTogether(t *testing.T) {
	g := &dataflow.Graph{Query: "together"}
	src := g.AddOperator(sliceSource("src", []int{0, 0, 0}, func(int) []dataflow.Batch { return nil }))
	sink := g.AddOperator(capture("sink", 1, []int{1, 1, 1}, &builtin.Captured{}))
	g.Connect(src, 0, sink, 0)
	for id, what := range []string{"dials", "listens on"} {
		tr := &togetherTransport{n: 3, all: make(chan struct{})}
		w, err := dataflow.NewWorker(g, id, dataflow.Config{Allocator: memory.DefaultAllocator, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if tr.most != 3 {
			t.Errorf("worker %d %s its 3 remote channels at most %d at once, want all together", id, what, tr.most)
		}
	}
}
