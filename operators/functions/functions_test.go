package functions

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/planner/expr"
)

func literalType(v any) arrow.DataType {
	l, err := expr.NewLiteral(v)
	if err != nil {
		panic(err)
	}
	return l.Type()
}

func sameValue(got, want any) bool {
	if g, ok := got.(float64); ok {
		if w, ok := want.(float64); ok {
			if math.IsInf(w, 0) || math.IsNaN(w) { // IEEE answers of / by zero
				return g == w || math.IsNaN(g) && math.IsNaN(w)
			}
			return math.Abs(g-w) <= 1e-9*math.Max(1, math.Abs(w))
		}
	}
	if g, ok := got.(time.Time); ok {
		w, ok := want.(time.Time)
		return ok && g.Equal(w)
	}
	return reflect.DeepEqual(got, want)
}

// TestEveryBuiltinIsImplementedAndItsExamplesHold runs each documented example
// twice for scalar functions: with arguments as one-row arrays and as scalars.
func TestEveryBuiltinIsImplementedAndItsExamplesHold(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := NewCtx(mem)
	impl := Builtins()
	for _, f := range expr.Builtins().Functions() {
		switch f.Kind {
		case expr.Scalar:
			fn, err := impl.Scalar(f.Name)
			if err != nil {
				t.Errorf("%s: %v", f.Name, err)
				continue
			}
			for _, ex := range f.Examples {
				runScalarExample(t, c, f, fn, ex)
			}
		case expr.AggregateKind:
			if _, err := impl.Aggregate(f.Name); err != nil {
				t.Errorf("%s: %v", f.Name, err)
				continue
			}
			for _, ex := range f.Examples {
				runAggExample(t, mem, impl, f, ex)
			}
		}
	}
}

func runScalarExample(t *testing.T, c *Ctx, f *expr.Function, fn ScalarFunc, ex expr.Example) {
	t.Helper()
	types := make([]arrow.DataType, len(ex.Args))
	for i, a := range ex.Args {
		types[i] = literalType(a)
	}
	res, err := f.Resolve(types)
	if err != nil {
		t.Errorf("%s: %v", f.ExampleString(ex), err)
		return
	}
	for _, asScalar := range []bool{false, true} {
		args := make([]compute.Datum, len(ex.Args))
		for i, a := range ex.Args {
			if asScalar {
				s, err := ScalarOf(a, res.Args[i])
				if err != nil {
					t.Fatal(err)
				}
				args[i] = compute.NewDatum(s)
				continue
			}
			arr, err := ArrayOf(c.Mem, res.Args[i], []any{a})
			if err != nil {
				t.Fatal(err)
			}
			args[i] = compute.NewDatum(arr)
			arr.Release()
		}
		got, err := fn(c, res.Return, args, 1)
		for _, a := range args {
			a.Release()
		}
		if err != nil {
			t.Errorf("%s (scalar args %v): %v", f.ExampleString(ex), asScalar, err)
			continue
		}
		if got.Len() != 1 || !arrow.TypeEqual(got.DataType(), res.Return) {
			t.Errorf("%s: got %d rows of %s, want 1 of %s", f.ExampleString(ex), got.Len(), got.DataType(), res.Return)
		} else if v := exampleValue(got); !sameValue(v, ex.Result) {
			t.Errorf("%s (scalar args %v): got %v", f.ExampleString(ex), asScalar, v)
		}
		got.Release()
	}
}

// exampleValue is row 0 of a result as an example states it: ValueAt's
// value, but a BLOB's bytes themselves.
func exampleValue(a arrow.Array) any {
	if b, ok := a.(*array.Binary); ok && b.IsValid(0) {
		return bytes.Clone(b.Value(0))
	}
	return ValueAt(a, 0)
}

func runAggExample(t *testing.T, mem memory.Allocator, impl *Registry, f *expr.Function, ex expr.Example) {
	t.Helper()
	col := ex.Args[0].([]any)
	var argType arrow.DataType = expr.Null
	for _, v := range col {
		if v != nil {
			argType = literalType(v)
		}
	}
	// Arguments after the column are the call's constants (a quantile's
	// fraction, string_agg's separator).
	types := []arrow.DataType{argType}
	for _, c := range ex.Args[1:] {
		types = append(types, literalType(c))
	}
	res, err := f.Resolve(types)
	if err != nil {
		t.Fatal(err)
	}
	arr, err := ArrayOf(mem, res.Args[0], col)
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	acc, err := impl.NewAccumulator(f.Name, false, res.Args[0], res.Return, ex.Args[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	acc.Grow(1)
	acc.Update(make([]uint32, len(col)), arr, 0)
	got := acc.Finish(mem, []uint32{0})
	defer got.Release()
	if v := ValueAt(got, 0); !sameValue(v, ex.Result) {
		t.Errorf("%s: got %v", f.ExampleString(ex), v)
	}
}

// TestAccumulatorsAgainstRowByRowReference checks grouped accumulators, DISTINCT
// and Merge on random data against sums computed with plain Go maps.
func TestAccumulatorsAgainstRowByRowReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	impl := Builtins()
	const n, groups = 5000, 7
	vals := make([]any, n)
	gids := make([]uint32, n)
	ref := map[string][]float64{}
	distinct := make([]map[int64]bool, groups)
	for i := range vals {
		gids[i] = uint32((i * 31) % groups)
		if i%11 == 0 {
			continue
		}
		v := int64((i*7919)%101 - 50)
		vals[i] = v
		g := gids[i]
		key := fmt.Sprint(g)
		r := ref[key]
		if r == nil {
			r = []float64{0, 0, math.Inf(1), math.Inf(-1)}
		}
		r[0] += float64(v)
		r[1]++
		r[2] = math.Min(r[2], float64(v))
		r[3] = math.Max(r[3], float64(v))
		ref[key] = r
		if distinct[g] == nil {
			distinct[g] = map[int64]bool{}
		}
		distinct[g][v] = true
	}
	arr, err := ArrayOf(mem, expr.Int64, vals)
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	all := []uint32{0, 1, 2, 3, 4, 5, 6}
	for _, tc := range []struct {
		name     string
		distinct bool
		ret      arrow.DataType
		want     func(g uint32) any
	}{
		{"count", false, expr.Int64, func(g uint32) any { return int64(ref[fmt.Sprint(g)][1]) }},
		{"sum", false, expr.Int64, func(g uint32) any { return int64(ref[fmt.Sprint(g)][0]) }},
		{"avg", false, expr.Float64, func(g uint32) any { r := ref[fmt.Sprint(g)]; return r[0] / r[1] }},
		{"min", false, expr.Int64, func(g uint32) any { return int64(ref[fmt.Sprint(g)][2]) }},
		{"max", false, expr.Int64, func(g uint32) any { return int64(ref[fmt.Sprint(g)][3]) }},
		{"count", true, expr.Int64, func(g uint32) any { return int64(len(distinct[g])) }},
		{"sum", true, expr.Int64, func(g uint32) any {
			s := int64(0)
			for v := range distinct[g] {
				s += v
			}
			return s
		}},
	} {
		acc, err := impl.NewAccumulator(tc.name, tc.distinct, expr.Int64, tc.ret)
		if err != nil {
			t.Fatal(err)
		}
		// Feed in two halves into separate groups (g and g+groups), then merge,
		// as a session window would.
		acc.Grow(2 * groups)
		half := n / 2
		acc.Update(gids[:half], arr, 0)
		shifted := make([]uint32, n-half)
		for i, g := range gids[half:] {
			shifted[i] = g + groups
		}
		acc.Update(shifted, arr, half)
		for _, g := range all {
			acc.Merge(g, g+groups)
		}
		got := acc.Finish(mem, all)
		for _, g := range all {
			if v := ValueAt(got, int(g)); !sameValue(v, tc.want(g)) {
				t.Errorf("%s distinct=%v group %d: got %v want %v", tc.name, tc.distinct, g, v, tc.want(g))
			}
		}
		got.Release()
		// A reset group is empty again: 0 for counts, NULL otherwise.
		acc.Reset(3)
		empty := acc.Finish(mem, []uint32{3})
		var want any
		if tc.name == "count" {
			want = int64(0)
		}
		if v := ValueAt(empty, 0); v != want {
			t.Errorf("%s distinct=%v after Reset: %v", tc.name, tc.distinct, v)
		}
		empty.Release()
	}
}

func TestScalarBroadcastAndNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := NewCtx(mem)
	impl := Builtins()
	arr, _ := ArrayOf(mem, expr.String, []any{"ab", nil, "xyz"})
	defer arr.Release()
	upper, _ := impl.Scalar("string_concat") // ||: NULL in, NULL out
	d := compute.NewDatum(arr)
	defer d.Release()
	got, err := upper(c, expr.String, []compute.Datum{d, compute.NewDatum(scalar.NewStringScalar("!"))}, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	want := []any{"ab!", nil, "xyz!"}
	for i, w := range want {
		if v := ValueAt(got, i); !sameValue(v, w) {
			t.Errorf("row %d: %v want %v", i, v, w)
		}
	}
}
