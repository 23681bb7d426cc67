package rel

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// TestSpillJoinMatchesInMemoryJoin joins a table far larger than a tiny
// memory limit and checks the grace hash join gives the in-memory join's
// rows, NULL keys included, and leaves no files behind.
func TestSpillJoinMatchesInMemoryJoin(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rng := rand.New(rand.NewSource(7))
	// The table: 3000 rows over ids 0..999 (some twice), a few NULL ids.
	var table [][]any
	for i := range 3000 {
		var id any = int64(rng.Intn(1000))
		if i%97 == 0 {
			id = nil
		}
		table = append(table, []any{id, fmt.Sprint("n", i)})
	}
	// The stream: keys 0..1199 (some without a match), some NULL.
	rows, batches, epochs := streamRows(rng, 2000, 64, 50_000)
	for _, r := range rows {
		if r[0] != nil {
			r[0] = int64(rng.Intn(1200))
		}
	}
	id := &expr.Column{Index: 5, Name: "id", DataType: arrow.PrimitiveTypes.Int32}
	gt, err := expr.Builtins().NewCall("greater", colV, &expr.Literal{Value: int64(10), DataType: expr.Int64})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		kind     JoinKind
		residual expr.Expr
	}{{"inner", InnerJoin, nil}, {"left", LeftJoin, nil}, {"inner with residual", InnerJoin, gt}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := joinOn(t, 5, colK, id)
			spec.Kind, spec.Residual = tc.kind, tc.residual
			run := func(mk func() dataflow.Operator) [][]any {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				left, right := joinInputs(t, mem, batches, epochs, table)
				capt, err := runJoinGraph(t, mem, left, right, func(dataflow.Instance) (dataflow.Operator, error) { return mk(), nil })
				if err != nil {
					t.Fatal(err)
				}
				got := recordRows(capturedRecords(capt))
				capt.Release()
				mem.AssertSize(t, 0)
				return got
			}
			want := run(func() dataflow.Operator {
				return NewStreamTableJoin(spec, streamSchema, tableSchema, functions.Builtins(), nil)
			})
			if len(want) == 0 {
				t.Fatal("the in-memory join gave no rows")
			}
			for _, limit := range []int64{1 << 10, 1 << 30} {
				st := &SpillStats{}
				got := run(func() dataflow.Operator {
					return NewSpillJoin(spec, streamSchema, tableSchema, functions.Builtins(), limit, st)
				})
				sameRows(t, fmt.Sprintf("join under a %d byte limit", limit), got, want)
				wantSpills := int64(0)
				if limit == 1<<10 {
					wantSpills = 1
				}
				if st.Spills.Load() != wantSpills {
					t.Errorf("limit %d: %d spills, want %d", limit, st.Spills.Load(), wantSpills)
				}
				if wantSpills > 0 && st.Rows.Load() != int64(len(table)+len(rows)) {
					t.Errorf("limit %d: %d rows spilled, want %d", limit, st.Rows.Load(), len(table)+len(rows))
				}
			}
			if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
				t.Errorf("temporary files left: %v %v", left, err)
			}
		})
	}
}

// joinInputs are a stream's batches at their epochs (the left side) and a
// table's rows in batches of 250 (the right).
func joinInputs(t *testing.T, mem memory.Allocator, batches [][][]any, epochs []int64, table [][]any) (left, right []dataflow.Batch) {
	t.Helper()
	for i, b := range batches {
		left = append(left, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	for i := 0; i < len(table); i += 250 {
		right = append(right, dataflow.Batch{Record: makeRecord(t, mem, tableSchema, table[i:i+min(250, len(table)-i)])})
	}
	return left, right
}

// TestSpillJoinSpillsWhenItsQueryIsHalfFull: the rows a join holds were
// charged to the operators that made them, so the query's budget refuses
// those, not the join, and the query fails before the join's own limit
// is reached (a cluster's worker sets it to half the query's memory). The
// join spills once its query's budget is more than half full, whatever
// its own limit, and answers as the in-memory join does.
func TestSpillJoinSpillsWhenItsQueryIsHalfFull(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	rng := rand.New(rand.NewSource(11))
	var table [][]any
	for i := range 3000 {
		table = append(table, []any{int64(rng.Intn(1000)), fmt.Sprint("n", i)})
	}
	rows, batches, epochs := streamRows(rng, 2000, 64, 50_000)
	for _, r := range rows {
		if r[0] != nil {
			r[0] = int64(rng.Intn(1200))
		}
	}
	spec := joinOn(t, 5, colK, &expr.Column{Index: 5, Name: "id", DataType: arrow.PrimitiveTypes.Int32})
	// A residual that keeps about 1 match in 25: the output, which the
	// budget counts as well, stays small beside the inputs.
	few, err := expr.Builtins().NewCall("greater", colV, &expr.Literal{Value: int64(75), DataType: expr.Int64})
	if err != nil {
		t.Fatal(err)
	}
	spec.Residual = few
	// run joins the inputs made within a budget of limit bytes (0: none).
	run := func(mk func() dataflow.Operator, limit int64) [][]any {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		q := dataflow.NewMemory("query", limit, nil)
		left, right := joinInputs(t, q.Allocator(mem), batches, epochs, table)
		got := runInQuery(t, q, q.Allocator(mem), [][]dataflow.Batch{left, right}, mk)
		mem.AssertSize(t, 0)
		return got
	}
	// The inputs, made before the run, are charged to the query from the
	// start: 3/2 of their bytes is a budget two thirds full.
	sized := dataflow.NewMemory("query", 0, nil)
	left, right := joinInputs(t, sized.Allocator(memory.NewGoAllocator()), batches, epochs, table)
	inputs := sized.Used()
	for _, b := range append(left, right...) {
		b.Record.Release()
	}
	want := run(func() dataflow.Operator {
		return NewStreamTableJoin(spec, streamSchema, tableSchema, functions.Builtins(), nil)
	}, 0)
	st := &SpillStats{}
	got := run(func() dataflow.Operator {
		return NewSpillJoin(spec, streamSchema, tableSchema, functions.Builtins(), 1<<30, st)
	}, inputs*3/2)
	if len(want) == 0 {
		t.Fatal("the in-memory join gave no rows")
	}
	sameRows(t, "join in a query two thirds full", got, want)
	if st.Spills.Load() != 1 {
		t.Errorf("%d spills, want 1: the query's budget was past half full", st.Spills.Load())
	}
}

// runInQuery runs op (made by mk) over inputs, one slice source each, in
// a dataflow whose allocator is mem and whose budget is q, and returns the
// rows it emits.
func runInQuery(t *testing.T, q *dataflow.Memory, mem memory.Allocator, inputs [][]dataflow.Batch, mk func() dataflow.Operator) [][]any {
	t.Helper()
	g := &dataflow.Graph{Query: "q"}
	op := g.AddOperator(dataflow.OperatorSpec{Name: "op", Inputs: len(inputs), Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return mk(), nil }})
	for i, in := range inputs {
		src := g.AddOperator(dataflow.OperatorSpec{Name: fmt.Sprint("in", i), Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(in), nil }})
		g.Connect(src, 0, op, i)
	}
	var got [][]any
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: rowsSink(&got)})
	g.Connect(op, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Memory: q})
	if err == nil {
		err = dataflow.StepUntilDone(ws, 1_000_000)
	}
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// rowsSink makes a sink that appends each batch's rows to got and lets the
// batch go, so that a budget's test output holds no part of it.
func rowsSink(got *[][]any) func(dataflow.Instance) (dataflow.Operator, error) {
	return func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewSink(func(b dataflow.Batch) error {
			*got = append(*got, recordRows([]arrow.Record{b.Record})...)
			return nil
		}), nil
	}
}
