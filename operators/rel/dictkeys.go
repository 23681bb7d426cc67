package rel

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
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

// concatColumn is one column of a join's table, its batches concatenated.
// A column of codes (every batch a dictionary of its own) stays codes over
// one dictionary of the values of all (concatCodes); one whose batches are
// not all dictionaries (a row group's dictionary with a value that is not
// UTF-8 comes unpacked) has its dictionary batches decoded to strings.
func concatColumn(mem memory.Allocator, parts []arrow.Array) (arrow.Array, error) {
	dicts := 0
	for _, p := range parts {
		if _, ok := p.(*array.Dictionary); ok {
			dicts++
		}
	}
	if dicts == 0 {
		return array.Concatenate(parts, mem)
	}
	if dicts == len(parts) {
		if a, ok := concatCodes(mem, parts); ok {
			return a, nil
		}
	}
	plain := make([]arrow.Array, len(parts))
	defer func() { releaseArrays(plain) }()
	for i, p := range parts {
		d, isDict := p.(*array.Dictionary)
		if !isDict {
			p.Retain()
			plain[i] = p
			continue
		}
		dict, ok := d.Dictionary().(*array.String)
		if !ok {
			return nil, fmt.Errorf("%w: a join's column mixes %s and %s batches", ErrPlan, p.DataType(), parts[0].DataType())
		}
		b := array.NewStringBuilder(mem)
		arrowx.Reserve(b, d.Len())
		for r := range d.Len() {
			if d.IsNull(r) || dict.IsNull(d.GetValueIndex(r)) {
				b.AppendNull()
			} else {
				b.Append(dict.Value(d.GetValueIndex(r)))
			}
		}
		plain[i] = b.NewArray()
		b.Release()
	}
	return array.Concatenate(plain, mem)
}

// concatCodes concatenates dictionary arrays of strings into one over the
// union of their dictionaries, each batch's codes translated. (arrow/go's
// Concatenate unifies dictionaries too, but v17 puts wrong codes after a
// NULL row.) ok is false for dictionaries other than int32 codes into
// strings.
func concatCodes(mem memory.Allocator, parts []arrow.Array) (arrow.Array, bool) {
	at := map[string]int32{}
	vals := array.NewStringBuilder(mem)
	defer vals.Release()
	idx := array.NewInt32Builder(mem)
	defer idx.Release()
	n := 0
	for _, p := range parts {
		n += p.Len()
	}
	arrowx.Reserve(idx, n)
	var trans []int32
	for _, p := range parts {
		d := p.(*array.Dictionary)
		dict, ok := d.Dictionary().(*array.String)
		codes := dictCodes(d)
		if !ok || codes == nil {
			return nil, false
		}
		trans = trans[:0]
		for j := range dict.Len() {
			if dict.IsNull(j) {
				trans = append(trans, -1)
				continue
			}
			v := dict.Value(j)
			c, seen := at[v]
			if !seen {
				c = int32(len(at))
				at[v] = c
				vals.Append(v)
			}
			trans = append(trans, c)
		}
		hasNull := d.NullN() > 0
		for r, c := range codes[:d.Len()] {
			if hasNull && d.IsNull(r) || trans[c] < 0 {
				idx.UnsafeAppendBoolToBitmap(false)
				continue
			}
			idx.UnsafeAppend(trans[c])
		}
	}
	dict := vals.NewArray()
	defer dict.Release()
	ia := idx.NewArray()
	defer ia.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, ia, dict), true
}
