package rel

import (
	"math"

	"github.com/apache/arrow/go/v17/arrow"
)

// A join on one integer key whose build values are dense (order keys,
// surrogate ids: at most directSpan slots per build row between the
// smallest and the largest) indexes the build rows by key - lo in an array
// instead of a hash table, as DuckDB's perfect hash join does: a probe row
// is one bounds check and one load, where a hashed probe of a table larger
// than the caches pays a miss per row, and the build hashes nothing.
const directSpan = 2

// directIndex is the array: first[k-lo] is the first build row with key k
// (-1 none), the rest follow through HashJoin.next.
type directIndex struct {
	lo    int64
	first []int32
}

// keyRange is the smallest and largest non-NULL value of integer-like key
// columns, and how many there are.
func keyRange(cols []arrow.Array) (lo, hi int64, n int) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, col := range cols {
		i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
		var l, h int64
		var c int
		switch {
		case i64 != nil:
			l, h, c = rangeOf(col, i64)
		case i32 != nil:
			l, h, c = rangeOf(col, i32)
		case i16 != nil:
			l, h, c = rangeOf(col, i16)
		case i8 != nil:
			l, h, c = rangeOf(col, i8)
		case u32 != nil:
			l, h, c = rangeOf(col, u32)
		case u16 != nil:
			l, h, c = rangeOf(col, u16)
		case u8 != nil:
			l, h, c = rangeOf(col, u8)
		default:
			l, h, c = rangeOf(col, u64)
		}
		if c > 0 {
			lo, hi, n = min(lo, l), max(hi, h), n+c
		}
	}
	return lo, hi, n
}

func rangeOf[T fixedInts](col arrow.Array, vals []T) (lo, hi int64, n int) {
	lo, hi = math.MaxInt64, math.MinInt64
	hasNull := col.NullN() > 0
	for i, v := range vals[:col.Len()] {
		if hasNull && col.IsNull(i) {
			continue
		}
		k := int64(v)
		lo, hi = min(lo, k), max(hi, k)
		n++
	}
	return lo, hi, n
}

// newDirectIndex is the array for build keys in [lo, hi] over rows build
// rows, or nil where they are too sparse (or the span overflows).
func newDirectIndex(lo, hi int64, rows int) *directIndex {
	if rows == 0 || hi < lo {
		return nil
	}
	span := uint64(hi - lo) // the true span, also when hi - lo overflows int64
	if span >= uint64(directSpan*rows+1024) || span >= math.MaxInt32 {
		return nil
	}
	first := make([]int32, span+1)
	for i := range first {
		first[i] = -1
	}
	return &directIndex{lo: lo, first: first}
}

// add chains the rows of one build batch, numbered from base, by key.
func addDirect[T fixedInts](d *directIndex, col arrow.Array, vals []T, base int32, next, last []int32) {
	hasNull := col.NullN() > 0
	for i, v := range vals[:col.Len()] {
		if hasNull && col.IsNull(i) {
			continue // NULL never equals anything
		}
		s := int64(v) - d.lo
		row := base + int32(i)
		if l := last[s]; l >= 0 {
			next[l] = row
		} else {
			d.first[s] = row
		}
		last[s] = row
	}
}

// build indexes the build side's key columns (one per batch, in order).
func (d *directIndex) build(cols []arrow.Array, next []int32) {
	last := make([]int32, len(d.first))
	for i := range last {
		last[i] = -1
	}
	base := int32(0)
	for _, col := range cols {
		i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
		switch {
		case i64 != nil:
			addDirect(d, col, i64, base, next, last)
		case i32 != nil:
			addDirect(d, col, i32, base, next, last)
		case i16 != nil:
			addDirect(d, col, i16, base, next, last)
		case i8 != nil:
			addDirect(d, col, i8, base, next, last)
		case u32 != nil:
			addDirect(d, col, u32, base, next, last)
		case u16 != nil:
			addDirect(d, col, u16, base, next, last)
		case u8 != nil:
			addDirect(d, col, u8, base, next, last)
		default:
			addDirect(d, col, u64, base, next, last)
		}
		base += int32(col.Len())
	}
}

// probe appends the matches of the rows of col to li and ri (a left
// join's unmatched row with ri -1) and says whether each row is in li
// exactly once (li is then 0, 1, ..., n-1).
func (d *directIndex) probe(col arrow.Array, next []int32, left bool, li, ri []int32) ([]int32, []int32, bool) {
	i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
	switch {
	case i64 != nil:
		return probeDirect(d, col, i64, next, left, li, ri)
	case i32 != nil:
		return probeDirect(d, col, i32, next, left, li, ri)
	case i16 != nil:
		return probeDirect(d, col, i16, next, left, li, ri)
	case i8 != nil:
		return probeDirect(d, col, i8, next, left, li, ri)
	case u32 != nil:
		return probeDirect(d, col, u32, next, left, li, ri)
	case u16 != nil:
		return probeDirect(d, col, u16, next, left, li, ri)
	case u8 != nil:
		return probeDirect(d, col, u8, next, left, li, ri)
	default:
		return probeDirect(d, col, u64, next, left, li, ri)
	}
}

func probeDirect[T fixedInts](d *directIndex, col arrow.Array, vals []T, next []int32, left bool, li, ri []int32) ([]int32, []int32, bool) {
	hasNull := col.NullN() > 0
	once := true
	span := uint64(len(d.first))
	for i, v := range vals[:col.Len()] {
		m := int32(-1)
		// k - lo wraps outside [0, span) for any key outside the build's
		// range, also past the ends of int64.
		if s := uint64(int64(v) - d.lo); s < span && !(hasNull && col.IsNull(i)) {
			m = d.first[s]
		}
		if m < 0 {
			once = once && left // a left join's unmatched row is in li once
			if left {
				li, ri = append(li, int32(i)), append(ri, -1)
			}
			continue
		}
		li, ri = append(li, int32(i)), append(ri, m)
		for m = next[m]; m >= 0; m = next[m] {
			once = false
			li, ri = append(li, int32(i)), append(ri, m)
		}
	}
	return li, ri, once
}

// heads sets out[i] to the first build row of row i's key in col (-1: no
// build row has it, or it is NULL).
func (d *directIndex) heads(col arrow.Array, out []int32) {
	i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
	switch {
	case i64 != nil:
		headsDirect(d, col, i64, out)
	case i32 != nil:
		headsDirect(d, col, i32, out)
	case i16 != nil:
		headsDirect(d, col, i16, out)
	case i8 != nil:
		headsDirect(d, col, i8, out)
	case u32 != nil:
		headsDirect(d, col, u32, out)
	case u16 != nil:
		headsDirect(d, col, u16, out)
	case u8 != nil:
		headsDirect(d, col, u8, out)
	default:
		headsDirect(d, col, u64, out)
	}
}

func headsDirect[T fixedInts](d *directIndex, col arrow.Array, vals []T, out []int32) {
	hasNull := col.NullN() > 0
	span := uint64(len(d.first))
	for i, v := range vals[:col.Len()] {
		out[i] = -1
		if s := uint64(int64(v) - d.lo); s < span && !(hasNull && col.IsNull(i)) {
			out[i] = d.first[s]
		}
	}
}
