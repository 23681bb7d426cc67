package rel

import (
	"fmt"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// A probe batch whose rows each match many (here a cross product: one key
// every row shares) comes out in records of at most maxJoinOut rows, every
// pair once. Before, one record held all 41 million pairs of a q2 batch at
// scale factor 1 and its string offsets wrapped past 2 GiB.
func TestProbeEmitsBoundedPieces(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	one, _ := expr.NewLiteral(int64(0))
	spec := JoinSpec{Kind: InnerJoin, LeftKeys: []expr.Expr{one}, RightKeys: []expr.Expr{one}}
	j, err := NewHashJoin(mem, spec, tableSchema, tableSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Release()
	const nLeft, nRight = 300, 700
	rows := func(n int) [][]any {
		out := make([][]any, n)
		for i := range out {
			out[i] = []any{int64(i), fmt.Sprintf("row %d", i)}
		}
		return out
	}
	right := makeRecord(t, mem, tableSchema, rows(nRight))
	if err := j.Build([]arrow.Record{right}, tableSchema); err != nil {
		t.Fatal(err)
	}
	right.Release()
	left := makeRecord(t, mem, tableSchema, rows(nLeft))
	defer left.Release()
	pieces, total, sum := 0, 0, int64(0)
	err = j.ProbeEach(left, func(out arrow.Record) error {
		defer out.Release()
		pieces++
		if out.NumRows() > maxJoinOut {
			t.Errorf("a piece of %d rows, more than %d", out.NumRows(), maxJoinOut)
		}
		total += int(out.NumRows())
		l, r := out.Column(0).(*array.Int32), out.Column(2).(*array.Int32)
		for i := 0; i < l.Len(); i++ {
			sum += int64(l.Value(i))*nRight + int64(r.Value(i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := nLeft * nRight
	if total != n || sum != int64(n)*int64(n-1)/2 || pieces != (n+maxJoinOut-1)/maxJoinOut {
		t.Fatalf("%d rows in %d pieces (sum %d), want %d in %d", total, pieces, sum, n, (n+maxJoinOut-1)/maxJoinOut)
	}
}
