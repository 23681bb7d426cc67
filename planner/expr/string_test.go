package expr

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/internal/testenv"
)

// chain is a+a+...+a with n additions, left-deep as the binder makes it.
func chain(n int) Expr {
	a := &Column{Name: "a", DataType: arrow.PrimitiveTypes.Int64}
	var e Expr = a
	for range n {
		e = &Call{Func: "add", Args: []Expr{e, a}, DataType: arrow.PrimitiveTypes.Int64}
	}
	return e
}

// String of an expression is linear in its size: each level concatenating
// its children's strings copied O(n^2) bytes, and a 150,000-term a+a+...
// (a column named by its expression) took minutes to name.
func TestStringIsLinear(t *testing.T) {
	small, large := chain(2_500), chain(10_000)
	var s1, s2 string
	a1 := testenv.Allocated(func() { s1 = small.String() })
	a2 := testenv.Allocated(func() { s2 = large.String() })
	if len(s2) < 4*len(s1)-16 {
		t.Fatalf("strings of %d and %d bytes", len(s1), len(s2))
	}
	// Four times the terms: about four times the bytes when linear
	// (a builder's doublings allow up to 2x more), sixteen when quadratic.
	if ratio := float64(a2) / float64(a1); ratio > 8 {
		t.Errorf("String of 4x the terms allocated %.1fx the bytes (%d and %d): not linear", ratio, a1, a2)
	}
}
