package eval

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

var flipped = map[string]string{"less": "greater", "less_equal": "greater_equal", "greater": "less",
	"greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}

// fastSelection recognises `column <cmp> literal` (either order) over a BIGINT,
// TIMESTAMP or DOUBLE column and returns a fused compare-and-select loop.
func fastSelection(e expr.Expr) func(arrow.Record, []int32) []int32 {
	call, ok := e.(*expr.Call)
	if !ok || len(call.Args) != 2 {
		return nil
	}
	op, ok := flipped[call.Func]
	if !ok {
		return nil
	}
	col, c1 := call.Args[0].(*expr.Column)
	lit, c2 := call.Args[1].(*expr.Literal)
	if !c1 || !c2 {
		col, c1 = call.Args[1].(*expr.Column)
		lit, c2 = call.Args[0].(*expr.Literal)
		if !c1 || !c2 {
			return nil
		}
		op = flipped[call.Func] // constant on the left: mirror the comparison
	} else {
		op = call.Func
	}
	if lit.Value == nil {
		return nil
	}
	idx := col.Index
	switch col.DataType.ID() {
	case arrow.INT64, arrow.TIMESTAMP:
		k, ok := lit.Value.(int64)
		if !ok {
			return nil
		}
		cmp := compareFn[int64](op)
		return func(rec arrow.Record, buf []int32) []int32 {
			a := rec.Column(idx)
			return selectWhere(a, functions.Int64Values(a), k, cmp, buf)
		}
	case arrow.FLOAT64:
		k, ok := lit.Value.(float64)
		if !ok {
			return nil
		}
		cmp := compareFn[float64](op)
		return func(rec arrow.Record, buf []int32) []int32 {
			a := rec.Column(idx)
			return selectWhere(a, a.(*array.Float64).Float64Values(), k, cmp, buf)
		}
	}
	return nil
}

type cmpKind int

const (
	cmpLT cmpKind = iota
	cmpLE
	cmpGT
	cmpGE
	cmpEQ
	cmpNE
)

func compareFn[T int64 | float64](op string) cmpKind {
	return map[string]cmpKind{"less": cmpLT, "less_equal": cmpLE, "greater": cmpGT, "greater_equal": cmpGE, "equal": cmpEQ, "not_equal": cmpNE}[op]
}

// selectWhere lists rows whose value compares true with k; NULL rows never do.
// One loop per operator keeps the comparison out of the inner call path.
func selectWhere[T int64 | float64](a arrow.Array, vals []T, k T, op cmpKind, buf []int32) []int32 {
	buf = buf[:0]
	if cap(buf) < len(vals) {
		buf = make([]int32, 0, len(vals))
	}
	out := buf[:len(vals)]
	n := 0
	switch op {
	case cmpLT:
		for i, v := range vals {
			out[n] = int32(i)
			n += b2i(v < k)
		}
	case cmpLE:
		for i, v := range vals {
			out[n] = int32(i)
			n += b2i(v <= k)
		}
	case cmpGT:
		for i, v := range vals {
			out[n] = int32(i)
			n += b2i(v > k)
		}
	case cmpGE:
		for i, v := range vals {
			out[n] = int32(i)
			n += b2i(v >= k)
		}
	case cmpEQ:
		for i, v := range vals {
			out[n] = int32(i)
			n += b2i(v == k)
		}
	case cmpNE:
		for i, v := range vals {
			out[n] = int32(i)
			n += b2i(v != k)
		}
	}
	out = out[:n]
	if a.NullN() > 0 {
		m := 0
		for _, i := range out {
			if a.IsValid(int(i)) {
				out[m] = i
				m++
			}
		}
		out = out[:m]
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
