package rel

import (
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// TestWindowFuncsSpillByPartition: window functions over a whole input
// past their limit write the rows to files by the PARTITION BY they all
// share (here k; one function also partitions by s) and answer each file
// on its own: the same rows as in memory, ranks, frames, offsets and
// distinct counts included, with nothing left on disk. Functions with no
// PARTITION BY in common hold their rows as before.
func TestWindowFuncsSpillByPartition(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rng := rand.New(rand.NewSource(17))
	_, batches, _ := streamRows(rng, 5000, 128, 0)
	byK := []expr.Expr{colK}
	tsAsc := []logical.WindowKey{{Expr: colTS}}
	ms := float64(time.Millisecond / time.Microsecond)
	funcs := []*logical.WindowFunc{
		{Func: "rank", Partition: byK, Order: []logical.WindowKey{{Expr: colV}}, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "row_number", Partition: []expr.Expr{colS, colK}, Order: tsAsc, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "sum", Args: []expr.Expr{colV}, Partition: byK, Order: tsAsc, DataType: expr.Int64,
			Frame: logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 3}, End: logical.FrameBound{Kind: logical.CurrentRow}}},
		{Func: "max", Args: []expr.Expr{colF}, Partition: byK, Order: tsAsc, DataType: expr.Float64,
			Frame: logical.Frame{Unit: logical.FrameRange, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 50 * ms, Time: true}, End: logical.FrameBound{Kind: logical.OffsetFollowing, Offset: 20 * ms, Time: true}}},
		{Func: "lag", Args: []expr.Expr{colV, lit(t, int64(2)), lit(t, int64(-1))}, Partition: byK, Order: tsAsc, Frame: logical.DefaultFrame, DataType: expr.Int64},
		{Func: "count", Distinct: true, Args: []expr.Expr{colS}, Partition: byK, Order: tsAsc, DataType: expr.Int64, Frame: logical.DefaultFrame},
	}
	names := []string{"r", "rn", "s3", "mx", "lag", "ds"}
	run := func(mk func() (dataflow.Operator, error)) [][]any { return opRows(t, batches, mk) }
	want := run(func() (dataflow.Operator, error) {
		return NewWindowFuncsAtEnd(funcs, names, streamSchema, functions.Builtins())
	})
	st := &SpillStats{}
	got := run(func() (dataflow.Operator, error) {
		return NewWindowFuncsAtEndWithin(funcs, names, streamSchema, functions.Builtins(), 16<<10, st)
	})
	sameRows(t, "window functions spilled by partition", got, want)
	if st.Spills.Load() != 1 || st.Rows.Load() != 5000 {
		t.Errorf("%d spills of %d rows, want 1 of 5000", st.Spills.Load(), st.Rows.Load())
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("files left: %v %v", left, err)
	}
	// No PARTITION BY in common: no spill.
	apart := []*logical.WindowFunc{funcs[0], {Func: "row_number", Partition: []expr.Expr{colS}, Order: tsAsc, Frame: logical.DefaultFrame, DataType: expr.Int64}}
	w, err := NewWindowFuncsAtEndWithin(apart, names[:2], streamSchema, functions.Builtins(), 16<<10, nil)
	if err != nil || w.spill != nil {
		t.Fatalf("PARTITION BY k and PARTITION BY s: %v, spill %v: want none", err, w.spill)
	}
}
