package dataflow_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// sumPerEpoch is a minimal windowed operator: it sums column 0 per epoch and
// emits the sum when the epoch is complete on its input.
type sumPerEpoch struct {
	dataflow.Base
	sums map[dataflow.Epoch]int64
}

func (s *sumPerEpoch) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	defer b.Record.Release()
	for _, v := range b.Record.Column(0).(*array.Int64).Int64Values() {
		s.sums[b.Epoch] += v
	}
	return ctx.NotifyAt(cap, b.Epoch)
}

func (s *sumPerEpoch) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	bld := array.NewInt64Builder(ctx.Allocator())
	defer bld.Release()
	bld.Append(s.sums[cap.Epoch()])
	delete(s.sums, cap.Epoch())
	col := bld.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "sum", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return ctx.Emit(0, cap, array.NewRecord(schema, []arrow.Array{col}, 1))
}

// Two source instances on workers 0 and 1 exchange rows by key to two
// summing instances on worker 2; a sink on worker 0 prints each epoch's
// partial sums as the epoch completes.
func ExampleRun() {
	mem := memory.NewGoAllocator()
	g := &dataflow.Graph{Query: "example"}
	src := g.AddOperator(dataflow.OperatorSpec{
		Name: "numbers", Outputs: 1, Workers: []int{0, 1},
		New: func(inst dataflow.Instance) (dataflow.Operator, error) {
			return builtin.NewGenerator(4, func(i int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
				return dataflow.Epoch(i / 2), kvRecord(mem, 10*inst.Index+i, 1), nil
			}), nil
		},
	})
	sum := g.AddOperator(dataflow.OperatorSpec{
		Name: "sum", Inputs: 1, Outputs: 1, Workers: []int{2, 2},
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			return &sumPerEpoch{sums: map[dataflow.Epoch]int64{}}, nil
		},
	})
	var got builtin.Captured
	sink := g.AddOperator(dataflow.OperatorSpec{
		Name: "sink", Inputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(&got, 0), nil },
	})
	g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: sum}, Kind: dataflow.Exchange, Partition: dataflow.HashColumns(0)})
	g.Connect(sum, 0, sink, 0)

	if err := dataflow.Run(context.Background(), g, dataflow.Config{Allocator: mem}); err != nil {
		fmt.Println(err)
		return
	}
	total := map[dataflow.Epoch]int64{}
	for _, b := range got.Batches() {
		total[b.Epoch] += b.Record.Column(0).(*array.Int64).Value(0)
	}
	got.Release()
	fmt.Println("epoch 0:", total[0], "epoch 1:", total[1], "completed:", len(got.Completed()))
	// Output: epoch 0: 22 epoch 1: 30 completed: 2
}
