package worker

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
)

type countWriter struct{ rows int64 }

func (c *countWriter) Write(rec arrow.Record) error { c.rows += rec.NumRows(); return nil }
func (c *countWriter) Close() error                 { return nil }

// TestLazySinkDropsCommittedEpochs: a catalog sink of a re-deployed
// generation takes only results at or after the epoch it resumes at; the
// generation before sent every earlier one.
func TestLazySinkDropsCommittedEpochs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 3)
	defer rec.Release()
	out := &countWriter{}
	l := &lazySink{open: func() (sinks.Writer, error) { return out, nil }, below: 100}
	var ew sinks.EpochWriter = l
	for _, e := range []dataflow.Epoch{10, 99, 100, 250} {
		if err := ew.WriteEpoch(0, e, rec); err != nil {
			t.Fatal(err)
		}
	}
	if out.rows != 6 {
		t.Fatalf("wrote %d rows, want the 6 of epochs 100 and 250", out.rows)
	}
}

// TestLazySinkReportsItsFrontier: a catalog sink's commits are the part's
// committed epoch, as the results' are (the smallest over every sink
// instance here): without them an INSERT INTO query's committed epoch
// stayed 0 and a recovery replayed it from the start.
func TestLazySinkReportsItsFrontier(t *testing.T) {
	res := &results{}
	out := &countWriter{}
	a := &lazySink{open: func() (sinks.Writer, error) { return out, nil }, id: 1, res: res}
	b := &lazySink{open: func() (sinks.Writer, error) { return out, nil }, id: 2, res: res}
	if _, ok := res.frontier(3); ok {
		t.Fatal("a frontier before any sink committed")
	}
	for _, c := range []struct {
		l        *lazySink
		instance int
		frontier dataflow.Epoch
	}{{a, 0, 40}, {a, 1, 30}, {b, 0, 50}} {
		if err := c.l.Commit(c.instance, c.frontier); err != nil {
			t.Fatal(err)
		}
	}
	if f, ok := res.frontier(3); !ok || f != 30 {
		t.Fatalf("frontier %d (%v), want 30 from sink 1's instance 1", f, ok)
	}
	if err := a.Commit(1, 60); err != nil {
		t.Fatal(err)
	}
	if f, ok := res.frontier(3); !ok || f != 40 {
		t.Fatalf("frontier %d (%v), want 40", f, ok)
	}
}
