package functions

import (
	"fmt"
	"math/big"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/planner/expr"
)

// Aggregates over DECIMAL: sums are exact, in 128 bits (two words added
// with a carry, no big numbers per row), as DuckDB's hugeint sums; avg
// divides the exact sum once, at the end.

// int128 is a running sum: hi:lo as a two's complement 128-bit integer.
type int128 struct {
	hi int64
	lo uint64
}

func (s *int128) add(v decimal128.Num) {
	lo, carry := bits.Add64(s.lo, v.LowBits(), 0)
	s.lo = lo
	s.hi += v.HighBits() + int64(carry)
}

func (s int128) num() decimal128.Num { return decimal128.New(s.hi, s.lo) }

// decSumAcc is sum(DECIMAL(p, s)): DECIMAL(38, s).
type decSumAcc struct {
	ret  arrow.DataType
	sums []int128
	seen []bool
	ns   []int64 // rows per group, for avg
	avg  bool
	err  error
}

func newDecimalSum(arg, ret arrow.DataType, avg bool) Accumulator {
	return &decSumAcc{ret: ret, avg: avg}
}

func (a *decSumAcc) Grow(n int) {
	a.sums, a.seen, a.ns = grow(a.sums, n), grow(a.seen, n), grow(a.ns, n)
}

func (a *decSumAcc) Update(gids []uint32, arg arrow.Array, from int) {
	if arg.DataType().ID() == arrow.NULL {
		return
	}
	vals := decVals(arg)[from : from+len(gids)]
	nulls := arg.NullN() != 0
	for k, g := range gids {
		if nulls && arg.IsNull(from+k) {
			continue
		}
		a.sums[g].add(vals[k])
		a.seen[g] = true
		a.ns[g]++
	}
}

func (a *decSumAcc) Merge(dst, src uint32) {
	a.sums[dst].add(a.sums[src].num())
	a.seen[dst] = a.seen[dst] || a.seen[src]
	a.ns[dst] += a.ns[src]
}

func (a *decSumAcc) Reset(g uint32) { a.sums[g], a.seen[g], a.ns[g] = int128{}, false, 0 }

func (a *decSumAcc) Err() error { return a.err }

func (a *decSumAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	if a.avg {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for _, g := range gids {
			if !a.seen[g] {
				b.AppendNull()
				continue
			}
			b.Append(a.mean(g))
		}
		return b.NewArray()
	}
	b := array.NewDecimal128Builder(mem, a.ret.(*arrow.Decimal128Type))
	defer b.Release()
	bound := maxOf(a.ret)
	for _, g := range gids {
		if !a.seen[g] {
			b.AppendNull()
			continue
		}
		v := a.sums[g].num()
		if !within(v, bound) && a.err == nil {
			a.err = fmt.Errorf("%w: the sum does not fit %s", ErrOverflow, expr.TypeName(a.ret))
		}
		b.Append(v)
	}
	return b.NewArray()
}

// mean is the exact sum over the count, as the nearest double: the sum is
// read as a double first only when it is one exactly.
func (a *decSumAcc) mean(g uint32) float64 {
	scale := a.argScale()
	sum := a.sums[g].num()
	r := expr.DecimalRat(sum, scale)
	r.Quo(r, new(big.Rat).SetInt64(a.ns[g]))
	f, _ := r.Float64()
	return f
}

func (a *decSumAcc) argScale() int32 {
	if d, ok := a.ret.(*arrow.Decimal128Type); ok {
		return d.Scale
	}
	return 0
}

// decMinMaxAcc is min or max of a DECIMAL.
type decMinMaxAcc struct {
	ret  arrow.DataType
	max  bool
	vals []decimal128.Num
	seen []bool
}

func (a *decMinMaxAcc) Grow(n int) { a.vals, a.seen = grow(a.vals, n), grow(a.seen, n) }
func (a *decMinMaxAcc) fold(g uint32, v decimal128.Num) {
	if !a.seen[g] {
		a.vals[g], a.seen[g] = v, true
		return
	}
	c := CompareDecimal(v, a.vals[g])
	if (a.max && c > 0) || (!a.max && c < 0) {
		a.vals[g] = v
	}
}
func (a *decMinMaxAcc) Update(gids []uint32, arg arrow.Array, from int) {
	if arg.DataType().ID() == arrow.NULL {
		return
	}
	vals := decVals(arg)[from : from+len(gids)]
	nulls := arg.NullN() != 0
	for k, g := range gids {
		if nulls && arg.IsNull(from+k) {
			continue
		}
		a.fold(g, vals[k])
	}
}
func (a *decMinMaxAcc) Merge(dst, src uint32) {
	if a.seen[src] {
		a.fold(dst, a.vals[src])
	}
}
func (a *decMinMaxAcc) Reset(g uint32) { a.seen[g] = false }
func (a *decMinMaxAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	b := array.NewDecimal128Builder(mem, a.ret.(*arrow.Decimal128Type))
	defer b.Release()
	for _, g := range gids {
		if !a.seen[g] {
			b.AppendNull()
			continue
		}
		b.Append(a.vals[g])
	}
	return b.NewArray()
}
