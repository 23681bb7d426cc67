package dataflow_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// dataflow/builtin's tests run here, in dataflow's test binary, which links
// builtin anyway: one test binary fewer in make test (issue #27).

func sliceRec(mem memory.Allocator, v int64) arrow.Record {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Append(v)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
}

func captureGraph(src func() dataflow.Operator, got *builtin.Captured) *dataflow.Graph {
	g := &dataflow.Graph{Query: "b"}
	s := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return src(), nil }})
	m := g.AddOperator(dataflow.OperatorSpec{Name: "neg", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return builtin.NewMap(func(ctx *dataflow.Context, _ dataflow.Epoch, in arrow.Record) (arrow.Record, error) {
			defer in.Release()
			if in.Column(0).(*array.Int64).Value(0) == 2 {
				return nil, nil // dropped
			}
			return sliceRec(ctx.Allocator(), -in.Column(0).(*array.Int64).Value(0)), nil
		}), nil
	}})
	k := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(i dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(got, i.Index), nil }})
	g.Connect(s, 0, m, 0)
	g.Connect(m, 0, k, 0)
	return g
}

func TestSliceSourceMapCapture(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	g := captureGraph(func() dataflow.Operator {
		return builtin.NewSliceSource([]dataflow.Batch{{Epoch: 1, Record: sliceRec(mem, 1)}, {Epoch: 1, Record: sliceRec(mem, 2)}, {Epoch: 3, Record: sliceRec(mem, 3)}})
	}, &got)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	b := got.Batches()
	if len(b) != 2 || b[0].Epoch != 1 || b[1].Epoch != 3 || b[1].Record.Column(0).(*array.Int64).Value(0) != -3 {
		t.Fatalf("captured %v", b)
	}
	if c := got.Completed(); len(c) != 2 || c[0].Epoch != 1 || c[1].Epoch != 3 {
		t.Fatalf("completed %v", c)
	}
}

// Epochs going backwards are an error, and the unsent records are released.
func TestSliceSourceRejectsDecreasingEpochs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	g := captureGraph(func() dataflow.Operator {
		return builtin.NewSliceSource([]dataflow.Batch{{Epoch: 5, Record: sliceRec(mem, 1)}, {Epoch: 4, Record: sliceRec(mem, 3)}, {Epoch: 6, Record: sliceRec(mem, 4)}})
	}, &got)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100); !errors.Is(err, dataflow.ErrOperator) {
		t.Fatalf("got %v, want ErrOperator", err)
	}
}
