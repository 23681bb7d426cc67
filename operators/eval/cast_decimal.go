package eval

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/planner/expr"
)

// Casts to and from DECIMAL and DATE are written here rather than left to
// arrow: DuckDB rounds half away from zero where a cast drops digits
// (CAST(1.25 AS DECIMAL(2,1)) is 1.3, CAST(2.5::DECIMAL AS INT) is 3) where
// arrow refuses, a DECIMAL's DOUBLE is the nearest one, and arrow's DATE
// cast panics on a column with NULLs. ok is false for a pair of types this
// file does not cast.

var pow10i = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

func castTemporalOrDecimal(mem memory.Allocator, a arrow.Array, to arrow.DataType) (out arrow.Array, ok bool, err error) {
	from := a.DataType()
	switch {
	case to.ID() == arrow.DECIMAL128:
		out, err = toDecimal(mem, a, to.(*arrow.Decimal128Type))
		return out, out != nil || err != nil, err
	case from.ID() == arrow.DECIMAL128:
		out, err = fromDecimal(mem, a.(*array.Decimal128), to)
		return out, out != nil || err != nil, err
	case from.ID() == arrow.DATE32 && to.ID() == arrow.TIMESTAMP:
		return datesToTimestamps(mem, a.(*array.Date32), to.(*arrow.TimestampType)), true, nil
	case from.ID() == arrow.TIMESTAMP && to.ID() == arrow.DATE32:
		per := 86400 * unitsPerSecond(from.(*arrow.TimestampType).Unit)
		b := array.NewDate32Builder(mem)
		defer b.Release()
		arrowx.Reserve(b, a.Len())
		ts := a.(*array.Timestamp)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				b.AppendNull()
				continue
			}
			b.UnsafeAppend(arrow.Date32(floorDiv(int64(ts.Value(i)), per)))
		}
		return b.NewArray(), true, nil
	case from.ID() == arrow.DATE32 && to.ID() == arrow.STRING:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		d := a.(*array.Date32)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				b.AppendNull()
				continue
			}
			b.Append(d.Value(i).FormattedString())
		}
		return b.NewArray(), true, nil
	}
	return nil, false, nil
}

func unitsPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Millisecond:
		return 1e3
	case arrow.Microsecond:
		return 1e6
	case arrow.Nanosecond:
		return 1e9
	}
	return 1
}

// datesToTimestamps is a DATE column's midnights: one multiplication per
// value over the column's values as a slice, the validity bitmap copied, as
// a DATE column compared with a TIMESTAMP (the DATE-plus-INTERVAL constants
// of TPC-H) is cast whole for every batch.
func datesToTimestamps(mem memory.Allocator, a *array.Date32, to *arrow.TimestampType) arrow.Array {
	n := a.Len()
	per := 86400 * unitsPerSecond(to.Unit)
	vals := memory.NewResizableBuffer(mem)
	vals.Resize(arrow.TimestampTraits.BytesRequired(n))
	out := arrow.TimestampTraits.CastFromBytes(vals.Bytes())
	for i, d := range a.Date32Values() {
		out[i] = arrow.Timestamp(int64(d) * per)
	}
	var valid *memory.Buffer
	if a.NullN() > 0 {
		valid = memory.NewResizableBuffer(mem)
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, valid.Bytes(), 0)
	}
	data := array.NewData(to, n, []*memory.Buffer{valid, vals}, nil, a.NullN(), 0)
	defer data.Release()
	if valid != nil {
		valid.Release()
	}
	vals.Release()
	return array.MakeFromData(data)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// toDecimal casts integers, doubles, text and other DECIMALs to t; nil, nil
// for another source type.
func toDecimal(mem memory.Allocator, a arrow.Array, t *arrow.Decimal128Type) (arrow.Array, error) {
	var at func(i int) (decimal128.Num, error)
	bound := decimal128.GetScaleMultiplier(int(t.Precision))
	fail := func(v any) error {
		return fmt.Errorf("%w: %v does not fit %s", ErrOutOfRange, v, expr.TypeName(t))
	}
	switch src := a.(type) {
	case *array.Decimal128:
		fs := src.DataType().(*arrow.Decimal128Type).Scale
		if fs == t.Scale && src.DataType().(*arrow.Decimal128Type).Precision <= t.Precision {
			// Same scale, more digits: the values stand as they are.
			d := src.Data()
			nd := array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
			defer nd.Release()
			return array.MakeFromData(nd), nil
		}
		at = func(i int) (decimal128.Num, error) {
			v, ok := rescale(src.Value(i), fs, t.Scale)
			if !ok || !v.Abs().Less(bound) {
				return v, fail(expr.DecimalString(src.Value(i), fs))
			}
			return v, nil
		}
	case *array.Int8, *array.Int16, *array.Int32, *array.Int64, *array.Uint8, *array.Uint16, *array.Uint32:
		at = func(i int) (decimal128.Num, error) {
			x := intAt(src, i)
			v, ok := rescale(decimal128.FromI64(x), 0, t.Scale)
			if !ok || !v.Abs().Less(bound) {
				return v, fail(x)
			}
			return v, nil
		}
	case *array.Uint64:
		at = func(i int) (decimal128.Num, error) {
			v, ok := rescale(decimal128.FromU64(src.Value(i)), 0, t.Scale)
			if !ok || !v.Abs().Less(bound) {
				return v, fail(src.Value(i))
			}
			return v, nil
		}
	case *array.Float64, *array.Float32:
		at = func(i int) (decimal128.Num, error) {
			var x float64
			if f, ok := src.(*array.Float64); ok {
				x = f.Value(i)
			} else {
				x = float64(src.(*array.Float32).Value(i))
			}
			if int(t.Scale) < len(pow10i) {
				if y := x * float64(pow10i[t.Scale]); math.Abs(y) < 1<<53 {
					v := decimal128.FromI64(int64(math.Round(y)))
					if !v.Abs().Less(bound) {
						return v, fail(x)
					}
					return v, nil
				}
			}
			v, ok := expr.DecimalFromFloat(x, t.Scale)
			if !ok || !v.Abs().Less(bound) {
				return v, fail(x)
			}
			return v, nil
		}
	case *array.String:
		at = func(i int) (decimal128.Num, error) {
			s := strings.TrimSpace(src.Value(i))
			r, ok := new(big.Rat).SetString(s)
			if !ok || strings.ContainsAny(s, "/") {
				return decimal128.Num{}, fmt.Errorf("%w: %q is not a number", ErrConversion, src.Value(i))
			}
			v, ok := expr.DecimalFromRat(r, t.Scale)
			if !ok || !v.Abs().Less(bound) {
				return v, fail(s)
			}
			return v, nil
		}
	default:
		return nil, nil
	}
	b := array.NewDecimal128Builder(mem, t)
	defer b.Release()
	arrowx.Reserve(b, a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		v, err := at(i)
		if err != nil {
			return nil, err
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray(), nil
}

func intAt(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	}
	return 0
}

// rescale moves v from scale from to scale to, rounding half away from zero
// when digits are dropped; ok is false on 128-bit overflow.
func rescale(v decimal128.Num, from, to int32) (decimal128.Num, bool) {
	switch {
	case from == to:
		return v, true
	case to > from:
		k := int(to - from)
		if k < len(pow10i) && v.HighBits() == int64(v.LowBits())>>63 {
			x := int64(v.LowBits())
			if m := pow10i[k]; x == 0 || (x < math.MaxInt64/m && x > math.MinInt64/m) {
				return decimal128.FromI64(x * m), true
			}
		}
		out, ok := expr.RescaleDecimal(v, from, to, expr.MaxDecimalPrecision)
		return out, ok
	}
	k := int(from - to)
	if k < len(pow10i) && v.HighBits() == int64(v.LowBits())>>63 {
		x, m := int64(v.LowBits()), pow10i[k]
		q, r := x/m, x%m
		if 2*abs64(r) >= m {
			if x < 0 {
				q--
			} else {
				q++
			}
		}
		return decimal128.FromI64(q), true
	}
	out, ok := expr.RescaleDecimal(v, from, to, expr.MaxDecimalPrecision)
	return out, ok
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// fromDecimal casts a DECIMAL to a DOUBLE, FLOAT, integer or VARCHAR; nil,
// nil for other targets.
func fromDecimal(mem memory.Allocator, a *array.Decimal128, to arrow.DataType) (arrow.Array, error) {
	scale := a.DataType().(*arrow.Decimal128Type).Scale
	b := array.NewBuilder(mem, to)
	defer b.Release()
	arrowx.Reserve(b, a.Len())
	switch bb := b.(type) {
	case *array.Float64Builder:
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				bb.AppendNull()
				continue
			}
			bb.UnsafeAppend(expr.DecimalFloat64(a.Value(i), scale))
		}
	case *array.Float32Builder:
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				bb.AppendNull()
				continue
			}
			bb.UnsafeAppend(float32(expr.DecimalFloat64(a.Value(i), scale)))
		}
	case *array.StringBuilder:
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				bb.AppendNull()
				continue
			}
			bb.Append(expr.DecimalString(a.Value(i), scale))
		}
	default:
		if !arrow.IsInteger(to.ID()) {
			return nil, nil
		}
		lo, above := integerRange(to)
		ib := array.NewInt64Builder(mem)
		defer ib.Release()
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				ib.AppendNull()
				continue
			}
			v, ok := rescale(a.Value(i), scale, 0)
			f := expr.DecimalFloat64(v, 0)
			if !ok || !fits64(v) || f < lo || f >= above {
				return nil, fmt.Errorf("%w: %s does not fit %s", ErrOutOfRange, expr.DecimalString(a.Value(i), scale), expr.TypeName(to))
			}
			ib.Append(int64(v.LowBits()))
		}
		wide := ib.NewArray()
		defer wide.Release()
		if to.ID() == arrow.INT64 {
			wide.Retain()
			return wide, nil
		}
		// Narrowed after the range check above: every value fits.
		for i := 0; i < wide.Len(); i++ {
			if wide.IsNull(i) {
				b.AppendNull()
				continue
			}
			appendInt(b, wide.(*array.Int64).Value(i))
		}
	}
	return b.NewArray(), nil
}

func fits64(n decimal128.Num) bool { return n.HighBits() == int64(n.LowBits())>>63 }

func appendInt(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Uint8Builder:
		b.Append(uint8(v))
	case *array.Uint16Builder:
		b.Append(uint16(v))
	case *array.Uint32Builder:
		b.Append(uint32(v))
	case *array.Uint64Builder:
		b.Append(uint64(v))
	}
}
