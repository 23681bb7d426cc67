package functions

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// The aggregates analysts reach for beyond count/sum/avg/min/max, with
// DuckDB's definitions: the sample and population variance and standard
// deviation, the median and quantiles, and string_agg.

// momentsAcc keeps, per group, the count, mean and sum of squared deviations
// (Welford's update, Chan's merge): numerically stable where sum(x^2) -
// sum(x)^2/n cancels.
type momentsAcc struct {
	pop, sqrt bool // population (n) or sample (n-1); standard deviation
	n         []float64
	mean, m2  []float64
}

func newMoments(pop, sqrt bool) AggFunc {
	return func(arg, ret arrow.DataType) (Accumulator, error) {
		if k := kindOf(arg); k != kInt && k != kFloat && arg.ID() != arrow.NULL {
			return nil, fmt.Errorf("variance of %s", arg)
		}
		return &momentsAcc{pop: pop, sqrt: sqrt}, nil
	}
}

func (a *momentsAcc) Grow(n int) {
	a.n, a.mean, a.m2 = grow(a.n, n), grow(a.mean, n), grow(a.m2, n)
}

func (a *momentsAcc) Update(gids []uint32, arg arrow.Array, from int) {
	if arg.DataType().ID() == arrow.NULL {
		return
	}
	v, err := arrayVec(arg)
	if err != nil {
		return
	}
	for k, g := range gids {
		i := from + k
		if arg.IsNull(i) {
			continue
		}
		x := numAt(v, i)
		a.n[g]++
		d := x - a.mean[g]
		a.mean[g] += d / a.n[g]
		a.m2[g] += d * (x - a.mean[g])
	}
}

func numAt(v *vec, i int) float64 {
	if v.kind == kFloat {
		return v.float64(i)
	}
	return float64(v.int64(i))
}

func (a *momentsAcc) Merge(dst, src uint32) {
	na, nb := a.n[dst], a.n[src]
	if nb == 0 {
		return
	}
	n := na + nb
	d := a.mean[src] - a.mean[dst]
	a.mean[dst] += d * nb / n
	a.m2[dst] += a.m2[src] + d*d*na*nb/n
	a.n[dst] = n
}

func (a *momentsAcc) Reset(g uint32) { a.n[g], a.mean[g], a.m2[g] = 0, 0, 0 }

func (a *momentsAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, arrow.PrimitiveTypes.Float64, len(gids))
	for _, g := range gids {
		den := a.n[g] - 1
		if a.pop {
			den = a.n[g]
		}
		if den <= 0 {
			// DuckDB: NULL for no rows, and for one row in the sample forms.
			o.null()
			continue
		}
		v := a.m2[g] / den
		if a.sqrt {
			v = math.Sqrt(v)
		}
		o.f64(v)
	}
	return o.finish()
}

// quantileAcc keeps each group's non-NULL values and picks the quantile at
// Finish: continuous (interpolated, DOUBLE: quantile_cont, median) or
// discrete (a value of the group: quantile_disc).
type quantileAcc struct {
	q     float64
	cont  bool
	kind  kind
	ret   arrow.DataType
	vals  [][]float64
	ivals [][]int64 // integers and timestamps keep exact values
	bytes int64     // StateBytes: the values' slices as allocated
}

func (a *quantileAcc) StateBytes() int64 { return a.bytes }

func newQuantile(cont bool, fixed float64) ParamAggFunc {
	return func(arg, ret arrow.DataType, params ...any) (Accumulator, error) {
		q := fixed
		if fixed < 0 {
			if len(params) != 1 {
				return nil, fmt.Errorf("quantile needs its fraction as a constant")
			}
			f, ok := params[0].(float64)
			if !ok {
				if i, isInt := params[0].(int64); isInt {
					f, ok = float64(i), true
				}
			}
			if !ok || f < 0 || f > 1 || math.IsNaN(f) {
				return nil, fmt.Errorf("%w: the quantile fraction must be from 0 to 1, got %v", ErrBadArgument, params[0])
			}
			q = f
		}
		k := kindOf(arg)
		if k != kInt && k != kFloat && arg.ID() != arrow.NULL {
			return nil, fmt.Errorf("quantile of %s", arg)
		}
		return &quantileAcc{q: q, cont: cont, kind: k, ret: ret}, nil
	}
}

func (a *quantileAcc) Grow(n int) { a.vals, a.ivals = grow(a.vals, n), grow(a.ivals, n) }

func (a *quantileAcc) Update(gids []uint32, arg arrow.Array, from int) {
	if arg.DataType().ID() == arrow.NULL {
		return
	}
	v, err := arrayVec(arg)
	if err != nil {
		return
	}
	for k, g := range gids {
		i := from + k
		if arg.IsNull(i) {
			continue
		}
		c := cap(a.vals[g]) + cap(a.ivals[g])
		if a.kind == kInt {
			a.ivals[g] = append(a.ivals[g], v.int64(i))
		} else {
			a.vals[g] = append(a.vals[g], v.float64(i))
		}
		a.bytes += 8 * int64(cap(a.vals[g])+cap(a.ivals[g])-c)
	}
}

func (a *quantileAcc) Merge(dst, src uint32) {
	c := cap(a.vals[dst]) + cap(a.ivals[dst])
	a.vals[dst] = append(a.vals[dst], a.vals[src]...)
	a.ivals[dst] = append(a.ivals[dst], a.ivals[src]...)
	a.bytes += 8 * int64(cap(a.vals[dst])+cap(a.ivals[dst])-c)
}

func (a *quantileAcc) Reset(g uint32) {
	a.bytes -= 8 * int64(cap(a.vals[g])+cap(a.ivals[g]))
	a.vals[g], a.ivals[g] = nil, nil
}

func (a *quantileAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, a.ret, len(gids))
	for _, g := range gids {
		n := len(a.vals[g]) + len(a.ivals[g])
		if n == 0 {
			o.null()
			continue
		}
		at := func(i int) float64 { return a.vals[g][i] }
		if a.kind == kInt {
			slices.Sort(a.ivals[g])
			at = func(i int) float64 { return float64(a.ivals[g][i]) }
		} else {
			slices.Sort(a.vals[g])
		}
		if !a.cont {
			// DuckDB's discrete quantile: position ceil(n * q) - 1, at
			// least 0 (computed as DuckDB does, from n - n*q).
			i := max(1, n-int(math.Floor(float64(n)-float64(n)*a.q))) - 1
			if a.kind == kInt {
				o.i64(a.ivals[g][i])
			} else {
				o.f64(a.vals[g][i])
			}
			continue
		}
		// Continuous: interpolate between the neighbours of (n-1) * q.
		pos := float64(n-1) * a.q
		lo := int(math.Floor(pos))
		hi := int(math.Ceil(pos))
		v := at(lo)
		if hi != lo {
			v += (pos - float64(lo)) * (at(hi) - at(lo))
		}
		o.f64(v)
	}
	return o.finish()
}

// stringAggAcc concatenates each group's non-NULL strings in arrival order,
// separated by sep; NULL for a group without any.
type stringAggAcc struct {
	sep   string
	parts [][]string
	bytes int64 // StateBytes: the parts' slices as allocated and their strings
}

func (a *stringAggAcc) StateBytes() int64 { return a.bytes }

// keep appends parts to group g's, counting them.
func (a *stringAggAcc) keep(g uint32, parts ...string) {
	c := cap(a.parts[g])
	a.parts[g] = append(a.parts[g], parts...)
	a.bytes += stringHdrBytes * int64(cap(a.parts[g])-c)
	for _, p := range parts {
		a.bytes += int64(len(p))
	}
}

func newStringAgg(arg, ret arrow.DataType, params ...any) (Accumulator, error) {
	sep := ","
	if len(params) == 1 {
		s, ok := params[0].(string)
		if !ok {
			return nil, fmt.Errorf("%w: string_agg's separator must be a VARCHAR constant, got %v", ErrBadArgument, params[0])
		}
		sep = s
	}
	if k := kindOf(arg); k != kString && arg.ID() != arrow.NULL {
		return nil, fmt.Errorf("string_agg of %s", arg)
	}
	return &stringAggAcc{sep: sep}, nil
}

func (a *stringAggAcc) Grow(n int) { a.parts = grow(a.parts, n) }

func (a *stringAggAcc) Update(gids []uint32, arg arrow.Array, from int) {
	if arg.DataType().ID() == arrow.NULL {
		return
	}
	v, err := arrayVec(arg)
	if err != nil {
		return
	}
	for k, g := range gids {
		i := from + k
		if !arg.IsNull(i) {
			a.keep(g, v.string(i))
		}
	}
}

func (a *stringAggAcc) Merge(dst, src uint32) { a.keep(dst, a.parts[src]...) }
func (a *stringAggAcc) Reset(g uint32) {
	a.bytes -= stringHdrBytes * int64(cap(a.parts[g]))
	for _, p := range a.parts[g] {
		a.bytes -= int64(len(p))
	}
	a.parts[g] = nil
}

// Finish joins each group's parts, made room for in the output (charged
// to the query) before they are joined: the joined value is a copy of
// the whole state, and was built in Go memory first.
func (a *stringAggAcc) Finish(mem memory.Allocator, gids []uint32) arrow.Array {
	o := newOut(mem, arrow.BinaryTypes.String, len(gids))
	for _, g := range gids {
		if len(a.parts[g]) == 0 {
			o.null()
			continue
		}
		size := int64(len(a.sep)) * int64(len(a.parts[g])-1)
		for _, p := range a.parts[g] {
			size += int64(len(p))
		}
		if !o.room(size) {
			o.b.Release()
			panic(o.err) // a value no column holds: the aggregate fails its query
		}
		o.str(strings.Join(a.parts[g], a.sep))
	}
	return o.finish()
}
