package rel

import (
	"math"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
)

// packedKeys indexes a join's build side by a tuple of two or more
// integer-like keys (TPC-H's l_partkey, l_suppkey = ps_partkey, ps_suppkey)
// as one int64: a build side is complete before it is indexed, so each key
// column's range [lo, hi] over the build rows is known, and when the
// columns' widths (the bits of hi-lo) add up to at most 64, the tuple
// v1-lo1 | (v2-lo2) << w1 | ... identifies it exactly. One lookup in an
// intTable then replaces a byte encoding and a string map lookup per probe
// row (what the generic path does), and a probe value outside its
// column's range matches nothing without a lookup.
type packedKeys struct {
	lo    []int64
	span  []uint64 // hi-lo
	shift []uint
	table *intTable
}

// newPackedKeys is the packing of the build keys cols (per build batch,
// one array per key column), nil when they are not all integer-like,
// hold no non-NULL tuple, or need more than 64 bits.
func newPackedKeys(types []arrow.DataType, cols [][]arrow.Array) *packedKeys {
	if len(types) < 2 {
		return nil
	}
	for _, t := range types {
		if !intLike(t) {
			return nil
		}
	}
	p := &packedKeys{lo: make([]int64, len(types)), span: make([]uint64, len(types)), shift: make([]uint, len(types)), table: newIntTable()}
	var width uint
	for k := range types {
		lo, hi, any := int64(math.MaxInt64), int64(math.MinInt64), false
		for _, batch := range cols {
			l, h, ok, fits := columnRange(batch[k])
			if !fits {
				return nil
			}
			if ok {
				lo, hi, any = min(lo, l), max(hi, h), true
			}
		}
		if !any {
			return nil // every build row has a NULL here: nothing to index
		}
		p.lo[k], p.span[k], p.shift[k] = lo, uint64(hi)-uint64(lo), width
		width += uint(bits.Len64(p.span[k]))
		if width > 64 {
			return nil
		}
	}
	return p
}

// columnRange is the least and greatest non-NULL value of an integer-like
// array (ok: it has one); fits is false for a UINT64 value past int64.
func columnRange(col arrow.Array) (lo, hi int64, ok, fits bool) {
	i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
	switch {
	case i64 != nil:
		lo, hi, ok = valueRange(col, i64)
	case i32 != nil:
		lo, hi, ok = valueRange(col, i32)
	case i16 != nil:
		lo, hi, ok = valueRange(col, i16)
	case i8 != nil:
		lo, hi, ok = valueRange(col, i8)
	case u32 != nil:
		lo, hi, ok = valueRange(col, u32)
	case u16 != nil:
		lo, hi, ok = valueRange(col, u16)
	case u8 != nil:
		lo, hi, ok = valueRange(col, u8)
	default:
		for i, v := range u64 {
			if v > math.MaxInt64 && !col.IsNull(i) {
				return 0, 0, false, false
			}
		}
		lo, hi, ok = valueRange(col, u64)
	}
	return lo, hi, ok, true
}

func valueRange[T fixedInts](col arrow.Array, vals []T) (lo, hi int64, ok bool) {
	lo, hi = math.MaxInt64, math.MinInt64
	hasNull := col.NullN() > 0
	for i, v := range vals[:col.Len()] {
		if hasNull && col.IsNull(i) {
			continue
		}
		lo, hi, ok = min(lo, int64(v)), max(hi, int64(v)), true
	}
	return lo, hi, ok
}

// pack sets out[i-from] to row i's packed tuple and in[i-from] to whether
// it has one: false for a row with a NULL key or a value outside its
// column's build range (a tuple no build row has).
func (p *packedKeys) pack(cols []arrow.Array, from, to int, out []int64, in []bool) {
	n := to - from
	for i := range out[:n] {
		out[i], in[i] = 0, true
	}
	for k, col := range cols {
		i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
		switch {
		case i64 != nil:
			packColumn(p, k, col, i64, from, to, out, in)
		case i32 != nil:
			packColumn(p, k, col, i32, from, to, out, in)
		case i16 != nil:
			packColumn(p, k, col, i16, from, to, out, in)
		case i8 != nil:
			packColumn(p, k, col, i8, from, to, out, in)
		case u32 != nil:
			packColumn(p, k, col, u32, from, to, out, in)
		case u16 != nil:
			packColumn(p, k, col, u16, from, to, out, in)
		case u8 != nil:
			packColumn(p, k, col, u8, from, to, out, in)
		default:
			for i := from; i < to; i++ {
				if u64[i] > math.MaxInt64 {
					in[i-from] = false
				}
			}
			packColumn(p, k, col, u64, from, to, out, in)
		}
	}
}

// packColumn adds column k of rows [from, to) to their packed tuples: one
// typed loop per column.
func packColumn[T fixedInts](p *packedKeys, k int, col arrow.Array, vals []T, from, to int, out []int64, in []bool) {
	lo, span, shift := uint64(p.lo[k]), p.span[k], p.shift[k]
	hasNull := col.NullN() > 0
	for i := from; i < to; i++ {
		d := uint64(int64(vals[i])) - lo
		if d > span || hasNull && col.IsNull(i) {
			in[i-from] = false
			continue
		}
		out[i-from] |= int64(d << shift)
	}
}

// lookupPacked is lookupBatch over packed tuples (a join's build: a row
// with a NULL key gets the NULL id, which no probe finds).
func (t *keyTable) lookupPacked(cols []arrow.Array, from, to int, out []uint32) {
	vals, in := t.packScratch(to - from)
	t.packed.pack(cols, from, to, vals, in)
	for i, v := range vals {
		if !in[i] {
			out[i] = t.nullID(cols[0], from+i)
			continue
		}
		g, ok := t.packed.table.get(v)
		if !ok {
			g = t.add(cols[0], from+i)
			t.packed.table.put(v, g)
		}
		out[i] = g
	}
}

// findPacked is find over packed tuples.
func (t *keyTable) findPacked(cols []arrow.Array, from, to int, out []int32) {
	vals, in := t.packScratch(to - from)
	t.packed.pack(cols, from, to, vals, in)
	for i, v := range vals {
		out[i] = -1
		if !in[i] {
			continue
		}
		if g, ok := t.packed.table.get(v); ok {
			out[i] = int32(g)
		}
	}
}

// packScratch is the table's (or view's) buffers for n packed tuples.
func (t *keyTable) packScratch(n int) ([]int64, []bool) {
	if cap(t.pvals) < n {
		t.pvals, t.pin = make([]int64, n), make([]bool, n)
	}
	return t.pvals[:n], t.pin[:n]
}

// bytes is what the index and the scratch of its table hold.
func (p *packedKeys) bytes() int64 {
	if p == nil {
		return 0
	}
	return p.table.bytes() + int64(len(p.lo))*24
}
