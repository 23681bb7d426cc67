package dataflow_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

// kvRecord makes a record with keys [from, from+n) and v = "v<key>".
func kvRecord(mem memory.Allocator, from, n int) arrow.Record {
	b := array.NewRecordBuilder(mem, kvSchema)
	defer b.Release()
	kb := b.Field(0).(*array.Int64Builder)
	vb := b.Field(1).(*array.StringBuilder)
	for i := from; i < from+n; i++ {
		kb.Append(int64(i))
		vb.Append("v" + itoa(i))
	}
	return b.NewRecord()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var buf [20]byte
	p := len(buf)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		p--
		buf[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		buf[p] = '-'
	}
	return string(buf[p:])
}

func keys(rec arrow.Record) []int64 {
	return rec.Column(0).(*array.Int64).Int64Values()
}

func checkedAlloc(t *testing.T) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func op(name string, inputs, outputs int, workers []int, mk func(dataflow.Instance) dataflow.Operator) dataflow.OperatorSpec {
	return dataflow.OperatorSpec{
		Name: name, Inputs: inputs, Outputs: outputs, Workers: workers,
		New: func(i dataflow.Instance) (dataflow.Operator, error) { return mk(i), nil },
	}
}

// sliceSource builds, per instance, batches from gen(instance).
func sliceSource(name string, workers []int, gen func(inst int) []dataflow.Batch) dataflow.OperatorSpec {
	return op(name, 0, 1, workers, func(i dataflow.Instance) dataflow.Operator {
		return builtin.NewSliceSource(gen(i.Index))
	})
}

func capture(name string, inputs int, workers []int, into *builtin.Captured) dataflow.OperatorSpec {
	return op(name, inputs, 0, workers, func(i dataflow.Instance) dataflow.Operator {
		return builtin.NewCapture(into, i.Index)
	})
}

func passthrough(name string, workers []int) dataflow.OperatorSpec {
	return op(name, 1, 1, workers, func(dataflow.Instance) dataflow.Operator { return builtin.NewMap(nil) })
}

// checkCompletions asserts the notification contract on a capture: when
// instance i heard epoch e complete, it had already received every batch at
// an epoch <= e it would ever receive; and completions come in epoch order.
func checkCompletions(t *testing.T, got *builtin.Captured) {
	t.Helper()
	batches := got.Batches()
	perInst := map[int][]dataflow.Epoch{}
	for _, b := range batches {
		perInst[b.Instance] = append(perInst[b.Instance], b.Epoch)
	}
	last := map[int]dataflow.Epoch{}
	seen := map[int]bool{}
	for _, c := range got.Completed() {
		if seen[c.Instance] && c.Epoch <= last[c.Instance] {
			t.Fatalf("instance %d: completion of %v after %v", c.Instance, c.Epoch, last[c.Instance])
		}
		seen[c.Instance], last[c.Instance] = true, c.Epoch
		for j, e := range perInst[c.Instance] {
			if e <= c.Epoch && j >= c.Batches {
				t.Fatalf("instance %d: batch %d at epoch %v arrived after epoch %v was complete", c.Instance, j, e, c.Epoch)
			}
		}
	}
}
