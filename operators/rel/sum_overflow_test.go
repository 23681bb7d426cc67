package rel

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// An integer sum that overflows fails the aggregation naming the aggregate,
// in plain groups and in SESSION windows (whose groups merge), instead of
// wrapping around.
func TestSumOverflowIsAnError(t *testing.T) {
	r := expr.Builtins()
	sum, err := r.NewAggregate("sum", false, colV)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMicro(t0).UTC()
	for _, w := range []*WindowSpec{nil, {Type: expr.Session, Time: colTS, Gap: time.Second}} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		spec := AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Window: w, Aggs: []*expr.Aggregate{sum}, AggNames: []string{"s"}}
		h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		ok := makeRecord(t, mem, streamSchema, [][]any{{int64(1), int64(math.MaxInt64 - 1), 0.0, "a", ts}})
		if err := h.Add(ok); err != nil {
			t.Fatal(err)
		}
		ok.Release()
		over := makeRecord(t, mem, streamSchema, [][]any{{int64(1), int64(2), 0.0, "a", ts}})
		err = h.Add(over)
		over.Release()
		var xe *eval.ExprError
		if !errors.Is(err, functions.ErrOverflow) || !errors.As(err, &xe) || !strings.HasPrefix(xe.Expr, "sum(") {
			t.Errorf("window %v: got %v, want ErrOverflow naming sum(v)", w, err)
		}
		h.Release()
		mem.AssertSize(t, 0)
	}
}
