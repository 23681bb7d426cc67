package rel

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

func TestSortOrdersEachEpochWithNullsLast(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(5))
	rows, batches, _ := streamRows(rng, 500, 60, 0)
	var in []dataflow.Batch
	for _, b := range batches {
		in = append(in, dataflow.Batch{Epoch: 0, Record: makeRecord(t, mem, streamSchema, b)})
	}
	keys := []SortKey{{Expr: colS}, {Expr: colV, Desc: true}}
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
		return NewSort(keys, streamSchema, functions.Builtins())
	})
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	got := recordRows(capturedRecords(capt))
	sameRows(t, "sort multiset", got, rows)
	less := func(a, b []any) bool { // s ASC NULLS LAST, v DESC NULLS FIRST
		if (a[3] == nil) != (b[3] == nil) {
			return b[3] == nil
		}
		if a[3] != nil && a[3] != b[3] {
			return a[3].(string) < b[3].(string)
		}
		if (a[1] == nil) != (b[1] == nil) {
			return a[1] == nil
		}
		return a[1] != nil && a[1].(int64) > b[1].(int64)
	}
	if !sort.SliceIsSorted(got, func(i, j int) bool { return less(got[i], got[j]) }) {
		t.Fatal("not sorted")
	}
}
