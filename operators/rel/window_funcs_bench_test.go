package rel

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// BenchmarkWindowFuncs measures window functions over 200k rows in 1,000
// partitions against sorting the same rows by the same keys (the baseline:
// a window operator cannot do with less than one sort).
func BenchmarkWindowFuncs(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(1))
	const n = 200_000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(rng.Intn(1000)), int64(rng.Intn(100)), rng.Float64(), nil, nil}
	}
	rec := makeRecord(b, mem, streamSchema, rows)
	defer rec.Release()
	c := functions.NewCtx(mem)
	fns := functions.Builtins()
	part := []expr.Expr{colK}
	order := []logical.WindowKey{{Expr: colV}}
	rows3 := logical.Frame{Unit: logical.FrameRows, Start: logical.FrameBound{Kind: logical.OffsetPreceding, Offset: 3}, End: logical.FrameBound{Kind: logical.CurrentRow}}
	b.Run("baseline sort", func(b *testing.B) {
		keys := []SortKey{{Expr: colK}, {Expr: colV}}
		var evs []*eval.Evaluator
		for _, k := range keys {
			ev, _ := eval.Compile(k.Expr, streamSchema, fns)
			evs = append(evs, ev)
		}
		for b.Loop() {
			out, err := SortRecords(c, streamSchema, []arrow.Record{rec}, evs, keys)
			if err != nil {
				b.Fatal(err)
			}
			out.Release()
		}
	})
	for _, tc := range []struct {
		name  string
		funcs []*logical.WindowFunc
	}{
		{"rank", []*logical.WindowFunc{{Func: "rank", Partition: part, Order: order, Frame: logical.DefaultFrame, DataType: expr.Int64}}},
		{"rank+running sum+sliding max", []*logical.WindowFunc{
			{Func: "rank", Partition: part, Order: order, Frame: logical.DefaultFrame, DataType: expr.Int64},
			{Func: "sum", Args: []expr.Expr{colF}, Partition: part, Order: order, Frame: logical.DefaultFrame, DataType: expr.Float64},
			{Func: "max", Args: []expr.Expr{colF}, Partition: part, Order: order, Frame: rows3, DataType: expr.Float64},
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			names := make([]string, len(tc.funcs))
			for i := range names {
				names[i] = "w"
			}
			w, err := newWindowEval(tc.funcs, names, streamSchema, fns)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				out, err := w.apply(c, rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
		})
	}
}
