package functions

import (
	"fmt"
	"math/big"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/planner/expr"
)

// DECIMAL kernels. Values are Arrow's 128-bit decimals; the binder has
// already aligned the operands (+, - and comparisons see one scale; * sees
// each operand's own and gives their sum). Most values of real data fit 64
// bits, so every kernel first tries int64 arithmetic with an overflow check
// and falls back to 128 bits only for the values that need it. A result
// beyond its type's 38 digits is an error, as in DuckDB, never a wrap.

// fits64 reports whether n is an int64 (its high word is the sign of its
// low one).
func fits64(n decimal128.Num) bool { return n.HighBits() == int64(n.LowBits())>>63 }

// decVals views a DECIMAL array's values (offset applied).
func decVals(a arrow.Array) []decimal128.Num { return a.(*array.Decimal128).Values() }

// decArg is one operand: an array, or a constant broadcast to every row.
type decArg struct {
	vals   []decimal128.Num
	const_ bool
	arr    arrow.Array
	null   bool // a NULL constant
}

func newDecArg(d compute.Datum) (decArg, error) {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		a := d.MakeArray()
		return decArg{vals: decVals(a), arr: a}, nil
	case *compute.ScalarDatum:
		if !d.Value.IsValid() {
			return decArg{const_: true, null: true}, nil
		}
		s, ok := d.Value.(*scalar.Decimal128)
		if !ok {
			return decArg{}, fmt.Errorf("functions: DECIMAL kernel got %s", d.Value.DataType())
		}
		return decArg{vals: []decimal128.Num{s.Value}, const_: true}, nil
	}
	return decArg{}, fmt.Errorf("functions: unsupported datum %s", d)
}

func (d decArg) release() {
	if d.arr != nil {
		d.arr.Release()
	}
}

func (d decArg) at(i int) decimal128.Num {
	if d.const_ {
		return d.vals[0]
	}
	return d.vals[i]
}

// validity is the result's null bitmap over n rows: nil when no operand has
// a NULL; allNull when a constant operand is NULL.
func validity(mem memory.Allocator, n int, args ...decArg) (buf *memory.Buffer, nulls int, allNull bool) {
	for _, a := range args {
		if a.null {
			return nil, n, true
		}
	}
	for _, a := range args {
		if a.arr == nil || a.arr.NullN() == 0 {
			continue
		}
		if buf == nil {
			buf = memory.NewResizableBuffer(mem)
			buf.Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.SetBitsTo(buf.Bytes(), 0, int64(n), true)
		}
		src := a.arr.NullBitmapBytes()
		bitutil.BitmapAnd(buf.Bytes(), src, 0, int64(a.arr.Data().Offset()), buf.Bytes(), 0, int64(n))
	}
	if buf != nil {
		nulls = n - bitutil.CountSetBits(buf.Bytes(), 0, n)
	}
	return buf, nulls, false
}

// decimalResult wraps computed values and a validity bitmap as an array.
func decimalResult(mem memory.Allocator, t arrow.DataType, vals []decimal128.Num, valid *memory.Buffer, nulls int) arrow.Array {
	data := memory.NewResizableBuffer(mem)
	data.Resize(len(vals) * arrow.Decimal128SizeBytes)
	copy(arrow.Decimal128Traits.CastFromBytes(data.Bytes()), vals)
	d := array.NewData(t, len(vals), []*memory.Buffer{valid, data}, nil, nulls, 0)
	defer d.Release()
	data.Release()
	if valid != nil {
		valid.Release()
	}
	return array.MakeFromData(d)
}

// ErrDecimalOverflow: a DECIMAL result has more digits than its type holds.
var ErrDecimalOverflow = fmt.Errorf("%w: the result does not fit", ErrOverflow)

func decOpText(x, y decimal128.Num, args []compute.Datum) string {
	sx, sy := decScale(args[0]), decScale(args[1])
	return expr.DecimalString(x, sx) + " and " + expr.DecimalString(y, sy)
}

func decScale(d compute.Datum) int32 {
	if t, ok := d.(compute.ArrayLikeDatum).Type().(*arrow.Decimal128Type); ok {
		return t.Scale
	}
	return 0
}

// maxOf is the exclusive bound of a DECIMAL of precision p: 10^p.
func maxOf(t arrow.DataType) decimal128.Num {
	return decimal128.GetScaleMultiplier(int(t.(*arrow.Decimal128Type).Precision))
}

func within(r, bound decimal128.Num) bool {
	return r.Abs().Less(bound)
}

// decAdd is x + y (x - y with neg) in 128 bits, checked against ret's
// digits (decArith's loop does the int64 rows itself).
func decAdd(ret arrow.DataType, neg bool) func(x, y decimal128.Num) (decimal128.Num, bool) {
	bound := maxOf(ret)
	return func(x, y decimal128.Num) (decimal128.Num, bool) {
		if neg {
			y = y.Negate()
		}
		r := x.Add(y)
		return r, within(r, bound)
	}
}

func decMul(ret arrow.DataType) func(x, y decimal128.Num) (decimal128.Num, bool) {
	bound := maxOf(ret)
	return func(x, y decimal128.Num) (decimal128.Num, bool) {
		if fits64(x) && fits64(y) {
			a, b := int64(x.LowBits()), int64(y.LowBits())
			ua, ub := uint64(a), uint64(b)
			if a < 0 {
				ua = uint64(-a)
			}
			if b < 0 {
				ub = uint64(-b)
			}
			hi, lo := bits.Mul64(ua, ub)
			r := decimal128.New(int64(hi), lo)
			if hi>>63 != 0 {
				return r, false
			}
			if (a < 0) != (b < 0) {
				r = r.Negate()
			}
			return r, within(r, bound)
		}
		// Beyond 64 bits: exact in big integers (rare: a value of more
		// than 18 digits).
		p := new(big.Int).Mul(x.BigInt(), y.BigInt())
		if !expr.FitsDecimal(p, ret.(*arrow.Decimal128Type).Precision) {
			return decimal128.Num{}, false
		}
		return decimal128.FromBigInt(p), true
	}
}

// decUnary is -x or abs(x).
func decUnary(c *Ctx, ret arrow.DataType, args []compute.Datum, n int, abs bool) (arrow.Array, error) {
	x, err := newDecArg(args[0])
	if err != nil {
		return nil, err
	}
	defer x.release()
	valid, nulls, allNull := validity(c.Mem, n, x)
	if allNull {
		return array.MakeArrayOfNull(c.Mem, ret, n), nil
	}
	out := make([]decimal128.Num, n)
	for i := range out {
		v := x.at(i)
		if !abs || v.Sign() < 0 {
			v = v.Negate()
		}
		out[i] = v
	}
	return decimalResult(c.Mem, ret, out, valid, nulls), nil
}

// decOperands reads a binary kernel's two DECIMAL operands; the caller
// releases both.
func decOperands(args []compute.Datum) (x, y decArg, err error) {
	if x, err = newDecArg(args[0]); err != nil {
		return x, y, err
	}
	if y, err = newDecArg(args[1]); err != nil {
		x.release()
	}
	return x, y, err
}

// decCompare compares two DECIMALs of one scale.
func decCompare(c *Ctx, kernel string, args []compute.Datum, n int) (arrow.Array, error) {
	x, y, err := decOperands(args)
	if err != nil {
		return nil, err
	}
	defer x.release()
	defer y.release()
	valid, nulls, allNull := validity(c.Mem, n, x, y)
	if allNull {
		return array.MakeArrayOfNull(c.Mem, expr.Bool, n), nil
	}
	res := memory.NewResizableBuffer(c.Mem)
	res.Resize(int(bitutil.BytesForBits(int64(n))))
	compareDecimals(res.Bytes(), cmpMask[kernel], x, y, n)
	d := array.NewData(expr.Bool, n, []*memory.Buffer{valid, res}, nil, nulls, 0)
	defer d.Release()
	res.Release()
	if valid != nil {
		valid.Release()
	}
	return array.MakeFromData(d), nil
}

// cmpMask is a comparison as the set of three-way results (-1, 0, 1: bits
// 0, 1, 2) it holds for: a row's bit is mask>>(cmp+1)&1, with no call
// and no branch per row.
var cmpMask = map[string]uint{
	"less": 0b001, "less_equal": 0b011, "equal": 0b010,
	"not_equal": 0b101, "greater": 0b100, "greater_equal": 0b110,
}

// compareDecimals sets bit i of out (zeroed here) where x[i] and y[i] (one
// scale) compare as mask says. A column against a constant, the usual
// filter, compares the values as int64s where they fit in 64 bits (every
// DECIMAL of up to 18 digits) in one loop over the column.
func compareDecimals(out []byte, mask uint, x, y decArg, n int) {
	clear(out)
	set := func(i, r int) {
		out[i>>3] |= byte(mask>>uint(r+1)&1) << uint(i&7)
	}
	if x.const_ && !y.const_ {
		// c op y is y op' c, op' the mirror: bits 0 and 2 swap.
		mask = mask&0b010 | mask>>2&1 | mask&1<<2
		x, y = y, x
	}
	if !x.const_ && y.const_ && fits64(y.vals[0]) {
		compareColumnConst(out, mask, x.vals[:n], y.vals[0])
		return
	}
	for i := 0; i < n; i++ {
		set(i, CompareDecimal(x.at(i), y.at(i)))
	}
}

// compareColumnConst is compareDecimals of a column against a constant
// that fits in 64 bits (out already cleared). A row that fits too (every
// row of a DECIMAL of up to 18 digits) is three int64 comparisons whose
// outcomes are ANDed with the mask's bits, no branch on the data, eight
// rows to an output byte: a filter's selectivity does not make the branch
// predictor guess (l_discount BETWEEN passes rows at random).
func compareColumnConst(out []byte, mask uint, vals []decimal128.Num, k decimal128.Num) {
	c := int64(k.LowBits())
	lt, eq, gt := byte(mask&1), byte(mask>>1&1), byte(mask>>2&1)
	row := func(v decimal128.Num) byte {
		lo := int64(v.LowBits())
		if v.HighBits() != lo>>63 {
			return byte(mask >> uint(v.Cmp(k)+1) & 1)
		}
		return lt&b2u(lo < c) | eq&b2u(lo == c) | gt&b2u(lo > c)
	}
	full := len(vals) &^ 7
	for i := 0; i < full; i += 8 {
		v := vals[i : i+8 : i+8]
		out[i>>3] = row(v[0]) | row(v[1])<<1 | row(v[2])<<2 | row(v[3])<<3 |
			row(v[4])<<4 | row(v[5])<<5 | row(v[6])<<6 | row(v[7])<<7
	}
	for i := full; i < len(vals); i++ {
		out[i>>3] |= row(vals[i]) << uint(i&7)
	}
}

// b2u is 1 for true (the compiler makes it a SETcc, not a branch).
func b2u(b bool) byte {
	var u byte
	if b {
		u = 1
	}
	return u
}

// CompareDecimal is -1, 0 or 1 as x is less than, equal to or greater than
// y (one scale).
func CompareDecimal(x, y decimal128.Num) int {
	if fits64(x) && fits64(y) {
		a, b := int64(x.LowBits()), int64(y.LowBits())
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	return x.Cmp(y)
}

func isDecimal(d compute.Datum) bool { return typeID(d) == arrow.DECIMAL128 }

// calendarArith is TIMESTAMP ± a calendar interval (INTERVAL '3' MONTH),
// by the calendar (expr.AddCalendar), or the sum or difference of two
// calendar intervals.
func calendarArith(c *Ctx, ret arrow.DataType, args []compute.Datum, n int, sign int) (arrow.Array, error) {
	if typeID(args[0]) == arrow.INTERVAL_MONTH_DAY_NANO && typeID(args[1]) == arrow.INTERVAL_MONTH_DAY_NANO {
		return rowwiseCalendar(c, ret, args, n, func(o *array.MonthDayNanoIntervalBuilder, a, b arrow.MonthDayNanoInterval) {
			o.Append(arrow.MonthDayNanoInterval{Months: a.Months + int32(sign)*b.Months, Days: a.Days + int32(sign)*b.Days,
				Nanoseconds: a.Nanoseconds + int64(sign)*b.Nanoseconds})
		})
	}
	ts, iv := args[0], args[1]
	if typeID(ts) == arrow.INTERVAL_MONTH_DAY_NANO {
		ts, iv = iv, ts
	}
	tv, err := newVec(ts)
	if err != nil {
		return nil, err
	}
	defer releaseVecs([]*vec{tv})
	ivAt, ivNull, release, err := calendarValues(iv)
	if err != nil {
		return nil, err
	}
	defer release()
	b := array.NewTimestampBuilder(c.Mem, ret.(*arrow.TimestampType))
	defer b.Release()
	arrowx.Reserve(b, n)
	for i := 0; i < n; i++ {
		if tv.isNull(i) || ivNull(i) {
			b.AppendNull()
			continue
		}
		t := expr.AddCalendar(fromMicros(tv.int64(i)), ivAt(i), sign)
		b.UnsafeAppend(arrow.Timestamp(t.UnixMicro()))
	}
	return b.NewArray(), nil
}

func rowwiseCalendar(c *Ctx, ret arrow.DataType, args []compute.Datum, n int, f func(o *array.MonthDayNanoIntervalBuilder, a, b arrow.MonthDayNanoInterval)) (arrow.Array, error) {
	aAt, aNull, ra, err := calendarValues(args[0])
	if err != nil {
		return nil, err
	}
	defer ra()
	bAt, bNull, rb, err := calendarValues(args[1])
	if err != nil {
		return nil, err
	}
	defer rb()
	o := array.NewMonthDayNanoIntervalBuilder(c.Mem)
	defer o.Release()
	for i := 0; i < n; i++ {
		if aNull(i) || bNull(i) {
			o.AppendNull()
			continue
		}
		f(o, aAt(i), bAt(i))
	}
	return o.NewArray(), nil
}

// calendarValues reads a calendar interval datum row by row.
func calendarValues(d compute.Datum) (at func(int) arrow.MonthDayNanoInterval, null func(int) bool, release func(), err error) {
	switch d := d.(type) {
	case *compute.ScalarDatum:
		s, ok := d.Value.(*scalar.MonthDayNanoInterval)
		if !ok {
			return nil, nil, nil, fmt.Errorf("functions: calendar interval kernel got %s", d.Value.DataType())
		}
		valid := s.IsValid()
		return func(int) arrow.MonthDayNanoInterval { return s.Value }, func(int) bool { return !valid }, func() {}, nil
	case *compute.ArrayDatum:
		a := d.MakeArray().(*array.MonthDayNanoInterval)
		return a.Value, a.IsNull, a.Release, nil
	}
	return nil, nil, nil, fmt.Errorf("functions: unsupported datum %s", d)
}
