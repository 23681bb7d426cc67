package rel

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// multiKeys gives ids to tuples of two or more string or integer-like keys
// (GROUP BY l_returnflag, l_linestatus) column by column, without encoding
// each row's tuple into bytes: every column maps its values to small ids
// (a string map read from the array's bytes, or an intTable), and the ids
// are folded left to right through intTables keyed by (ids so far, next
// id). A pass per column keeps each loop typed and each table small.
type multiKeys struct {
	cols  []columnIDs
	pairs []*intTable // pairs[k-1]: (tuple id of columns < k, id in column k) -> tuple id of columns <= k
	pairN []uint32    // ids handed out by pairs[k-1] (the last one's are the group ids)
	ids   [][]uint32  // per column: the batch's ids
	codes []codeIDs   // per column: a dictionary-encoded one's codes (dictkeys.go)
}

type columnIDs struct {
	strs *strTable
	ints *intTable
	null int64 // id of NULL, -1 none yet
	n    uint32
}

// multiKeyTypes: types multiKeys groups by.
func multiKeyTypes(types []arrow.DataType) bool {
	if len(types) < 2 {
		return false
	}
	for _, t := range types {
		if t.ID() != arrow.STRING && !intLike(t) {
			return false
		}
	}
	return true
}

func newMultiKeys(types []arrow.DataType) *multiKeys {
	m := &multiKeys{cols: make([]columnIDs, len(types)), ids: make([][]uint32, len(types))}
	for i, t := range types {
		m.cols[i].null = -1
		if t.ID() == arrow.STRING {
			m.cols[i].strs = newStrTable()
		} else {
			m.cols[i].ints = newIntTable()
		}
	}
	for range len(types) - 1 {
		m.pairs = append(m.pairs, newIntTable())
		m.pairN = append(m.pairN, 0)
	}
	return m
}

// newGroupKeyTable is a keyTable for GROUP BY: as newKeyTable, with tuples
// of strings and integers grouped column by column (multiKeys).
func newGroupKeyTable(mem memory.Allocator, types []arrow.DataType) *keyTable {
	t := newKeyTable(mem, types)
	if multiKeyTypes(types) {
		t.enc, t.multi = nil, newMultiKeys(types)
	}
	return t
}

// columnIDs sets ids[i-from] to the id of row i's value in column c,
// adding new values when add is set (else -1 as ^uint32(0) for a value
// not seen).
func (m *multiKeys) columnIDs(c int, col arrow.Array, from, to int, add bool) []uint32 {
	n := to - from
	if cap(m.ids[c]) < n {
		m.ids[c] = make([]uint32, n)
	}
	ids := m.ids[c][:n]
	m.ids[c] = ids // the batch's length, which lookupBatch and find loop over
	k := &m.cols[c]
	hasNull := col.NullN() > 0
	null := func() uint32 {
		if k.null < 0 {
			if !add {
				return ^uint32(0)
			}
			k.null = int64(k.n)
			k.n++
		}
		return uint32(k.null)
	}
	if d, ok := col.(*array.Dictionary); ok && k.strs != nil && m.columnDictIDs(c, d, from, ids, null, add) {
		return ids
	}
	if k.strs != nil {
		s := col.(*array.String)
		for i := from; i < to; i++ {
			if hasNull && s.IsNull(i) {
				ids[i-from] = null()
				continue
			}
			v := s.Value(i)
			id, ok := k.strs.get(v)
			if !ok {
				if !add {
					id = ^uint32(0)
				} else {
					id = k.n
					k.n++
					k.strs.put(v, id)
				}
			}
			ids[i-from] = id
		}
		return ids
	}
	i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
	switch {
	case i64 != nil:
		columnIntIDs(k, col, i64, from, ids, hasNull, null, add)
	case i32 != nil:
		columnIntIDs(k, col, i32, from, ids, hasNull, null, add)
	case i16 != nil:
		columnIntIDs(k, col, i16, from, ids, hasNull, null, add)
	case i8 != nil:
		columnIntIDs(k, col, i8, from, ids, hasNull, null, add)
	case u32 != nil:
		columnIntIDs(k, col, u32, from, ids, hasNull, null, add)
	case u16 != nil:
		columnIntIDs(k, col, u16, from, ids, hasNull, null, add)
	case u8 != nil:
		columnIntIDs(k, col, u8, from, ids, hasNull, null, add)
	default:
		columnIntIDs(k, col, u64, from, ids, hasNull, null, add)
	}
	return ids
}

func columnIntIDs[T fixedInts](k *columnIDs, col arrow.Array, vals []T, from int, ids []uint32, hasNull bool, null func() uint32, add bool) {
	for j := range ids {
		i := from + j
		if hasNull && col.IsNull(i) {
			ids[j] = null()
			continue
		}
		v := int64(vals[i])
		id, ok := k.ints.get(v)
		if !ok {
			if !add {
				id = ^uint32(0)
			} else {
				id = k.n
				k.n++
				k.ints.put(v, id)
			}
		}
		ids[j] = id
	}
}

// lookupBatch sets out[i-from] to the group id of row i's tuple, adding
// new tuples to t (their values to t's builders).
func (m *multiKeys) lookupBatch(t *keyTable, cols []arrow.Array, from, to int, out []uint32) {
	for c, col := range cols {
		m.columnIDs(c, col, from, to, true)
	}
	acc := m.ids[0]
	last := len(cols) - 1
	for k := 1; k <= last; k++ {
		next, pt := m.ids[k], m.pairs[k-1]
		dst := acc
		if k == last {
			dst = out
		}
		for j, a := range acc {
			key := int64(a)<<32 | int64(next[j])
			id, ok := pt.get(key)
			if !ok {
				if k == last {
					id = t.n
					t.n++
					if !t.noValues {
						for c, col := range cols {
							appendValue(t.keys[c], col, from+j)
						}
					}
				} else {
					id = m.pairN[k-1]
					m.pairN[k-1]++
				}
				pt.put(key, id)
			}
			dst[j] = id
		}
		acc = dst
	}
}

// find is lookupBatch without adding: -1 for a tuple not in the table or
// one with a NULL (which equals nothing in a join).
func (m *multiKeys) find(cols []arrow.Array, from, to int, out []int32) {
	miss := ^uint32(0)
	for c, col := range cols {
		m.columnIDs(c, col, from, to, false)
	}
	for j := range out[:to-from] {
		out[j] = -1
		a := m.ids[0][j]
		for k := 1; k < len(cols) && a != miss; k++ {
			b := m.ids[k][j]
			if b == miss {
				a = miss
				break
			}
			id, ok := m.pairs[k-1].get(int64(a)<<32 | int64(b))
			if !ok {
				a = miss
				break
			}
			a = id
		}
		if a != miss && !anyNullAt(cols, from+j) {
			out[j] = int32(a)
		}
	}
}
