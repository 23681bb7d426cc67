package inference

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
)

// An embedding's size is its values, which sit in the tensor column's child:
// the profiler's output_kb counts them.
func TestDataBytesCountsTensorValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	col, err := ml.NewTensorColumn(mem, []int64{8}, make([]float32, 10*8))
	if err != nil {
		t.Fatal(err)
	}
	defer col.Release()
	if got := dataBytes(col.Data()); got < 10*8*4 {
		t.Fatalf("%d bytes counted for 10 rows of 8 floats (at least 320)", got)
	}
}
