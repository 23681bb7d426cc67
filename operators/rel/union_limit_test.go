package rel

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

func TestUnionAllKeepsEveryRowUnderOneSchema(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(2))
	lrows, lb, le := streamRows(rng, 300, 40, 10_000)
	rrows, rb, re := streamRows(rng, 200, 30, 10_000)
	renamed := arrow.NewSchema(append([]arrow.Field{}, streamSchema.Fields()...), nil)
	f := renamed.Fields()
	f[0].Name = "key"
	renamed = arrow.NewSchema(f, nil)
	var left, right []dataflow.Batch
	for i, b := range lb {
		left = append(left, dataflow.Batch{Epoch: EpochOf(le[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	for i, b := range rb {
		right = append(right, dataflow.Batch{Epoch: EpochOf(re[i]), Record: makeRecord(t, mem, renamed, b)})
	}
	capt, err := runJoinGraph(t, mem, left, right, func(dataflow.Instance) (dataflow.Operator, error) { return NewUnionAll(streamSchema), nil })
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range capt.Batches() {
		if !b.Record.Schema().Equal(streamSchema) {
			t.Fatalf("schema %s", b.Record.Schema())
		}
	}
	sameRows(t, "union all", recordRows(capturedRecords(capt)), append(lrows, rrows...))
}

func TestLimitAfterFilterStopsAtN(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(4))
	rows, batches, epochs := streamRows(rng, 1000, 64, 0)
	var in []dataflow.Batch
	for i, b := range batches {
		in = append(in, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	cond, _ := expr.Builtins().NewCall("greater", colV, &expr.Literal{Value: int64(50), DataType: expr.Int64})
	pred, err := eval.NewPredicate(cond, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	// filter -> limit, as two operators in one graph.
	g := &dataflow.Graph{Query: "l"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return sliceSource(in), nil }})
	stats := &Stats{}
	fil := g.AddOperator(dataflow.OperatorSpec{Name: "filter", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return NewFilter(pred, stats), nil }})
	lim := g.AddOperator(dataflow.OperatorSpec{Name: "limit", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return NewLimit(37), nil }})
	capt := newCaptured()
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return capture(capt, in.Index), nil }})
	g.Connect(src, 0, fil, 0)
	g.Connect(fil, 0, lim, 0)
	g.Connect(lim, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100000); err != nil {
		t.Fatal(err)
	}
	defer capt.Release()
	var want [][]any
	for _, r := range rows {
		if r[1] != nil && r[1].(int64) > 50 && len(want) < 37 {
			want = append(want, r)
		}
	}
	got := recordRows(capturedRecords(capt))
	if len(got) != 37 {
		t.Fatalf("%d rows", len(got))
	}
	sameRows(t, "limit", got, want)
	if stats.RowsIn.Load() != int64(len(rows)) {
		t.Fatalf("filter saw %d rows", stats.RowsIn.Load())
	}
}

// OFFSET: Skip drops the first k rows across batch boundaries, then the limit
// passes n; per window it skips k rows of each epoch.
func TestLimitSkipsOffsetRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(5))
	rows, batches, epochs := streamRows(rng, 300, 16, 0)
	for _, c := range []struct {
		name      string
		mk        func() *Limit
		perWindow bool
		n, k      int
	}{
		{"limit 20 offset 37", func() *Limit { return NewLimit(20).Skip(37) }, false, 20, 37},
		{"offset 250 alone", func() *Limit { return NewLimit(1 << 62).Skip(250) }, false, 1 << 62, 250},
		{"offset past the end", func() *Limit { return NewLimit(5).Skip(400) }, false, 5, 400},
		{"per window: limit 3 offset 2", func() *Limit { return NewLimitPerWindow(3).Skip(2) }, true, 3, 2},
	} {
		var in []dataflow.Batch
		for i, b := range batches {
			in = append(in, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
		}
		g := &dataflow.Graph{Query: "l"}
		src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return sliceSource(in), nil }})
		lim := g.AddOperator(dataflow.OperatorSpec{Name: "limit", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return c.mk(), nil }})
		capt := newCaptured()
		sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return capture(capt, in.Index), nil }})
		g.Connect(src, 0, lim, 0)
		g.Connect(lim, 0, sink, 0)
		ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		if err := dataflow.StepUntilDone(ws, 100000); err != nil {
			t.Fatal(err)
		}
		var want [][]any
		if c.perWindow {
			seen := map[int64]int{}
			for i, r := range rows {
				e := epochs[i/16]
				if k := seen[e]; k >= c.k && k < c.k+c.n {
					want = append(want, r)
				}
				seen[e]++
			}
		} else {
			for i, r := range rows {
				if i >= c.k && i < c.k+c.n {
					want = append(want, r)
				}
			}
		}
		got := recordRows(capturedRecords(capt))
		capt.Release()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", c.name, len(got), len(want))
		}
		sameRows(t, c.name, got, want)
	}
}
