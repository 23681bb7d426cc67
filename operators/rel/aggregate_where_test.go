package rel

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// A filter fused into an aggregation (AddWhere) folds exactly the rows a
// Filter would pass to Add: whether most rows pass (folded in place with a
// scratch group), few do (gathered), all or none do, NULL conditions
// included, and whatever the aggregates (an integer sum is never folded in
// place; a DECIMAL sum is). Nothing leaks.
func TestAddWhereMatchesFilterThenAdd(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := expr.Builtins()
	must := func(e expr.Expr, err error) expr.Expr {
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	agg := func(name string, args ...expr.Expr) *expr.Aggregate {
		a, err := reg.NewAggregate(name, false, args...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	lit := func(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }
	dec := &expr.Cast{Expr: colF, To: expr.Decimal(15, 2)}
	inPlace := AggregateSpec{Group: []expr.Expr{colS, colK}, GroupNames: []string{"s", "k"},
		Aggs: []*expr.Aggregate{agg("count"), agg("count", colF), agg("sum", colF), agg("avg", colF),
			agg("min", colS), agg("max", colF), agg("min", colV), agg("sum", dec), agg("avg", dec)},
		AggNames: []string{"n", "nf", "sf", "af", "mins", "maxf", "minv", "sdec", "adec"}}
	gathered := inPlace
	gathered.Aggs = append(append([]*expr.Aggregate(nil), inPlace.Aggs...), agg("sum", colV))
	gathered.AggNames = append(append([]string(nil), inPlace.AggNames...), "sv")
	noKeys := inPlace
	noKeys.Group, noKeys.GroupNames = nil, nil
	rng := rand.New(rand.NewSource(7))
	_, batches, _ := streamRows(rng, 3000, 256, 0)
	for _, tc := range []struct {
		name string
		spec AggregateSpec
		cond expr.Expr
	}{
		{"most pass", inPlace, must(reg.NewCall("greater", colF, lit(20.0)))},
		{"most pass, general predicate", inPlace, must(expr.NewLogic(expr.OpOr, must(reg.NewCall("greater", colF, lit(20.0))), must(reg.NewCall("equal", colS, lit("a")))))},
		{"most pass, no keys", noKeys, must(reg.NewCall("greater", colF, lit(20.0)))},
		{"most pass, integer sum", gathered, must(reg.NewCall("greater", colF, lit(20.0)))},
		{"few pass", inPlace, must(reg.NewCall("greater", colF, lit(240.0)))},
		{"none pass", inPlace, must(reg.NewCall("greater", colF, lit(1e9)))},
		{"all pass", inPlace, lit(true)},
	} {
		pred, err := eval.NewPredicate(tc.cond, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		fused, err := NewHashAggregate(mem, tc.spec, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		plain, err := NewHashAggregate(mem, tc.spec, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		filter := pred.Clone()
		fctx := functions.NewCtx(mem)
		for _, b := range batches {
			rec := makeRecord(t, mem, streamSchema, b)
			if err := fused.AddWhere(rec, pred); err != nil {
				t.Fatal(err)
			}
			kept, err := filter.Filter(fctx, rec)
			if err != nil {
				t.Fatal(err)
			}
			if kept != nil {
				if err := plain.Add(kept); err != nil {
					t.Fatal(err)
				}
				kept.Release()
			}
			rec.Release()
		}
		if got := fused.foldsInPlace(); got != (len(tc.spec.Aggs) == len(inPlace.Aggs)) {
			t.Fatalf("%s: folds in place %v", tc.name, got)
		}
		finish := func(h *HashAggregate) [][]any {
			recs, err := h.Advance(math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			out := recordRows(recs)
			for _, r := range recs {
				r.Release()
			}
			h.Release()
			return out
		}
		got, want := finish(fused), finish(plain)
		if len(want) == 0 && tc.name != "none pass" {
			t.Fatalf("%s: no groups", tc.name)
		}
		sameRows(t, tc.name, got, want)
	}
}

// BenchmarkFilteredAggregate compares a filter fused into the aggregation
// (AddWhere: kept rows folded in place) with Filter then Add (kept rows
// gathered, every column), on TPC-H Q1's shape: two short string keys of
// 3 x 2 values, four DOUBLE columns, a date filter keeping 98% of the rows;
// and the same with the sums over DECIMAL(15,2) (folded in place since a
// DECIMAL sum cannot fail on a dropped row).
func BenchmarkFilteredAggregate(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(1))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "flag", Type: expr.String, Nullable: true}, {Name: "status", Type: expr.String, Nullable: true},
		{Name: "q", Type: expr.Float64, Nullable: true}, {Name: "p", Type: expr.Float64, Nullable: true},
		{Name: "d", Type: expr.Float64, Nullable: true}, {Name: "day", Type: expr.Int64, Nullable: true},
	}, nil)
	col := func(i int, name string, t arrow.DataType) *expr.Column {
		return &expr.Column{Index: i, Name: name, DataType: t}
	}
	flag, status := col(0, "flag", expr.String), col(1, "status", expr.String)
	q, p, d, day := col(2, "q", expr.Float64), col(3, "p", expr.Float64), col(4, "d", expr.Float64), col(5, "day", expr.Int64)
	const n = 1 << 16
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{[]string{"A", "N", "R"}[rng.Intn(3)], []string{"F", "O"}[rng.Intn(2)],
			float64(rng.Intn(50) + 1), rng.Float64() * 1e5, float64(rng.Intn(11)) / 100, int64(rng.Intn(1000))}
	}
	rec := makeRecord(b, mem, schema, rows)
	defer rec.Release()
	reg := expr.Builtins()
	agg := func(name string, args ...expr.Expr) *expr.Aggregate {
		a, err := reg.NewAggregate(name, false, args...)
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	spec := AggregateSpec{Group: []expr.Expr{flag, status}, GroupNames: []string{"flag", "status"},
		Aggs:     []*expr.Aggregate{agg("sum", q), agg("sum", p), agg("sum", d), agg("count", q), agg("count", p), agg("count")},
		AggNames: []string{"sq", "sp", "sd", "nq", "np", "n"}}
	// The same sums over DECIMAL(15,2) (the specification's money type),
	// cast in both forms alike.
	decSpec := spec
	dec := func(e expr.Expr) expr.Expr { return &expr.Cast{Expr: e, To: expr.Decimal(15, 2)} }
	decSpec.Aggs = []*expr.Aggregate{agg("sum", dec(q)), agg("sum", dec(p)), agg("sum", dec(d)), agg("count", q), agg("count", p), agg("count")}
	cutoff, _ := expr.NewLiteral(int64(980))
	cond, err := reg.NewCall("less_equal", day, cutoff)
	if err != nil {
		b.Fatal(err)
	}
	pred, err := eval.NewPredicate(cond, schema, functions.Builtins())
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"filter+add", "fused", "decimal/filter+add", "decimal/fused"} {
		b.Run(name, func(b *testing.B) {
			sp := spec
			if strings.HasPrefix(name, "decimal/") {
				sp, name = decSpec, strings.TrimPrefix(name, "decimal/")
			}
			h, err := NewHashAggregate(mem, sp, schema, functions.Builtins())
			if err != nil {
				b.Fatal(err)
			}
			defer h.Release()
			f, fctx := pred.Clone(), functions.NewCtx(mem)
			for i := 0; i < b.N; i++ {
				if name == "fused" {
					if err := h.AddWhere(rec, f); err != nil {
						b.Fatal(err)
					}
					continue
				}
				kept, err := f.Filter(fctx, rec)
				if err != nil {
					b.Fatal(err)
				}
				if err := h.Add(kept); err != nil {
					b.Fatal(err)
				}
				kept.Release()
			}
		})
	}
}

// BenchmarkFoldChunks: folding a batch a chunk of rows at a time (each
// chunk reserved before it goes in: chunkRows) against the whole batch
// under one reservation, as before, on BenchmarkFilteredAggregate's Q1
// shape, alternately in one process (go test -bench FoldChunks -count 5).
func BenchmarkFoldChunks(b *testing.B) {
	saved := foldChunkRows
	defer func() { foldChunkRows = saved }()
	for _, chunk := range []int{1 << 30, saved} {
		name := "whole-batch"
		if chunk == saved {
			name = "chunked"
		}
		b.Run(name, func(b *testing.B) {
			foldChunkRows = chunk
			b.Run("filtered", func(b *testing.B) { BenchmarkFilteredAggregate(b) })
		})
	}
}
