package rel

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

var tableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "name", Type: expr.String, Nullable: true},
}, nil)

// runJoinGraph feeds two sources into a two-input operator.
func runJoinGraph(t *testing.T, mem memory.Allocator, left, right []dataflow.Batch, mk func(dataflow.Instance) (dataflow.Operator, error)) (*builtin.Captured, error) {
	g := &dataflow.Graph{Query: "j"}
	l := g.AddOperator(dataflow.OperatorSpec{Name: "left", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(left), nil }})
	r := g.AddOperator(dataflow.OperatorSpec{Name: "right", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(right), nil }})
	op := g.AddOperator(dataflow.OperatorSpec{Name: "join", Inputs: 2, Outputs: 1, New: mk})
	capt := &builtin.Captured{}
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(capt, in.Index), nil }})
	g.Connect(l, 0, op, 0)
	g.Connect(r, 0, op, 1)
	g.Connect(op, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		return capt, err
	}
	return capt, dataflow.StepUntilDone(ws, 1_000_000)
}

func joinOn(t *testing.T, nLeft int, l, r expr.Expr) JoinSpec {
	eq, err := expr.Builtins().NewCall("equal", l, r)
	if err != nil {
		t.Fatal(err)
	}
	lk, rk, res := SplitJoinCondition(eq, nLeft)
	if len(lk) != 1 || res != nil {
		t.Fatalf("split %s: %v %v %v", eq, lk, rk, res)
	}
	return JoinSpec{LeftKeys: lk, RightKeys: rk}
}

func TestStreamTableJoinMatchesReference(t *testing.T) {
	for _, kind := range []JoinKind{InnerJoin, LeftJoin} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rng := rand.New(rand.NewSource(3))
		rows, batches, epochs := streamRows(rng, 2000, 64, 50_000)
		// The table: ids 0..3 (one duplicated, key 4 missing) and a NULL id.
		table := [][]any{{int64(0), "zero"}, {int64(1), "one"}, {int64(2), "two"}, {int64(2), "deux"}, {int64(3), nil}, {nil, "null"}}
		var left, right []dataflow.Batch
		for i, b := range batches {
			left = append(left, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
		}
		right = append(right, dataflow.Batch{Record: makeRecord(t, mem, tableSchema, table[:3])}, dataflow.Batch{Record: makeRecord(t, mem, tableSchema, table[3:])})
		id := &expr.Column{Index: 5, Name: "id", DataType: arrow.PrimitiveTypes.Int32}
		spec := joinOn(t, 5, colK, id)
		spec.Kind = kind
		capt, err := runJoinGraph(t, mem, left, right, func(dataflow.Instance) (dataflow.Operator, error) {
			return NewStreamTableJoin(spec, streamSchema, tableSchema, functions.Builtins(), nil), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want [][]any
		for _, r := range rows {
			matched := false
			for _, tr := range table {
				if r[0] != nil && tr[0] != nil && r[0] == tr[0] {
					want = append(want, append(append([]any{}, r...), tr...))
					matched = true
				}
			}
			if !matched && kind == LeftJoin {
				want = append(want, append(append([]any{}, r...), nil, nil))
			}
		}
		sameRows(t, "stream-table join", recordRows(capturedRecords(capt)), want)
		capt.Release()
		mem.AssertSize(t, 0)
	}
}

func TestWindowJoinMatchesReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(11))
	lrows, lb, le := streamRows(rng, 600, 50, 30_000)
	rrows, rb, re := streamRows(rng, 500, 40, 30_000)
	// Some rows have no event time: no window, dropped and counted.
	nulls := 0
	for _, rows := range [][][]any{lrows, rrows} {
		for i := 5; i < len(rows); i += 37 {
			rows[i][4] = nil // the batches share the rows
			nulls++
		}
	}
	var left, right []dataflow.Batch
	for i, b := range lb {
		left = append(left, dataflow.Batch{Epoch: EpochOf(le[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	for i, b := range rb {
		right = append(right, dataflow.Batch{Epoch: EpochOf(re[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	rk := &expr.Column{Index: 5, Name: "k2", DataType: expr.Int64}
	spec := WindowJoinSpec{Join: joinOn(t, 5, colK, rk), LeftTime: colTS, RightTime: colTS, Size: 500 * time.Millisecond}
	stats := &Stats{}
	capt, err := runJoinGraph(t, mem, left, right, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewWindowJoin(spec, streamSchema, streamSchema, functions.Builtins(), stats)
	})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Late.Load() != 0 {
		t.Fatalf("%d late rows", stats.Late.Load())
	}
	if got := stats.NullTimes.Load(); got != int64(nulls) {
		t.Fatalf("%d rows counted for a NULL event time, want %d", got, nulls)
	}
	win := func(r []any) int64 { return floorDiv(r[4].(time.Time).UnixMicro(), 500_000) }
	var want [][]any
	for _, l := range lrows {
		for _, r := range rrows {
			if l[0] != nil && l[0] == r[0] && l[4] != nil && r[4] != nil && win(l) == win(r) {
				want = append(want, append(append([]any{}, l...), r...))
			}
		}
	}
	if len(want) < 100 {
		t.Fatalf("reference has only %d matches", len(want))
	}
	sameRows(t, "window join", recordRows(capturedRecords(capt)), want)
}

func TestSplitJoinConditionKeepsResidual(t *testing.T) {
	r := expr.Builtins()
	eq, _ := r.NewCall("equal", colK, &expr.Column{Index: 6, Name: "x", DataType: expr.Int64})
	gt, _ := r.NewCall("greater", colV, &expr.Column{Index: 7, Name: "y", DataType: expr.Int64})
	and, _ := expr.NewLogic(expr.OpAnd, eq, gt)
	lk, rk, res := SplitJoinCondition(and, 5)
	if len(lk) != 1 || rk[0].(*expr.Column).Index != 1 || res != gt {
		t.Fatalf("%v %v %v", lk, rk, res)
	}
}

// Stream batches that waited for the table keep their own ingest time when
// they are probed at the table's end, not the latest the join received.
func TestStreamTableJoinKeepsIngestTimes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var left []dataflow.Batch
	for i := 0; i < 3; i++ {
		left = append(left, dataflow.Batch{Record: makeRecord(t, mem, streamSchema, [][]any{{int64(1), int64(i), 1.5, "x", time.Unix(int64(i), 0)}}),
			Ingest: int64(100 + i)})
	}
	right := []dataflow.Batch{{Record: makeRecord(t, mem, tableSchema, [][]any{{int64(1), "one"}}), Ingest: 999}}
	id := &expr.Column{Index: 5, Name: "id", DataType: arrow.PrimitiveTypes.Int32}
	spec := joinOn(t, 5, colK, id)
	capt, err := runJoinGraph(t, mem, left, right, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewStreamTableJoin(spec, streamSchema, tableSchema, functions.Builtins(), nil), nil
	})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, b := range capt.Batches() {
		got = append(got, b.Ingest)
	}
	if fmt.Sprint(got) != "[100 101 102]" {
		t.Fatalf("ingest times out %v, want [100 101 102]", got)
	}
}
