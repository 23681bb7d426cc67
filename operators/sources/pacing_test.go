package sources

import (
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// runPaced runs a generator of rows through a paced source on a clock that
// jumps to each requested wake-up, and returns each received batch's rows and
// the clock's offset when it arrived.
func runPaced(t *testing.T, rows int64, p Pacing) (sizes []int64, at []time.Duration) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	g := &Generator{Rows: rows, Batch: 500, Keys: 3, Start: t0, Step: time.Millisecond}
	graph := &dataflow.Graph{Query: "paced"}
	src := graph.AddOperator(dataflow.OperatorSpec{Name: "gen", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return NewPacedSource(g, EventTime{Column: -1}, nil, p), nil
	}})
	sink := graph.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewSink(func(b dataflow.Batch) error {
			sizes = append(sizes, b.Record.NumRows())
			at = append(at, now.Sub(t0))
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
			t.Fatal("paced source never ended")
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
	return sizes, at
}

// At a rate, slices of 50 ms of input go out when due: slice k at k·50 ms.
func TestPacedSourceKeepsTheRate(t *testing.T) {
	sizes, at := runPaced(t, 1000, Pacing{Rate: 1000})
	var total int64
	for i, n := range sizes {
		if n != 50 {
			t.Fatalf("batch %d has %d rows, want 50 (50 ms at 1000 rows/s)", i, n)
		}
		if want := time.Duration(i) * 50 * time.Millisecond; at[i] != want {
			t.Fatalf("batch %d at %v, want %v", i, at[i], want)
		}
		total += n
	}
	if total != 1000 {
		t.Fatalf("%d rows, want all 1000", total)
	}
}

// For ends the stream on time, MaxRows after so many rows: the rows sent by
// then, no more.
func TestPacedSourceBounds(t *testing.T) {
	sum := func(ns []int64) (s int64) {
		for _, n := range ns {
			s += n
		}
		return s
	}
	sizes, at := runPaced(t, 1000, Pacing{Rate: 1000, For: 300 * time.Millisecond})
	if got := sum(sizes); got != 300 {
		t.Fatalf("%d rows in 300 ms at 1000 rows/s, want 300", got)
	}
	if last := at[len(at)-1]; last >= 300*time.Millisecond {
		t.Fatalf("a batch went out at %v, after the 300 ms bound", last)
	}
	sizes, _ = runPaced(t, 1000, Pacing{MaxRows: 120})
	if got := sum(sizes); got != 120 || len(sizes) != 1 {
		t.Fatalf("MaxRows 120 without a rate: batches %v, want one of 120 rows", sizes)
	}
}
