package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/relay/natsrelay"
	"github.com/tierflow/tierflow/relay/natsserver"
)

// plainSenders hides the NATS sender's relay.FrontierSender: every
// progress update then goes as a message of its own, as before the
// frontier rode on the batches.
type plainSenders struct{ relay.Transport }

func (p plainSenders) OpenSender(ctx context.Context, l relay.LinkID) (relay.Sender, error) {
	s, err := p.Transport.OpenSender(ctx, l)
	if err != nil {
		return nil, err
	}
	return struct{ relay.Sender }{s}, nil
}

// TestProgressRidesOnBatches: a source on one worker sends 64 batches to a
// sink on another, over NATS, its frontier moving after each. Each
// advance rides on the batch before it, so the link carries 65 messages
// (64 batches and the closing frontier), where a progress message per
// advance made it 127. The sink gets every row and every epoch completes
// after its batches, both ways.
func TestProgressRidesOnBatches(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	const batches = 64
	for _, carry := range []bool{true, false} {
		t.Run(fmt.Sprintf("carry=%v", carry), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var got builtin.Captured
			defer got.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
			g := &dataflow.Graph{Query: fmt.Sprintf("carry-%v", carry)}
			src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
				New: func(dataflow.Instance) (dataflow.Operator, error) {
					return builtin.NewGenerator(batches, func(i int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
						b := array.NewRecordBuilder(mem, schema)
						defer b.Release()
						b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(2 * i), int64(2*i + 1)}, nil)
						return dataflow.Epoch(i), b.NewRecord(), nil
					}), nil
				}})
			sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{1},
				New: func(i dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(&got, i.Index), nil }})
			g.Connect(src, 0, sink, 0)

			trs := make([]*natsrelay.Transport, 2)
			ws := make([]*dataflow.Worker, 2)
			for i := range ws {
				nc, err := srv.Connect()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				// ProbeEvery < 0: no advance goes alone for the round
				// trip's sake, so the count is exact.
				trs[i] = natsrelay.New(nc, natsrelay.Options{Config: relay.Config{Allocator: mem, Window: 8}, ProbeEvery: -1})
				var tr relay.Transport = trs[i]
				if !carry {
					tr = plainSenders{trs[i]}
				}
				a := relay.NewDataflowTransport(tr)
				t.Cleanup(func() { _ = trs[i].Close() })
				t.Cleanup(func() { _ = a.Close() })
				w, err := dataflow.NewWorker(g, i, dataflow.Config{Allocator: mem, QueueLen: 4, Transport: a})
				if err != nil {
					t.Fatal(err)
				}
				ws[i] = w
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := dataflow.RunWorkers(ctx, ws); err != nil {
				t.Fatal(err)
			}

			rows := 0
			for _, b := range got.Batches() {
				rows += int(b.Record.NumRows())
			}
			if rows != 2*batches {
				t.Fatalf("sink got %d rows, want %d", rows, 2*batches)
			}
			completed := got.Completed()
			per := got.Batches()
			for _, c := range completed {
				for j, b := range per {
					if b.Epoch <= c.Epoch && j >= c.Batches {
						t.Fatalf("batch %d at epoch %v arrived after epoch %v completed", j, b.Epoch, c.Epoch)
					}
				}
			}
			if len(completed) != batches {
				t.Fatalf("%d epochs completed, want %d", len(completed), batches)
			}

			var st relay.LinkStats
			for _, s := range trs[0].Stats() {
				if s.Direction == relay.Send {
					st = s
				}
			}
			// Messages on the data path: batches, and progress that went alone.
			// The last batch's step closes the frontier: 62 advances.
			want := uint64(2*batches - 1) // 64 batches, 62 advances, the close
			if carry {
				want = batches + 1 // the first batch moves no frontier; the close goes alone
			}
			t.Logf("carry=%v: %d batches, %d progress updates, %d data-path messages (%.2f per batch), %d acks back",
				carry, st.Batches, st.Progress, st.Frames, float64(st.Frames)/float64(st.Batches), st.Acks)
			if st.Batches != batches || st.Frames != want {
				t.Errorf("link carried %d batches in %d messages, want %d in %d", st.Batches, st.Frames, batches, want)
			}
			if st.Progress != batches-1 {
				t.Errorf("%d progress updates sent, want %d (62 advances and the close)", st.Progress, batches-1)
			}
		})
	}
}
