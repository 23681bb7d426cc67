package rel

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Rows with a label and a prediction count; equal ones are correct; nulls on
// either side are not labelled; an int64 class compares with its text.
func TestCompareLabels(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"tops", "bags", "", "3", "tops"}, []bool{true, true, false, true, true})
	truth := sb.NewArray()
	sb.AppendValues([]string{"tops", "tops", "bags", "3", ""}, []bool{true, true, true, true, false})
	pred := sb.NewArray()
	sb.Release()
	defer truth.Release()
	defer pred.Release()
	if l, c := compareLabels(truth, pred); l != 3 || c != 2 {
		t.Fatalf("labelled %d, correct %d; want 3 and 2", l, c)
	}
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 2, 3, 3, 5}, nil)
	ids := ib.NewArray()
	ib.Release()
	defer ids.Release()
	if l, c := compareLabels(truth, ids); l != 4 || c != 1 {
		t.Fatalf("text vs int64: labelled %d, correct %d; want 4 and 1", l, c)
	}
}
