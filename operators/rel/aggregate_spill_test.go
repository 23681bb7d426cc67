package rel

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// TestSpillAggregateYieldsWhenTheRestOfItsQueryOverruns: the state's limit
// is its part of the query's budget (a cluster's worker gives it half);
// when the rest of the query holds more than the other part (here its
// input, made before the run and charged from the start), the state goes
// to disk though it is far below its limit, and the answer is the
// in-memory one. Kept, the next charge anywhere in the query is refused:
// a DISTINCT under 10 MiB failed in its scan with the state at 4.8 of its
// 5 MiB.
func TestSpillAggregateYieldsWhenTheRestOfItsQueryOverruns(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	partial, final := countThenSum(t)
	run := func(limit, budget int64, st *SpillStats) [][]any {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		q := dataflow.NewMemory("query", budget, nil)
		in := streamBatches(t, q.Allocator(mem), 31, 4000, 64, 0)
		got := runInQuery(t, q, q.Allocator(mem), [][]dataflow.Batch{in}, func() dataflow.Operator {
			return NewSpillAggregate(partial, final, streamSchema, functions.Builtins(), limit, st)
		})
		mem.AssertSize(t, 0)
		return got
	}
	// The input's bytes, charged to the query before the run.
	sized := dataflow.NewMemory("query", 0, nil)
	for _, b := range streamBatches(t, sized.Allocator(memory.NewGoAllocator()), 31, 4000, 64, 0) {
		defer b.Record.Release()
	}
	input := sized.Used()
	want := run(1<<30, 0, &SpillStats{})
	// A budget twice the state's limit, with the input more than the
	// other half of it.
	st := &SpillStats{}
	got := run(input*3/4, input*3/2, st)
	sameRows(t, "aggregate beside an input over its part", got, want)
	if st.Spills.Load() == 0 {
		t.Error("no spill: the state stayed while the rest of its query held more than its part")
	}
	t.Logf("%d spills", st.Spills.Load())
}
