package rel

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// codeIDs maps the codes of a dictionary-encoded string key (a Parquet
// column read as its dictionary and kept so, sources.ParquetScan.Codes) to
// ids, for GROUP BY on the codes instead of on strings: a row costs one
// load from a table as long as the dictionary, and a string is read (and
// hashed) once per code the batch uses, not once per row. The ids a code
// maps to hold for one dictionary: a batch with another (the next row
// group's) starts the table over, by a generation count, so a large
// dictionary is not cleared per batch.
type codeIDs struct {
	dict arrow.ArrayData // the dictionary the table is for
	ids  []uint32
	gen  []uint32 // ids[c] is valid when gen[c] == cur
	cur  uint32
}

// forDict readies the table for d's dictionary.
func (m *codeIDs) forDict(d *array.Dictionary) {
	dd := d.Data().Dictionary()
	if dd == m.dict && m.dict != nil {
		return
	}
	m.dict = dd
	n := dd.Len()
	if len(m.ids) < n {
		m.ids = make([]uint32, n)
		m.gen = make([]uint32, n)
		m.cur = 0
	}
	m.cur++
	if m.cur == 0 { // wrapped: no stale entry may look valid
		clear(m.gen)
		m.cur = 1
	}
}

// dictCodes is d's codes as int32s (the index type pqarrow reads), or nil
// for another index type.
func dictCodes(d *array.Dictionary) []int32 {
	if a, ok := d.Indices().(*array.Int32); ok {
		return a.Int32Values()
	}
	return nil
}

// lookupDict is lookupStrings for a dictionary-encoded key: ids for rows
// [from, to). A new key's value is materialised once, from the dictionary.
func (t *keyTable) lookupDict(col *array.Dictionary, from, to int, out []uint32) {
	codes := dictCodes(col)
	dict, ok := col.Dictionary().(*array.String)
	if codes == nil || !ok {
		t.lookupDecoded(col, from, to, out)
		return
	}
	if t.codes == nil {
		t.codes = &codeIDs{}
	}
	m := t.codes
	m.forDict(col)
	hasNull := col.NullN() > 0
	for i := from; i < to; i++ {
		if hasNull && col.IsNull(i) {
			out[i-from] = t.nullID(col, i)
			continue
		}
		c := codes[i]
		if m.gen[c] == m.cur {
			out[i-from] = m.ids[c]
			continue
		}
		var g uint32
		if dict.IsNull(int(c)) {
			g = t.nullID(col, i)
		} else {
			v := dict.Value(int(c))
			var found bool
			if g, found = t.strs.get(v); !found {
				g = t.add(col, i)
				t.strs.put(v, g)
			}
		}
		m.ids[c], m.gen[c] = g, m.cur
		out[i-from] = g
	}
}

// lookupDecoded looks a dictionary of an unusual index type up row by row,
// through its values.
func (t *keyTable) lookupDecoded(col *array.Dictionary, from, to int, out []uint32) {
	for i := from; i < to; i++ {
		if col.IsNull(i) || col.Dictionary().IsNull(col.GetValueIndex(i)) {
			out[i-from] = t.nullID(col, i)
			continue
		}
		v := col.Dictionary().(*array.String).Value(col.GetValueIndex(i))
		g, ok := t.strs.get(v)
		if !ok {
			g = t.add(col, i)
			t.strs.put(v, g)
		}
		out[i-from] = g
	}
}

// columnDictIDs is multiKeys.columnIDs for a dictionary-encoded string
// column: the ids of the column's values, through a code table.
func (m *multiKeys) columnDictIDs(c int, col *array.Dictionary, from int, ids []uint32, null func() uint32, add bool) bool {
	codes := dictCodes(col)
	dict, ok := col.Dictionary().(*array.String)
	if codes == nil || !ok {
		return false
	}
	if m.codes == nil {
		m.codes = make([]codeIDs, len(m.cols))
	}
	cm := &m.codes[c]
	cm.forDict(col)
	k := &m.cols[c]
	hasNull := col.NullN() > 0
	for j := range ids {
		i := from + j
		if hasNull && col.IsNull(i) {
			ids[j] = null()
			continue
		}
		code := codes[i]
		if cm.gen[code] == cm.cur {
			ids[j] = cm.ids[code]
			continue
		}
		var id uint32
		if dict.IsNull(int(code)) {
			id = null()
		} else {
			v := dict.Value(int(code))
			var found bool
			if id, found = k.strs.get(v); !found {
				if !add {
					ids[j] = ^uint32(0)
					continue // not cached: a later add may give it an id
				}
				id = k.n
				k.n++
				k.strs.put(v, id)
			}
		}
		if id != ^uint32(0) {
			cm.ids[code], cm.gen[code] = id, cm.cur
		}
		ids[j] = id
	}
	return true
}
