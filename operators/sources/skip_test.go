package sources

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// sent is one batch a source sent: its epoch and its rows' ids.
type sent struct {
	epoch dataflow.Epoch
	ids   []int64
}

// runSkipping runs 1000 generated rows, one a millisecond of event time,
// through a paced source with event time and returns what it sent.
func runSkipping(t *testing.T, p Pacing) []sent {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	g := &Generator{Rows: 1000, Batch: 300, Keys: 3, Start: t0, Step: time.Millisecond}
	var out []sent
	graph := &dataflow.Graph{Query: "skip"}
	src := graph.AddOperator(dataflow.OperatorSpec{Name: "gen", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return NewPacedSource(g, EventTime{Column: 3}, nil, p), nil
	}})
	sink := graph.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewSink(func(b dataflow.Batch) error {
			ids := b.Record.Column(0).(*array.Int64).Int64Values()
			out = append(out, sent{b.Epoch, slices.Clone(ids)})
			return nil
		}), nil
	}})
	graph.Connect(src, 0, sink, 0)
	ws, err := dataflow.BuildLocal(graph, dataflow.Config{Allocator: mem, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; !ws[0].Done(); round++ {
		if round > 100000 {
			t.Fatal("source never ended")
		}
		busy, err := dataflow.StepAll(ws)
		if err != nil {
			t.Fatal(err)
		}
		if !busy {
			wake, ok := ws[0].NextWake()
			if !ok {
				t.Fatal("idle with no wake-up asked for")
			}
			now = wake
		}
	}
	return out
}

// A re-deployed query's source reads past what it need not send again,
// and sends the rest exactly as the first run did: the same slices at the
// same epochs, since the skipped rows still move its watermark.
func TestSourceSkipsCommittedRows(t *testing.T) {
	first := runSkipping(t, Pacing{Rate: 1000})
	t0 := time.Unix(1_700_000_000, 0).UnixMicro()
	cut := dataflow.Epoch(t0 + 400_000) // 400 ms of event time
	after := func(keep func(sent) bool) []sent {
		var out []sent
		for _, b := range first {
			if keep(b) {
				out = append(out, b)
			}
		}
		return out
	}
	same := func(got, want []sent) bool {
		return slices.EqualFunc(got, want, func(a, b sent) bool { return a.epoch == b.epoch && slices.Equal(a.ids, b.ids) })
	}
	// Below an epoch: every batch that went out at or after it, as it did.
	got := runSkipping(t, Pacing{Rate: 1000, FastUntil: cut, SkipUntil: cut})
	want := after(func(b sent) bool { return b.epoch >= cut })
	if len(want) == 0 || len(want) == len(first) || !same(got, want) {
		t.Fatalf("SkipUntil sent %d batches, want the %d of %d at or after epoch %d", len(got), len(want), len(first), cut)
	}
	// Below an event time: every batch holding a row at or after it.
	got = runSkipping(t, Pacing{Rate: 1000, FastUntil: cut, SkipBelow: int64(cut)})
	want = after(func(b sent) bool {
		m := int64(math.MinInt64)
		for _, id := range b.ids {
			m = max(m, t0+id*1000)
		}
		return m >= int64(cut)
	})
	if len(want) == 0 || len(want) == len(first) || !same(got, want) {
		t.Fatalf("SkipBelow sent %d batches, want the %d of %d with a row at or after %d", len(got), len(want), len(first), cut)
	}
}
