package rel

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
)

// TestSortSpillsRunsAndMergesThemInOrder: an ORDER BY over a whole input
// past its limit sorts runs to disk and merges them, in one pass or, when
// a merge cannot hold a chunk of every run, in several; the rows come out
// in exactly the in-memory sort's order, ties (many: a string of four
// values, a small integer) in their input's order, NULLs last ascending
// and first descending, and no file is left behind.
func TestSortSpillsRunsAndMergesThemInOrder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rng := rand.New(rand.NewSource(9))
	_, batches, _ := streamRows(rng, 20_000, 500, 0)
	keys := []SortKey{{Expr: colS}, {Expr: colV, Desc: true}, {Expr: colF}}
	run := func(mk func() (dataflow.Operator, error)) [][]any { return opRows(t, batches, mk) }
	want := run(func() (dataflow.Operator, error) { return NewSortAtEnd(keys, streamSchema, functions.Builtins()) })
	if len(want) != 20_000 {
		t.Fatalf("the in-memory sort gave %d rows", len(want))
	}
	for _, tc := range []struct {
		limit      int64
		spills     bool
		multiPass  bool
		descriptor string
	}{
		{1 << 30, false, false, "under its limit"},
		{1 << 20, true, false, "a few runs, merged at once"},
		{64 << 10, true, true, "many runs, merged in passes"},
	} {
		t.Run(tc.descriptor, func(t *testing.T) {
			st := &SpillStats{}
			var op *Sort
			got := run(func() (dataflow.Operator, error) {
				var err error
				op, err = NewSortAtEndWithin(keys, streamSchema, functions.Builtins(), tc.limit, st)
				return op, err
			})
			if !reflect.DeepEqual(got, want) {
				for i := range got {
					if i >= len(want) || !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("row %d: %v, the in-memory sort's %v (%d rows, want %d)", i, got[i], want[min(i, len(want)-1)], len(got), len(want))
					}
				}
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			runs := st.Spills.Load()
			if (runs > 0) != tc.spills || tc.spills && st.Rows.Load() != 20_000 {
				t.Errorf("%d runs of %d rows in all", runs, st.Rows.Load())
			}
			if tc.multiPass && runs <= 2 {
				t.Errorf("%d runs: want more than a merge of two reads at once", runs)
			}
			if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
				t.Errorf("files left: %v %v", left, err)
			}
		})
	}
}

// TestSortSpillsWhenItsQueryIsAThirdFull: the rows a sort holds were
// charged where they were made, so its query's budget refuses them there;
// with no limit of its own the sort spills once the budget is a third
// full and answers, where holding every row fails the query.
func TestSortSpillsWhenItsQueryIsAThirdFull(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	rng := rand.New(rand.NewSource(13))
	// 100,000 rows of about 45 bytes in a 2 MiB query: the 16 batches of
	// 500 rows an inbox holds are a sixth of it.
	rows, batches, _ := streamRows(rng, 100_000, 500, 0)
	keys := []SortKey{{Expr: colV}, {Expr: colS, Desc: true}}
	// run sorts in a 2 MiB query of which another holder takes other.
	runBeside := func(other int64, mk func() (dataflow.Operator, error)) ([][]any, error) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		budget := dataflow.NewMemory("query", 2<<20, nil)
		if err := budget.Account("another operator's state").Grow(other); err != nil {
			t.Fatal(err)
		}
		var in []dataflow.Batch
		for _, b := range batches {
			in = append(in, dataflow.Batch{Record: makeRecord(t, mem, streamSchema, b)})
		}
		// As runGraphMem, with a sink that reads each batch's rows and
		// lets it go: the output holds no part of the budget.
		g := &dataflow.Graph{Query: "t"}
		src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
			return builtin.NewSliceSource(in), nil
		}})
		cp := g.AddOperator(dataflow.OperatorSpec{Name: "copy", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return &copyOp{}, nil }})
		op := g.AddOperator(dataflow.OperatorSpec{Name: "sort", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return mk() }})
		var got [][]any
		sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: rowsSink(&got)})
		g.Connect(src, 0, cp, 0)
		g.Connect(cp, 0, op, 0)
		g.Connect(op, 0, sink, 0)
		// Run, not stepped: a stepped sink takes nothing until the sort's
		// step ends, and the sort's whole output would wait in its inbox.
		err := dataflow.Run(context.Background(), g, dataflow.Config{Allocator: budget.Allocator(mem), Memory: budget})
		return got, err
	}
	run := func(mk func() (dataflow.Operator, error)) ([][]any, error) { return runBeside(0, mk) }
	if _, err := run(func() (dataflow.Operator, error) { return NewSortAtEnd(keys, streamSchema, functions.Builtins()) }); !errors.Is(err, dataflow.ErrMemory) {
		t.Fatalf("every row held in a 2 MiB query: %v, want it over its memory", err)
	}
	st := &SpillStats{}
	got, err := run(func() (dataflow.Operator, error) {
		return NewSortAtEndWithin(keys, streamSchema, functions.Builtins(), 0, st)
	})
	if err != nil {
		t.Fatalf("spilling: %v", err)
	}
	sameRows(t, "sorted rows", got, rows)
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if fmt.Sprint(a[1]) != fmt.Sprint(b[1]) && (a[1] == nil || b[1] != nil && a[1].(int64) > b[1].(int64)) {
			t.Fatalf("row %d: v %v after %v", i, b[1], a[1])
		}
	}
	if st.Spills.Load() < 2 {
		t.Errorf("%d runs, want the rows spilled in several", st.Spills.Load())
	}
	// Beside another operator holding 512 KiB (the query a third full
	// once a few batches are in flight) the sort cuts a run once it holds
	// a sixth of the budget, about 350 KiB, not at every batch (190 runs
	// without that rule).
	st = &SpillStats{}
	got, err = runBeside(512<<10, func() (dataflow.Operator, error) {
		return NewSortAtEndWithin(keys, streamSchema, functions.Builtins(), 0, st)
	})
	if err != nil {
		t.Fatalf("spilling beside another holder: %v", err)
	}
	sameRows(t, "sorted rows beside another holder", got, rows)
	if runs := st.Spills.Load(); runs < 2 || runs > 30 {
		t.Errorf("beside another holder: %d runs of 100,000 rows, want a few of a sixth of the budget or more", runs)
	}
}

// BenchmarkSortAtEnd sorts 100,000 rows (about 7.5 MB with their keys)
// in memory, and in runs on disk under a limit of 3 MiB (about five runs,
// merged at once) and 512 KiB (about thirty, merged two at a time in
// passes): the spill's cost against the in-memory sort in the same
// process.
func BenchmarkSortAtEnd(b *testing.B) {
	b.Setenv("TMPDIR", b.TempDir())
	rng := rand.New(rand.NewSource(3))
	_, batches, _ := streamRows(rng, 100_000, 1024, 0)
	keys := []SortKey{{Expr: colS}, {Expr: colV, Desc: true}, {Expr: colF}}
	mem := memory.NewGoAllocator()
	for _, c := range []struct {
		name  string
		limit int64
	}{{"memory", 0}, {"runs-merged-at-once", 3 << 20}, {"runs-merged-in-passes", 512 << 10}} {
		b.Run(c.name, func(b *testing.B) {
			st := &SpillStats{}
			for range b.N {
				var in []dataflow.Batch
				for _, r := range batches {
					in = append(in, dataflow.Batch{Record: makeRecord(b, mem, streamSchema, r)})
				}
				capt, err := runGraph(b, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
					if c.limit == 0 {
						return NewSortAtEnd(keys, streamSchema, functions.Builtins())
					}
					return NewSortAtEndWithin(keys, streamSchema, functions.Builtins(), c.limit, st)
				})
				if err != nil {
					b.Fatal(err)
				}
				capt.Release()
			}
			b.ReportMetric(float64(st.Spills.Load())/float64(b.N), "runs/op")
		})
	}
}

// TestTopNPastItsMemoryGoesToRuns: a top n whose n rows pass its memory
// (a deep page: LIMIT 5 OFFSET most of the input) hands its rows to a sort
// in runs on disk that keeps each run's first n rows and merges to n: the
// same rows, in the same order, as the top n in memory.
func TestTopNPastItsMemoryGoesToRuns(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rng := rand.New(rand.NewSource(21))
	_, batches, _ := streamRows(rng, 20_000, 500, 0)
	keys := []SortKey{{Expr: colS, Desc: true}, {Expr: colV}, {Expr: colF}}
	const n = 15_000
	run := func(mk func() (dataflow.Operator, error)) [][]any { return opRows(t, batches, mk) }
	want := run(func() (dataflow.Operator, error) { return NewTopNAtEnd(n, keys, streamSchema, functions.Builtins()) })
	if len(want) != n {
		t.Fatalf("the top n in memory gave %d rows", len(want))
	}
	for _, limit := range []int64{256 << 10, 64 << 10} {
		st := &SpillStats{}
		got := run(func() (dataflow.Operator, error) {
			return NewTopNAtEndWithin(n, keys, streamSchema, functions.Builtins(), limit, st)
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: %d rows, not the top n's %d in its order", limit, len(got), len(want))
		}
		if st.Spills.Load() < 2 {
			t.Errorf("limit %d: %d runs, want several", limit, st.Spills.Load())
		}
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("files left: %v %v", left, err)
	}
}

// opRows runs the operator mk makes over batches of streamSchema's rows and
// returns what it emits, checking that it leaves no buffer behind.
func opRows(t *testing.T, batches [][][]any, mk func() (dataflow.Operator, error)) [][]any {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var in []dataflow.Batch
	for _, b := range batches {
		in = append(in, dataflow.Batch{Record: makeRecord(t, mem, streamSchema, b)})
	}
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) { return mk() })
	if err != nil {
		t.Fatal(err)
	}
	got := recordRows(capturedRecords(capt))
	capt.Release()
	mem.AssertSize(t, 0)
	return got
}
