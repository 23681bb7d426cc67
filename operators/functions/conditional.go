package functions

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
)

// less orders two non-NULL values of the same canonical type at rows i, j.
func lessAt(a *vec, i int, b *vec, j int) bool {
	switch a.kind {
	case kInt, kDate:
		return a.int64(i) < b.int64(j)
	case kDecimal:
		return CompareDecimal(a.decimal(i), b.decimal(j)) < 0
	case kFloat:
		return a.float64(i) < b.float64(j)
	case kString:
		return a.string(i) < b.string(j)
	case kBool:
		return !a.bool(i) && b.bool(j)
	}
	return false
}

func equalAt(a *vec, i int, b *vec, j int) bool { return !lessAt(a, i, b, j) && !lessAt(b, j, a, i) }

func extremumFunc(greatest bool) ScalarFunc {
	return func(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
		vs, err := vecs(args)
		if err != nil {
			return nil, err
		}
		defer releaseVecs(vs)
		o := newOut(c.Mem, ret, n)
		for i := 0; i < n; i++ {
			best := -1
			for k, v := range vs {
				if v.isNull(i) {
					continue
				}
				if best < 0 || (greatest && lessAt(vs[best], i, v, i)) || (!greatest && lessAt(v, i, vs[best], i)) {
					best = k
				}
			}
			if best < 0 {
				o.null()
			} else {
				o.copyFrom(vs[best], i)
			}
		}
		return o.finish(), nil
	}
}

func coalesceFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	vs, err := vecs(args)
	if err != nil {
		return nil, err
	}
	defer releaseVecs(vs)
	o := newOut(c.Mem, ret, n)
	for i := 0; i < n; i++ {
		done := false
		for _, v := range vs {
			if !v.isNull(i) {
				o.copyFrom(v, i)
				done = true
				break
			}
		}
		if !done {
			o.null()
		}
	}
	return o.finish(), nil
}

func nullifFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	vs, err := vecs(args)
	if err != nil {
		return nil, err
	}
	defer releaseVecs(vs)
	o := newOut(c.Mem, ret, n)
	for i := 0; i < n; i++ {
		if !vs[0].isNull(i) && !vs[1].isNull(i) && equalAt(vs[0], i, vs[1], i) {
			o.null()
			continue
		}
		o.copyFrom(vs[0], i)
	}
	return o.finish(), nil
}
