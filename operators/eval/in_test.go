package eval

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// inStringColumn is a record of one string column of n rows drawn from
// {MAIL, SHIP, AIR, RAIL} and NULLs, plain or dictionary-encoded.
func inStringColumn(t testing.TB, mem memory.Allocator, n int, dict bool, r *rand.Rand) arrow.Record {
	modes := []string{"MAIL", "SHIP", "AIR", "RAIL"}
	typ := arrow.DataType(expr.String)
	if dict {
		typ = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: expr.String}
	}
	b := array.NewBuilder(mem, typ)
	defer b.Release()
	for range n {
		switch v := r.IntN(9); {
		case v == 0:
			b.AppendNull()
		case dict:
			if err := b.(*array.BinaryDictionaryBuilder).AppendString(modes[v%4]); err != nil {
				t.Fatal(err)
			}
		default:
			b.(*array.StringBuilder).Append(modes[v%4])
		}
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "m", Type: typ, Nullable: true}}, nil)
	return array.NewRecord(schema, []arrow.Array{col}, int64(n))
}

// x [NOT] IN (string literals) over a string column, plain or dictionary
// encoded, with and without a NULL in the list, answers row by row as the
// general path (each row's value boxed and looked up), NULLs included.
func TestInStringsMatchesTheGeneralPath(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := functions.NewCtx(mem)
	r := rand.New(rand.NewPCG(13, 14))
	lit := func(v any) expr.Expr { l, _ := expr.NewLiteral(v); return l }
	for _, dict := range []bool{false, true} {
		rec := inStringColumn(t, mem, 2000, dict, r)
		col := &expr.Column{Index: 0, Name: "m", DataType: rec.Schema().Field(0).Type}
		for _, negated := range []bool{false, true} {
			for _, list := range [][]expr.Expr{
				{lit("MAIL"), lit("SHIP")},
				{lit("MAIL"), &expr.Literal{Value: nil, DataType: expr.String}},
				{lit("TRUCK")},
			} {
				ev, err := Compile(&expr.In{Expr: col, List: list, Negated: negated}, rec.Schema(), functions.Builtins())
				if err != nil {
					t.Fatal(err)
				}
				fast, err := ev.Eval(c, rec)
				if err != nil {
					t.Fatal(err)
				}
				n := ev.root.(*inNode)
				strs := n.strs
				n.strs = nil // the general path
				slow, err := ev.Eval(c, rec)
				n.strs = strs
				if err != nil {
					t.Fatal(err)
				}
				if strs == nil || !array.Equal(fast, slow) {
					t.Fatalf("dict %v negated %v list %v: typed path %v differs from the general path", dict, negated, list, strs != nil)
				}
				fast.Release()
				slow.Release()
			}
		}
		rec.Release()
	}
}

// BenchmarkInStrings: l_shipmode IN ('MAIL', 'SHIP') over 64K rows, the
// general path (each row's value boxed, baseline) and the string set,
// alternating; ratio is the string set's time over the baseline's.
func BenchmarkInStrings(b *testing.B) {
	mem := memory.NewGoAllocator()
	c := functions.NewCtx(mem)
	rec := inStringColumn(b, mem, 1<<16, false, rand.New(rand.NewPCG(15, 16)))
	defer rec.Release()
	col := &expr.Column{Index: 0, Name: "m", DataType: expr.String}
	mail, _ := expr.NewLiteral("MAIL")
	ship, _ := expr.NewLiteral("SHIP")
	ev, err := Compile(&expr.In{Expr: col, List: []expr.Expr{mail, ship}}, rec.Schema(), functions.Builtins())
	if err != nil {
		b.Fatal(err)
	}
	n := ev.root.(*inNode)
	strs := n.strs
	run := func(s map[string]bool) time.Duration {
		n.strs = s
		start := time.Now()
		out, err := ev.Eval(c, rec)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
		return time.Since(start)
	}
	var base, ours time.Duration
	for range b.N {
		base += run(nil)
		ours += run(strs)
	}
	b.ReportMetric(ours.Seconds()/base.Seconds(), "ratio")
}
