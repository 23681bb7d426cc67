package eval

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// TestFastSelectionAgreesWithMaskPath checks the fused compare-and-select loops
// against the general evaluate-then-select path, for every comparison, both
// operand orders, and columns with NULLs.
func TestFastSelectionAgreesWithMaskPath(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, _ := randomBatch(t, mem, rand.New(rand.NewSource(9)), 2000)
	defer rec.Release()
	reg := expr.Builtins()
	fns := functions.Builtins()
	c := functions.NewCtx(mem)
	a := &expr.Column{Index: 0, Name: "a", DataType: expr.Int64}
	b := &expr.Column{Index: 1, Name: "b", DataType: expr.Float64}
	checked := 0
	for _, op := range []string{"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"} {
		for _, pair := range [][2]expr.Expr{{a, lit(int64(3))}, {lit(int64(3)), a}, {b, lit(2.5)}, {lit(2.5), b}} {
			e, err := reg.NewCall(op, pair[0], pair[1])
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPredicate(e, rec.Schema(), fns)
			if err != nil {
				t.Fatal(err)
			}
			if p.fast == nil {
				continue
			}
			checked++
			fast := append([]int32(nil), p.fast(rec, nil)...)
			mask, err := p.ev.Eval(c, rec)
			if err != nil {
				t.Fatal(err)
			}
			slow := SelectionIndices(mask.(*array.Boolean), nil)
			mask.Release()
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s: fast path selects %d rows, mask path %d", e, len(fast), len(slow))
			}
		}
	}
	if checked != 24 {
		t.Fatalf("fast path taken for %d of 24 predicates", checked)
	}
}
