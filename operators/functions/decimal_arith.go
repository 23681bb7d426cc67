package functions

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/planner/expr"
)

// decOp is a DECIMAL +, - or *.
type decOp uint8

const (
	decOpAdd decOp = iota
	decOpSub
	decOpMul
)

// slow is the op on any two 128-bit values (the path of the rows whose
// operands or result do not fit 64 bits).
func (op decOp) slow(ret arrow.DataType) func(x, y decimal128.Num) (decimal128.Num, bool) {
	switch op {
	case decOpAdd:
		return decAdd(ret, false)
	case decOpSub:
		return decAdd(ret, true)
	}
	return decMul(ret)
}

// bound64 is the exclusive bound of ret's values as an int64: 10^p for a
// precision p of at most 18; beyond, every int64 is within the type.
func bound64(ret arrow.DataType) int64 {
	p := ret.(*arrow.Decimal128Type).Precision
	if p > 18 {
		return math.MaxInt64
	}
	return int64(maxOf(ret).LowBits())
}

// decArith is a DECIMAL +, - or * over a batch: one loop per operator,
// written straight into the result's Arrow buffer. A row whose operands
// and result fit 64 bits (every row of DECIMAL(15,2) data in practice) is
// int64 arithmetic with its overflow and precision checked inline; any
// other row takes the exact 128-bit path (decAdd, decMul). A constant
// operand is read through an index mask of zero, so the loops have no
// branch for it.
func decArith(c *Ctx, ret arrow.DataType, args []compute.Datum, n int, op decOp) (arrow.Array, error) {
	x, y, err := decOperands(args)
	if err != nil {
		return nil, err
	}
	defer x.release()
	defer y.release()
	valid, nulls, allNull := validity(c.Mem, n, x, y)
	if allNull {
		return array.MakeArrayOfNull(c.Mem, ret, n), nil
	}
	data := memory.NewResizableBuffer(c.Mem)
	data.Resize(n * arrow.Decimal128SizeBytes)
	out := arrow.Decimal128Traits.CastFromBytes(data.Bytes())[:n]
	var vb []byte
	if valid != nil {
		vb = valid.Bytes()
	}
	xm, ym := ^0, ^0
	if x.const_ {
		xm = 0
	}
	if y.const_ {
		ym = 0
	}
	bad := -1
	switch op {
	case decOpAdd:
		bad = decAddLoop(out, x.vals, y.vals, xm, ym, vb, bound64(ret), op.slow(ret), false)
	case decOpSub:
		bad = decAddLoop(out, x.vals, y.vals, xm, ym, vb, bound64(ret), op.slow(ret), true)
	default:
		bad = decMulLoop(out, x.vals, y.vals, xm, ym, vb, bound64(ret), op.slow(ret))
	}
	if bad >= 0 {
		data.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, fmt.Errorf("%w %s: %s", ErrDecimalOverflow, expr.TypeName(ret), decOpText(x.at(bad), y.at(bad), args))
	}
	d := array.NewData(ret, n, []*memory.Buffer{valid, data}, nil, nulls, 0)
	defer d.Release()
	data.Release()
	if valid != nil {
		valid.Release()
	}
	return array.MakeFromData(d), nil
}

// decAddLoop sets out[i] = xs[i&xm] ± ys[i&ym]; it returns the first row
// whose result does not fit the type, or -1. A NULL row (vb's bit clear)
// is zero.
func decAddLoop(out, xs, ys []decimal128.Num, xm, ym int, vb []byte, b64 int64, slow func(x, y decimal128.Num) (decimal128.Num, bool), neg bool) int {
	for i := range out {
		if vb != nil && !bitutil.BitIsSet(vb, i) {
			out[i] = decimal128.Num{}
			continue
		}
		a, b := xs[i&xm], ys[i&ym]
		if fits64(a) && fits64(b) {
			ai, bi := int64(a.LowBits()), int64(b.LowBits())
			var s int64
			var over bool
			if neg {
				s = ai - bi
				over = (ai^bi)&(ai^s) < 0
			} else {
				s = ai + bi
				over = (ai^s)&(bi^s) < 0
			}
			if !over && s < b64 && s > -b64 {
				out[i] = decimal128.FromI64(s)
				continue
			}
		}
		r, ok := slow(a, b)
		if !ok {
			return i
		}
		out[i] = r
	}
	return -1
}

// decMulLoop is decAddLoop for *.
func decMulLoop(out, xs, ys []decimal128.Num, xm, ym int, vb []byte, b64 int64, slow func(x, y decimal128.Num) (decimal128.Num, bool)) int {
	for i := range out {
		if vb != nil && !bitutil.BitIsSet(vb, i) {
			out[i] = decimal128.Num{}
			continue
		}
		a, b := xs[i&xm], ys[i&ym]
		if fits64(a) && fits64(b) {
			ai, bi := int64(a.LowBits()), int64(b.LowBits())
			ua, ub := uint64(ai), uint64(bi)
			if ai < 0 {
				ua = -ua
			}
			if bi < 0 {
				ub = -ub
			}
			hi, lo := bits.Mul64(ua, ub)
			if hi == 0 && lo < uint64(b64) {
				p := int64(lo)
				if (ai < 0) != (bi < 0) {
					p = -p
				}
				out[i] = decimal128.FromI64(p)
				continue
			}
		}
		r, ok := slow(a, b)
		if !ok {
			return i
		}
		out[i] = r
	}
	return -1
}
