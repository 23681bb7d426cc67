package functions

import (
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/planner/expr"
)

// Accumulator holds the state of one aggregate for many groups, indexed by dense
// group ids. Updates are vectorised: one call folds a run of rows whose group ids
// were computed by the caller's hash table.
type Accumulator interface {
	// Grow makes room for group ids below n; new groups start empty.
	Grow(n int)
	// Update folds rows [from, from+len(gids)) of arg into groups gids[k]. arg is
	// nil for count(*).
	Update(gids []uint32, arg arrow.Array, from int)
	// Merge folds group src into group dst (SESSION windows merge when a row
	// bridges two sessions). src is left as is; the caller forgets it.
	Merge(dst, src uint32)
	// Finish returns the result of each group in gids, in order.
	Finish(mem memory.Allocator, gids []uint32) arrow.Array
	// Reset empties group g so its id can be reused.
	Reset(g uint32)
}

// Sizer is an accumulator whose groups hold more than a fixed slot each
// (a DISTINCT's sets, a quantile's values, string_agg's strings): what it
// holds, in Go memory, beyond its slots. An aggregation charges it to the
// query's memory (operators/rel), kept as values arrive, so reading it
// costs nothing.
type Sizer interface {
	StateBytes() int64
}

// Per-value costs of Sizer's estimates: a set entry (the key struct and
// its slot at a map's load factor), a new set (its header and first
// group of slots), a string's header.
const (
	setEntryBytes  = 80
	setBytes       = 208
	stringHdrBytes = 16
)

func grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		return s[:n]
	}
	ns := make([]T, n, max(n, 2*cap(s)))
	copy(ns, s)
	return ns
}

// count(*) and count(x).
type countAcc struct {
	star   bool
	counts []int64
}

func newCount(arg, ret arrow.DataType) (Accumulator, error) { return &countAcc{star: arg == nil}, nil }

func (a *countAcc) Grow(n int) { a.counts = grow(a.counts, n) }
func (a *countAcc) Update(gids []uint32, arg arrow.Array, from int) {
	c := a.counts
	if arg != nil && arg.DataType().ID() == arrow.NULL {
		return
	}
	if a.star || arg.NullN() == 0 {
		for _, g := range gids {
			c[g]++
		}
		return
	}
	for k, g := range gids {
		if arg.IsValid(from + k) {
			c[g]++
		}
	}
}
func (a *countAcc) Merge(dst, src uint32) { a.counts[dst] += a.counts[src] }
func (a *countAcc) Reset(g uint32)        { a.counts[g] = 0 }
func (a *countAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	arrowx.Reserve(b, len(gids))
	for _, g := range gids {
		b.UnsafeAppend(a.counts[g])
	}
	return b.NewArray()
}

// number is the physical value type of numeric accumulators.
type number interface{ ~int64 | ~float64 }

func valuesOf[T number](arg arrow.Array) []T {
	if arg.DataType().ID() == arrow.FLOAT64 {
		return any(arg.(*array.Float64).Float64Values()).([]T)
	}
	return any(Int64Values(arg)).([]T)
}

// sum over BIGINT, DOUBLE or INTERVAL; NULL for a group with no non-NULL value.
type sumAcc[T number] struct {
	ret  arrow.DataType
	sums []T
	seen []bool
	err  error
}

// Failer is an Accumulator that can fail as it folds rows (an integer sum
// that overflows); the aggregation checks Err after each batch. The error
// sticks: the group's result would be wrong.
type Failer interface {
	Err() error
}

// addChecked adds, reporting integer overflow: two operands of one sign
// whose sum has the other. Floats never trip it (they go to ±Inf).
func addChecked[T number](x, y T) (T, bool) {
	s := x + y
	return s, !(x > 0 && y > 0 && s < 0 || x < 0 && y < 0 && s >= 0)
}

func (a *sumAcc[T]) add(g uint32, v T) {
	s, ok := addChecked(a.sums[g], v)
	if !ok && a.err == nil {
		a.err = fmt.Errorf("%w: the sum does not fit %s", ErrOverflow, expr.TypeName(a.ret))
	}
	a.sums[g] = s
}

func (a *sumAcc[T]) Err() error { return a.err }

func newSum(arg, ret arrow.DataType) (Accumulator, error) {
	switch kindOf(arg) {
	case kDecimal:
		return newDecimalSum(arg, ret, false), nil
	case kInt:
		return &sumAcc[int64]{ret: ret}, nil
	case kFloat:
		return &sumAcc[float64]{ret: ret}, nil
	}
	return nil, fmt.Errorf("sum: unsupported argument type %s", arg)
}

func (a *sumAcc[T]) Grow(n int) { a.sums = grow(a.sums, n); a.seen = grow(a.seen, n) }
func (a *sumAcc[T]) Update(gids []uint32, arg arrow.Array, from int) {
	vals := valuesOf[T](arg)[from : from+len(gids)]
	seen := a.seen
	if arg.NullN() == 0 {
		if fs, ok := any(a.sums).([]float64); ok {
			// A float sum cannot overflow (it goes to ±Inf): no check per
			// row, and the slices stay in registers.
			fv := any(vals).([]float64)
			for k, g := range gids {
				fs[g] += fv[k]
				seen[g] = true
			}
			return
		}
		for k, g := range gids {
			a.add(g, vals[k])
			seen[g] = true
		}
		return
	}
	for k, g := range gids {
		if arg.IsValid(from + k) {
			a.add(g, vals[k])
			seen[g] = true
		}
	}
}
func (a *sumAcc[T]) Reset(g uint32) { a.sums[g], a.seen[g] = 0, false }
func (a *sumAcc[T]) Merge(dst, src uint32) {
	a.add(dst, a.sums[src])
	a.seen[dst] = a.seen[dst] || a.seen[src]
}
func (a *sumAcc[T]) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, a.ret, len(gids))
	for _, g := range gids {
		switch {
		case !a.seen[g]:
			o.null()
		case o.f64 != nil:
			o.f64(float64(a.sums[g]))
		default:
			o.i64(int64(a.sums[g]))
		}
	}
	return o.finish()
}

// avg as DOUBLE.
type avgAcc[T number] struct {
	sums []float64
	ns   []int64
}

func newAvg(arg, ret arrow.DataType) (Accumulator, error) {
	switch kindOf(arg) {
	case kDecimal:
		// The sum keeps the argument's scale; the mean divides it once.
		return newDecimalSum(arg, expr.Decimal(expr.MaxDecimalPrecision, arg.(*arrow.Decimal128Type).Scale), true), nil
	case kInt:
		return &avgAcc[int64]{}, nil
	case kFloat:
		return &avgAcc[float64]{}, nil
	}
	return nil, fmt.Errorf("avg: unsupported argument type %s", arg)
}

func (a *avgAcc[T]) Grow(n int) { a.sums = grow(a.sums, n); a.ns = grow(a.ns, n) }
func (a *avgAcc[T]) Update(gids []uint32, arg arrow.Array, from int) {
	vals := valuesOf[T](arg)[from : from+len(gids)]
	for k, g := range gids {
		if arg.NullN() == 0 || arg.IsValid(from+k) {
			a.sums[g] += float64(vals[k])
			a.ns[g]++
		}
	}
}
func (a *avgAcc[T]) Reset(g uint32)        { a.sums[g], a.ns[g] = 0, 0 }
func (a *avgAcc[T]) Merge(dst, src uint32) { a.sums[dst] += a.sums[src]; a.ns[dst] += a.ns[src] }
func (a *avgAcc[T]) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	for _, g := range gids {
		if a.ns[g] == 0 {
			b.AppendNull()
		} else {
			b.Append(a.sums[g] / float64(a.ns[g]))
		}
	}
	return b.NewArray()
}

// min and max over any canonical type.
type minMaxAcc[T int64 | float64 | string | bool] struct {
	ret  arrow.DataType
	max  bool
	vals []T
	seen []bool
	get  func(arrow.Array, int) T
	less func(a, b T) bool
}

func newMinMax(arg arrow.DataType, isMax bool) (Accumulator, error) {
	switch kindOf(arg) {
	case kDecimal:
		return &decMinMaxAcc{ret: arg, max: isMax}, nil
	case kInt:
		return &minMaxAcc[int64]{ret: arg, max: isMax, less: func(a, b int64) bool { return a < b },
			get: func(a arrow.Array, i int) int64 { return Int64Values(a)[i] }}, nil
	case kFloat:
		return &minMaxAcc[float64]{ret: arg, max: isMax, less: func(a, b float64) bool { return a < b || (math.IsNaN(b) && !math.IsNaN(a)) },
			get: func(a arrow.Array, i int) float64 { return a.(*array.Float64).Value(i) }}, nil
	case kString:
		return &minMaxAcc[string]{ret: arg, max: isMax, less: func(a, b string) bool { return a < b },
			get: func(a arrow.Array, i int) string { return a.(*array.String).Value(i) }}, nil
	case kBool:
		return &minMaxAcc[bool]{ret: arg, max: isMax, less: func(a, b bool) bool { return !a && b },
			get: func(a arrow.Array, i int) bool { return a.(*array.Boolean).Value(i) }}, nil
	}
	return nil, fmt.Errorf("min/max: unsupported argument type %s", arg)
}

func (a *minMaxAcc[T]) Grow(n int) { a.vals = grow(a.vals, n); a.seen = grow(a.seen, n) }
func (a *minMaxAcc[T]) fold(g uint32, v T) {
	if !a.seen[g] || (a.max && a.less(a.vals[g], v)) || (!a.max && a.less(v, a.vals[g])) {
		a.vals[g] = v
		a.seen[g] = true
	}
}
func (a *minMaxAcc[T]) Update(gids []uint32, arg arrow.Array, from int) {
	// The numeric hot paths: no per-row closure calls.
	switch m := any(a).(type) {
	case *minMaxAcc[int64]:
		updateMinMax(m, Int64Values(arg)[from:from+len(gids)], gids, arg, from)
		return
	case *minMaxAcc[float64]:
		updateMinMax(m, arg.(*array.Float64).Float64Values()[from:from+len(gids)], gids, arg, from)
		return
	}
	for k, g := range gids {
		if arg.IsValid(from + k) {
			a.fold(g, a.get(arg, from+k))
		}
	}
}

func updateMinMax[T int64 | float64](a *minMaxAcc[T], vals []T, gids []uint32, arg arrow.Array, from int) {
	nulls := arg.NullN() != 0
	for k, g := range gids {
		if nulls && arg.IsNull(from+k) {
			continue
		}
		v := vals[k]
		if !a.seen[g] {
			a.vals[g], a.seen[g] = v, true
			continue
		}
		if a.max {
			if v > a.vals[g] {
				a.vals[g] = v
			}
		} else if v < a.vals[g] {
			a.vals[g] = v
		}
	}
}

func (a *minMaxAcc[T]) Reset(g uint32) { a.seen[g] = false }
func (a *minMaxAcc[T]) Merge(dst, src uint32) {
	if a.seen[src] {
		a.fold(dst, a.vals[src])
	}
}
func (a *minMaxAcc[T]) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, a.ret, len(gids))
	for _, g := range gids {
		if !a.seen[g] {
			o.null()
			continue
		}
		switch v := any(a.vals[g]).(type) {
		case int64:
			o.i64(v)
		case float64:
			o.f64(v)
		case string:
			o.str(v)
		case bool:
			o.bl(v)
		}
	}
	return o.finish()
}

// distinctAcc keeps each group's set of distinct non-NULL values and computes the
// aggregate from the set at Finish; sets merge by union, so SESSION merging works.
type distinctAcc struct {
	name    string
	arg     kind
	argType arrow.DataType
	ret     arrow.DataType
	sets    []map[dkey]struct{}
	bytes   int64 // StateBytes
}

func (a *distinctAcc) StateBytes() int64 { return a.bytes }

// add puts key into group g's set, counting it when new.
func (a *distinctAcc) add(g uint32, key dkey) {
	set := a.sets[g]
	if set == nil {
		set = map[dkey]struct{}{}
		a.sets[g] = set
		a.bytes += setBytes
	}
	if _, ok := set[key]; !ok {
		set[key] = struct{}{}
		a.bytes += setEntryBytes + int64(len(key.s))
	}
}

type dkey struct {
	i int64
	f float64
	s string
	d decimal128.Num
}

func newDistinct(name string, arg, ret arrow.DataType) (Accumulator, error) {
	switch name {
	case "count", "sum", "avg", "min", "max":
	default:
		return nil, fmt.Errorf("%w for %s(DISTINCT)", ErrNoImplementation, name)
	}
	k := kindOf(arg)
	if k == kNull {
		return nil, fmt.Errorf("%s(DISTINCT): unsupported argument type %s", name, arg)
	}
	return &distinctAcc{name: name, arg: k, argType: arg, ret: ret}, nil
}

func (a *distinctAcc) Grow(n int) { a.sets = grow(a.sets, n) }
func (a *distinctAcc) Update(gids []uint32, arg arrow.Array, from int) {
	v, _ := arrayVec(arg)
	for k, g := range gids {
		i := from + k
		if arg.IsNull(i) {
			continue
		}
		var key dkey
		switch a.arg {
		case kInt:
			key.i = v.int64(i)
		case kFloat:
			key.f = v.float64(i)
		case kString:
			key.s = v.string(i)
		case kDecimal:
			key.d = v.decimal(i)
		case kBool:
			if v.bool(i) {
				key.i = 1
			}
		}
		a.add(g, key)
	}
}
func (a *distinctAcc) Reset(g uint32) {
	if set := a.sets[g]; set != nil {
		a.bytes -= setBytes
		for k := range set {
			a.bytes -= setEntryBytes + int64(len(k.s))
		}
	}
	a.sets[g] = nil
}
func (a *distinctAcc) Merge(dst, src uint32) {
	for k := range a.sets[src] {
		a.add(dst, k)
	}
}
func (a *distinctAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, a.ret, len(gids))
	for _, g := range gids {
		set := a.sets[g]
		if a.name == "count" {
			o.i64(int64(len(set)))
			continue
		}
		if len(set) == 0 {
			o.null()
			continue
		}
		if a.arg == kDecimal {
			a.finishDecimal(o, set)
			continue
		}
		var si int64
		var sf float64
		var best dkey
		first := true
		for k := range set {
			si += k.i
			sf += k.f
			better := a.name == "max" && (k.i > best.i || k.f > best.f || k.s > best.s) ||
				a.name == "min" && (k.i < best.i || k.f < best.f || k.s < best.s)
			if first || better {
				best, first = k, false
			}
		}
		switch a.name {
		case "sum":
			if a.arg == kFloat {
				o.f64(sf)
			} else {
				o.i64(si)
			}
		case "avg":
			if a.arg == kFloat {
				o.f64(sf / float64(len(set)))
			} else {
				o.f64(float64(si) / float64(len(set)))
			}
		default:
			switch a.arg {
			case kInt:
				o.i64(best.i)
			case kFloat:
				o.f64(best.f)
			case kString:
				o.str(best.s)
			case kBool:
				o.bl(best.i == 1)
			}
		}
	}
	return o.finish()
}

// finishDecimal computes a DISTINCT aggregate of DECIMALs from its set.
func (a *distinctAcc) finishDecimal(o *out, set map[dkey]struct{}) {
	var sum int128
	var best decimal128.Num
	first := true
	for k := range set {
		sum.add(k.d)
		c := CompareDecimal(k.d, best)
		if first || (a.name == "max" && c > 0) || (a.name == "min" && c < 0) {
			best, first = k.d, false
		}
	}
	switch a.name {
	case "sum":
		o.dec(sum.num())
	case "avg":
		scale := int32(0)
		if d, ok := a.argType.(*arrow.Decimal128Type); ok {
			scale = d.Scale
		}
		r := expr.DecimalRat(sum.num(), scale)
		r.Quo(r, new(big.Rat).SetInt64(int64(len(set))))
		f, _ := r.Float64()
		o.f64(f)
	default:
		o.dec(best)
	}
}
