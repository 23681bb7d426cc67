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
// values (in builders) so results can carry them. A single integer-like key uses
// a map[int64]; anything else a map of the encoded tuple.
type keyTable struct {
	types []arrow.DataType
	ints  *intTable // single non-null integer-like key
	nullG int64     // id of the NULL key for ints (-1 none)
	enc   map[string]uint32
	keys  []array.Builder
	n     uint32
	buf   []byte
}

func newKeyTable(mem memory.Allocator, types []arrow.DataType) *keyTable {
	t := &keyTable{types: types, nullG: -1}
	if len(types) == 1 && intLike(types[0]) {
		t.ints = newIntTable()
	} else {
		t.enc = map[string]uint32{}
	}
	for _, ty := range types {
		t.keys = append(t.keys, array.NewBuilder(mem, ty))
	}
	return t
}

func intLike(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.DURATION, arrow.DATE64:
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

// lookupInts is the hot path: ids for rows [from, to) of one int64-layout key.
func (t *keyTable) lookupInts(col arrow.Array, vals []int64, from, to int, out []uint32) {
	hasNull := col.NullN() > 0
	for i := from; i < to; i++ {
		if hasNull && col.IsNull(i) {
			if t.nullG < 0 {
				t.nullG = int64(t.add(col, i))
			}
			out[i-from] = uint32(t.nullG)
			continue
		}
		g, ok := t.ints.get(vals[i])
		if !ok {
			g = t.add(col, i)
			t.ints.put(vals[i], g)
		}
		out[i-from] = g
	}
}

func (t *keyTable) add(col arrow.Array, i int) uint32 {
	appendValue(t.keys[0], col, i)
	g := t.n
	t.n++
	return g
}

// lookup returns the id of row i's key tuple, adding it when new.
func (t *keyTable) lookup(cols []arrow.Array, i int) uint32 {
	if len(cols) == 0 {
		if t.n == 0 {
			t.n = 1
		}
		return 0
	}
	if t.ints != nil {
		var one [1]uint32
		t.lookupInts(cols[0], functions.Int64Values(cols[0]), i, i+1, one[:])
		return one[0]
	}
	t.buf = encodeKey(t.buf[:0], cols, i)
	if g, ok := t.enc[string(t.buf)]; ok {
		return g
	}
	g := t.n
	t.n++
	t.enc[string(t.buf)] = g
	for k, c := range cols {
		appendValue(t.keys[k], c, i)
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
	default:
		_ = b.AppendValueFromString(a.ValueStr(i))
	}
}

// keyChunks freezes a keyTable's builders into arrays on demand, so that the
// values of key id k stay readable while new keys keep arriving (SESSION state
// outlives any one batch).
type keyChunks struct {
	t      *keyTable
	chunks [][]arrow.Array
	starts []uint32
	frozen uint32
}

func (c *keyChunks) freeze() {
	if c.t.n == c.frozen {
		return
	}
	c.chunks = append(c.chunks, c.t.finishKeys())
	c.starts = append(c.starts, c.frozen)
	c.frozen = c.t.n
}

// appendKey appends key id k's values to the output builders.
func (c *keyChunks) appendKey(out []array.Builder, k uint32) {
	c.freeze()
	j := len(c.starts) - 1
	for c.starts[j] > k {
		j--
	}
	for col, b := range out {
		appendValue(b, c.chunks[j][col], int(k-c.starts[j]))
	}
}

func (c *keyChunks) release() {
	for _, ch := range c.chunks {
		for _, a := range ch {
			a.Release()
		}
	}
	c.chunks = nil
	c.t.release()
}
