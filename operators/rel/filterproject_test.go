package rel

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// runOps runs in through ops (chained) and returns the rows that come out
// (as Go values when values is set) and their number.
func runOps(t testing.TB, mem memory.Allocator, in []arrow.Record, values bool, ops ...func() dataflow.Operator) ([][]any, int) {
	var batches []dataflow.Batch
	for _, r := range in {
		r.Retain()
		batches = append(batches, dataflow.Batch{Record: r})
	}
	g := &dataflow.Graph{Query: "fp"}
	prev := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return sliceSource(batches), nil }})
	for i, op := range ops {
		o := g.AddOperator(dataflow.OperatorSpec{Name: fmt.Sprint("op", i), Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return op(), nil }})
		g.Connect(prev, 0, o, 0)
		prev = o
	}
	capt := newCaptured()
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return capture(capt, in.Index), nil }})
	g.Connect(prev, 0, sink, 0)
	defer capt.Release()
	if err := dataflow.Run(t.Context(), g, dataflow.Config{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range capturedRecords(capt) {
		n += int(r.NumRows())
	}
	if !values {
		return nil, n
	}
	return recordRows(capturedRecords(capt)), n
}

// A filter whose output is some of its input's columns (the columns a join
// above reads, without the text only its LIKE read) gives what a filter then
// a projection give: batches where some rows pass, all pass, none pass,
// NULLs in the predicate's column, and the projected columns in another
// order. Nothing leaks.
func TestFilterProjectIsFilterThenProject(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	var in []arrow.Record
	for b := range 6 {
		var rows [][]any
		for i := range 700 {
			var s any = fmt.Sprintf("row %d of %d", i, rng.Intn(9))
			switch {
			case b == 1: // every row passes
				s = "kept"
			case b == 2: // none does
				s = "special requests"
			case rng.Intn(10) == 0:
				s = nil
			case rng.Intn(3) == 0:
				s = "has special requests " + s.(string)
			}
			rows = append(rows, []any{int64(b*1000 + i), int64(rng.Intn(50)), float64(i), s, time.UnixMicro(t0 + int64(i)).UTC()})
		}
		in = append(in, makeRecord(t, mem, streamSchema, rows))
	}
	defer func() {
		for _, r := range in {
			r.Release()
		}
	}()
	pat, _ := expr.NewLiteral("%special%requests%")
	not, err := expr.NewLike(colS, pat, true, false)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := eval.NewPredicate(not, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	proj, err := eval.NewProjection([]expr.Expr{colV, colK}, []string{"v", "k"}, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := runOps(t, mem, in, true, func() dataflow.Operator { return NewFilterProject(pred, proj, nil) })
	want, _ := runOps(t, mem, in, true, func() dataflow.Operator { return NewFilter(pred, nil) }, func() dataflow.Operator { return NewProject(proj) })
	var ref [][]any
	for _, r := range recordRows(in) {
		if r[3] != nil && !strings.Contains(r[3].(string), "special requests") {
			ref = append(ref, []any{r[1], r[0]})
		}
	}
	if len(ref) < 1000 || len(ref) > 3000 {
		t.Fatalf("reference keeps %d rows", len(ref))
	}
	sameRows(t, "filter project", got, ref)
	sameRows(t, "filter then project", want, ref)
}

// BenchmarkFilterProject is Q13's orders side: 1M rows of (o_orderkey,
// o_custkey, o_comment ~50 bytes) under o_comment NOT LIKE
// '%special%requests%', of which the join above reads the keys: a filter
// then a projection (every column of the passing rows gathered, the
// comments too) against the filter gathering only the keys.
func BenchmarkFilterProject(b *testing.B) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "o_orderkey", Type: expr.Int64}, {Name: "o_custkey", Type: expr.Int64}, {Name: "o_comment", Type: expr.String}}, nil)
	rng := rand.New(rand.NewSource(1))
	words := strings.Fields("furiously regular deposits sleep carefully final packages special requests among the ironic accounts")
	var in []arrow.Record
	for start := 0; start < 1<<20; start += 16384 {
		rb := array.NewRecordBuilder(mem, schema)
		for i := range 16384 {
			rb.Field(0).(*array.Int64Builder).Append(int64(start + i))
			rb.Field(1).(*array.Int64Builder).Append(rng.Int63n(150000))
			var sb strings.Builder
			for sb.Len() < 50 {
				sb.WriteString(words[rng.Intn(len(words))] + " ")
			}
			rb.Field(2).(*array.StringBuilder).Append(sb.String())
		}
		in = append(in, rb.NewRecord())
		rb.Release()
	}
	lit, _ := expr.NewLiteral("%special%requests%")
	not, err := expr.NewLike(&expr.Column{Index: 2, Name: "o_comment", DataType: expr.String}, lit, true, false)
	if err != nil {
		b.Fatal(err)
	}
	pred, err := eval.NewPredicate(not, schema, functions.Builtins())
	if err != nil {
		b.Fatal(err)
	}
	proj, err := eval.NewProjection([]expr.Expr{&expr.Column{Index: 0, Name: "o_orderkey", DataType: expr.Int64}, &expr.Column{Index: 1, Name: "o_custkey", DataType: expr.Int64}},
		[]string{"o_orderkey", "o_custkey"}, schema, functions.Builtins())
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"filter then project", "filter project"} {
		b.Run(path, func(b *testing.B) {
			for range b.N {
				ops := []func() dataflow.Operator{func() dataflow.Operator { return NewFilter(pred, nil) }, func() dataflow.Operator { return NewProject(proj) }}
				if path == "filter project" {
					ops = []func() dataflow.Operator{func() dataflow.Operator { return NewFilterProject(pred, proj, nil) }}
				}
				if _, n := runOps(b, mem, in, false, ops...); n == 0 {
					b.Fatal("no rows")
				}
			}
		})
	}
}
