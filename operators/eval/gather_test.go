package eval

import (
	"context"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
)

func TestGatherMatchesRowByRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(1))
	rec, rows := randomBatch(t, mem, rng, 700)
	defer rec.Release()
	// A sliced record exercises buffer offsets.
	sl := rec.NewSlice(13, 613)
	defer sl.Release()
	idx := make([]int32, 900)
	for i := range idx {
		idx[i] = int32(rng.Intn(600))
		if rng.Intn(10) == 0 {
			idx[i] = -1
		}
	}
	out, err := GatherRecord(context.Background(), mem, sl, idx)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	for k, i := range idx {
		for c := 0; c < int(out.NumCols()); c++ {
			got := functions.ValueAt(out.Column(c), k)
			var want any
			if i >= 0 {
				want = rows[13+int(i)][c]
			}
			if !same(got, want) {
				t.Fatalf("row %d (src %d) col %d: got %v want %v", k, i, c, got, want)
			}
		}
	}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.AppendValues([]bool{true, false, true, true, false, false, false, false, true, true}, []bool{true, true, false, true, true, true, true, true, true, true})
	m := b.NewBooleanArray()
	defer m.Release()
	if got := SelectionIndices(m, nil); len(got) != 4 || got[0] != 0 || got[1] != 3 || got[3] != 9 {
		t.Fatalf("selection %v", got)
	}
	sm := array.NewSlice(m, 8, 10).(*array.Boolean)
	defer sm.Release()
	if got := SelectionIndices(sm, nil); len(got) != 2 || got[1] != 1 {
		t.Fatalf("sliced selection %v", got)
	}
	_ = arrow.Null
}
