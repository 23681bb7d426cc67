package rel

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
)

// keyTable assigns dense ids to distinct key tuples and remembers each tuple's
// values (in builders) so results can carry them. Its hash table is typed by
// the key: one integer-like key of any width (or a timestamp, date, ...) is
// probed as an int64 in an open-addressing table, one string key by its
// value in a map of strings (read from the array without copying), anything
// else by a byte encoding of the tuple.
type keyTable struct {
	types []arrow.DataType
	ints  *intTable // single integer-like key
	strs  *strTable
	codes *codeIDs     // a dictionary-encoded strs key's codes (dictkeys.go)
	nullG int64        // id of the NULL key for ints and strs (-1 none)
	enc   *longStrings // other tuples, by their encoding (encodeKey)
	multi *multiKeys   // GROUP BY tuples of strings and integers (newGroupKeyTable)
	// packed: a join's build tuple of integers as one int64 (packedkeys.go),
	// with its scratch (a view's own, like buf).
	packed *packedKeys
	pvals  []int64
	pin    []bool
	keys   []array.Builder
	n      uint32
	buf    []byte
	// noValues: ids only, no key values kept (a join's build side has
	// its rows).
	noValues bool
}

func newKeyTable(mem memory.Allocator, types []arrow.DataType) *keyTable {
	t := &keyTable{types: types, nullG: -1}
	switch {
	case len(types) == 1 && intLike(types[0]):
		t.ints = newIntTable()
	case len(types) == 1 && types[0].ID() == arrow.STRING:
		t.strs = newStrTable()
	default:
		t.enc = newLongStrings()
	}
	for _, ty := range types {
		t.keys = append(t.keys, array.NewBuilder(mem, ty))
	}
	return t
}

// intLike: keys whose values are integers of at most 64 bits, compared by
// value (so a table of them can probe int64s).
func intLike(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.TIMESTAMP, arrow.DURATION, arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64:
		return true
	}
	return false
}

func (t *keyTable) release() {
	for _, b := range t.keys {
		b.Release()
	}
	t.keys = nil
}

// fixedInts is every Go type an integer-like Arrow array stores.
type fixedInts interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// intValues calls f with the values of an integer-like array, typed: the
// loops below then read them without a conversion call per row.
func intValues(col arrow.Array) (i8 []int8, i16 []int16, i32 []int32, i64 []int64, u8 []uint8, u16 []uint16, u32 []uint32, u64 []uint64) {
	switch a := col.(type) {
	case *array.Int8:
		i8 = a.Int8Values()
	case *array.Int16:
		i16 = a.Int16Values()
	case *array.Int32:
		i32 = a.Int32Values()
	case *array.Uint8:
		u8 = a.Uint8Values()
	case *array.Uint16:
		u16 = a.Uint16Values()
	case *array.Uint32:
		u32 = a.Uint32Values()
	case *array.Uint64:
		u64 = a.Uint64Values()
	case *array.Date32:
		i32 = arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.Date32Values()))
	case *array.Time32:
		i32 = arrow.Int32Traits.CastFromBytes(arrow.Time32Traits.CastToBytes(a.Time32Values()))
	default: // int64 layout: INT64, TIMESTAMP, DURATION, DATE64, TIME64
		i64 = functions.Int64Values(col)
	}
	return
}

// lookupBatch sets out[i-from] to the id of row i's key tuple for rows
// [from, to), adding new tuples.
func (t *keyTable) lookupBatch(cols []arrow.Array, from, to int, out []uint32) {
	switch {
	case len(cols) == 0:
		for i := range out[:to-from] {
			out[i] = 0
		}
		if t.n == 0 {
			t.n = 1
		}
	case t.ints != nil:
		col := cols[0]
		i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
		switch {
		case i64 != nil:
			lookupInts(t, col, i64, from, to, out)
		case i32 != nil:
			lookupInts(t, col, i32, from, to, out)
		case i16 != nil:
			lookupInts(t, col, i16, from, to, out)
		case i8 != nil:
			lookupInts(t, col, i8, from, to, out)
		case u32 != nil:
			lookupInts(t, col, u32, from, to, out)
		case u16 != nil:
			lookupInts(t, col, u16, from, to, out)
		case u8 != nil:
			lookupInts(t, col, u8, from, to, out)
		default:
			lookupInts(t, col, u64, from, to, out)
		}
	case t.strs != nil:
		if d, ok := cols[0].(*array.Dictionary); ok {
			t.lookupDict(d, from, to, out)
			return
		}
		t.lookupStrings(cols[0].(*array.String), from, to, out)
	case t.multi != nil:
		t.multi.lookupBatch(t, cols, from, to, out)
	case t.packed != nil:
		t.lookupPacked(cols, from, to, out)
	default:
		for i := from; i < to; i++ {
			out[i-from] = t.lookup(cols, i)
		}
	}
}

// lookupInts is the hot path of one integer-like key: ids for rows [from, to).
func lookupInts[T fixedInts](t *keyTable, col arrow.Array, vals []T, from, to int, out []uint32) {
	hasNull := col.NullN() > 0
	for i := from; i < to; i++ {
		if hasNull && col.IsNull(i) {
			out[i-from] = t.nullID(col, i)
			continue
		}
		k := int64(vals[i])
		g, ok := t.ints.get(k)
		if !ok {
			g = t.add(col, i)
			t.ints.put(k, g)
		}
		out[i-from] = g
	}
}

// lookupStrings is the path of one string key: the map is probed with the
// array's own bytes; only a new key is copied.
func (t *keyTable) lookupStrings(col *array.String, from, to int, out []uint32) {
	hasNull := col.NullN() > 0
	for i := from; i < to; i++ {
		if hasNull && col.IsNull(i) {
			out[i-from] = t.nullID(col, i)
			continue
		}
		v := col.Value(i)
		g, ok := t.strs.get(v)
		if !ok {
			g = t.add(col, i)
			t.strs.put(v, g)
		}
		out[i-from] = g
	}
}

func (t *keyTable) nullID(col arrow.Array, i int) uint32 {
	if t.nullG < 0 {
		t.nullG = int64(t.add(col, i))
	}
	return uint32(t.nullG)
}

// find is lookupBatch without adding: -1 for a tuple not in the table or
// one with a NULL (which equals nothing in a join).
func (t *keyTable) find(cols []arrow.Array, from, to int, out []int32) {
	anyNull := false
	for _, c := range cols {
		anyNull = anyNull || c.NullN() > 0
		if c.DataType().ID() == arrow.NULL || !arrow.TypeEqual(c.DataType(), t.types[0]) && len(cols) == 1 {
			// A key of another type (a NULL literal) matches nothing.
			for i := range out[:to-from] {
				out[i] = -1
			}
			return
		}
	}
	switch {
	case t.ints != nil:
		col := cols[0]
		i8, i16, i32, i64, u8, u16, u32, u64 := intValues(col)
		switch {
		case i64 != nil:
			findInts(t, col, i64, from, to, out)
		case i32 != nil:
			findInts(t, col, i32, from, to, out)
		case i16 != nil:
			findInts(t, col, i16, from, to, out)
		case i8 != nil:
			findInts(t, col, i8, from, to, out)
		case u32 != nil:
			findInts(t, col, u32, from, to, out)
		case u16 != nil:
			findInts(t, col, u16, from, to, out)
		case u8 != nil:
			findInts(t, col, u8, from, to, out)
		default:
			findInts(t, col, u64, from, to, out)
		}
	case t.strs != nil:
		col := cols[0].(*array.String)
		for i := from; i < to; i++ {
			out[i-from] = -1
			if anyNull && col.IsNull(i) {
				continue
			}
			if g, ok := t.strs.get(col.Value(i)); ok {
				out[i-from] = int32(g)
			}
		}
	case t.multi != nil:
		t.multi.find(cols, from, to, out)
	case t.packed != nil:
		t.findPacked(cols, from, to, out)
	default:
		for i := from; i < to; i++ {
			out[i-from] = -1
			if anyNull && anyNullAt(cols, i) {
				continue
			}
			t.buf = encodeKey(t.buf[:0], cols, i)
			if g, ok := t.enc.getBytes(t.buf); ok {
				out[i-from] = int32(g)
			}
		}
	}
}

func findInts[T fixedInts](t *keyTable, col arrow.Array, vals []T, from, to int, out []int32) {
	hasNull := col.NullN() > 0
	for i := from; i < to; i++ {
		out[i-from] = -1
		if hasNull && col.IsNull(i) {
			continue
		}
		if g, ok := t.ints.get(int64(vals[i])); ok {
			out[i-from] = int32(g)
		}
	}
}

func (t *keyTable) add(col arrow.Array, i int) uint32 {
	if !t.noValues {
		appendValue(t.keys[0], col, i)
	}
	g := t.n
	t.n++
	return g
}

// lookup returns the id of row i's key tuple, adding it when new.
func (t *keyTable) lookup(cols []arrow.Array, i int) uint32 {
	if len(cols) == 0 || t.ints != nil || t.strs != nil || t.multi != nil || t.packed != nil {
		var one [1]uint32
		t.lookupBatch(cols, i, i+1, one[:])
		return one[0]
	}
	t.buf = encodeKey(t.buf[:0], cols, i)
	if g, ok := t.enc.getBytes(t.buf); ok {
		return g
	}
	g := t.n
	t.n++
	t.enc.put(string(t.buf), g)
	if !t.noValues {
		for k, c := range cols {
			appendValue(t.keys[k], c, i)
		}
	}
	return g
}

// finishKeys returns the key columns in id order and resets the builders.
func (t *keyTable) finishKeys() []arrow.Array {
	out := make([]arrow.Array, len(t.keys))
	for i, b := range t.keys {
		out[i] = b.NewArray()
	}
	return out
}

// encodeKey appends a self-delimiting encoding of row i's key tuple. Common
// types are read straight from their arrays: this runs once per row.
func encodeKey(buf []byte, cols []arrow.Array, i int) []byte {
	for _, c := range cols {
		if c.IsNull(i) {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		switch a := c.(type) {
		case *array.String:
			v := a.Value(i)
			buf = binary.AppendUvarint(buf, uint64(len(v)))
			buf = append(buf, v...)
		case *array.Int64:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(a.Value(i)))
		case *array.Int32:
			buf = binary.LittleEndian.AppendUint32(buf, uint32(a.Value(i)))
		case *array.Float64:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(a.Value(i)))
		case *array.Timestamp:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(a.Value(i)))
		case *array.Decimal128:
			// One scale per key column: equal values, equal words.
			v := a.Value(i)
			buf = binary.LittleEndian.AppendUint64(buf, v.LowBits())
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v.HighBits()))
		case *array.Date32:
			buf = binary.LittleEndian.AppendUint32(buf, uint32(a.Value(i)))
		case *array.Boolean:
			if a.Value(i) {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		default:
			switch v := functions.ValueAt(c, i).(type) {
			case int64:
				buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
			case float64:
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			default:
				s := c.ValueStr(i)
				buf = binary.AppendUvarint(buf, uint64(len(s)))
				buf = append(buf, s...)
			}
		}
	}
	return buf
}

// appendValue appends row i of a to b (same type).
func appendValue(b array.Builder, a arrow.Array, i int) {
	if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
		b.AppendNull()
		return
	}
	switch a := a.(type) {
	case *array.Dictionary:
		// A dictionary-encoded key (dictkeys.go): its value.
		appendValue(b, a.Dictionary(), a.GetValueIndex(i))
	case *array.Int64:
		b.(*array.Int64Builder).Append(a.Value(i))
	case *array.Int32:
		b.(*array.Int32Builder).Append(a.Value(i))
	case *array.Int16:
		b.(*array.Int16Builder).Append(a.Value(i))
	case *array.Int8:
		b.(*array.Int8Builder).Append(a.Value(i))
	case *array.Uint64:
		b.(*array.Uint64Builder).Append(a.Value(i))
	case *array.Uint32:
		b.(*array.Uint32Builder).Append(a.Value(i))
	case *array.Float64:
		b.(*array.Float64Builder).Append(a.Value(i))
	case *array.Float32:
		b.(*array.Float32Builder).Append(a.Value(i))
	case *array.String:
		b.(*array.StringBuilder).Append(a.Value(i))
	case *array.Boolean:
		b.(*array.BooleanBuilder).Append(a.Value(i))
	case *array.Timestamp:
		b.(*array.TimestampBuilder).Append(a.Value(i))
	case *array.Duration:
		b.(*array.DurationBuilder).Append(a.Value(i))
	case *array.Date32:
		b.(*array.Date32Builder).Append(a.Value(i))
	case *array.Date64:
		b.(*array.Date64Builder).Append(a.Value(i))
	case *array.Decimal128:
		b.(*array.Decimal128Builder).Append(a.Value(i))
	default:
		_ = b.AppendValueFromString(a.ValueStr(i))
	}
}

// keyChunks freezes a keyTable's builders into arrays on demand, so that the
// values of key id k stay readable while new keys keep arriving (SESSION state
// outlives any one batch); the frozen values are a windowSlabs' keyValues.
type keyChunks struct {
	t   *keyTable
	mem memory.Allocator
	v   keyValues
}

// appendKey appends key id k's values to the output builders.
func (c *keyChunks) appendKey(out []array.Builder, k uint32) {
	c.v.freeze(c.t, c.mem)
	c.v.appendKey(out, k)
}

func (c *keyChunks) release() {
	c.v.release()
	c.t.release()
}
