package rel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// Order-preserving keys: a row's ORDER BY values as bytes that compare, with
// bytes.Compare, as the rows sort. State that outlives its batches (a stream's
// top n per key) keeps these instead of the arrays, so two rows from
// different batches compare without either batch at hand.

// orderable reports whether appendSortKey encodes values of t.
func orderable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.BOOL,
		arrow.TIMESTAMP, arrow.DATE32, arrow.DURATION, arrow.DECIMAL128:
		return true
	case arrow.DICTIONARY:
		return orderable(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// appendSortKey appends row i of a: NULL sorts last in either direction
// unless nullsFirst (DuckDB's rule for window orders), and desc inverts the
// value's bytes (never the NULL marker's).
func appendSortKey(buf []byte, a arrow.Array, i int, desc, nullsFirst bool) ([]byte, error) {
	if d, ok := a.(*array.Dictionary); ok {
		if d.IsNull(i) {
			return appendSortKey(buf, d.Dictionary(), -1, desc, nullsFirst)
		}
		return appendSortKey(buf, d.Dictionary(), d.GetValueIndex(i), desc, nullsFirst)
	}
	if i < 0 || a.IsNull(i) {
		if nullsFirst {
			return append(buf, 0), nil
		}
		return append(buf, 2), nil
	}
	buf = append(buf, 1)
	start := len(buf)
	signed := func(v int64) { buf = binary.BigEndian.AppendUint64(buf, uint64(v)^(1<<63)) }
	switch a := a.(type) {
	case *array.Int64:
		signed(a.Value(i))
	case *array.Int32:
		signed(int64(a.Value(i)))
	case *array.Int16:
		signed(int64(a.Value(i)))
	case *array.Int8:
		signed(int64(a.Value(i)))
	case *array.Timestamp:
		signed(int64(a.Value(i)))
	case *array.Date32:
		signed(int64(a.Value(i)))
	case *array.Duration:
		signed(int64(a.Value(i)))
	case *array.Uint64:
		buf = binary.BigEndian.AppendUint64(buf, a.Value(i))
	case *array.Uint32:
		buf = binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Uint16:
		buf = binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Uint8:
		buf = binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Float64:
		buf = appendFloatKey(buf, a.Value(i))
	case *array.Float32:
		buf = appendFloatKey(buf, float64(a.Value(i)))
	case *array.Boolean:
		if a.Value(i) {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	case *array.Decimal128:
		v := a.Value(i)
		signed(v.HighBits())
		buf = binary.BigEndian.AppendUint64(buf, v.LowBits())
	case *array.String:
		buf = appendBytesKey(buf, []byte(a.Value(i)))
	case *array.LargeString:
		buf = appendBytesKey(buf, []byte(a.Value(i)))
	case *array.Binary:
		buf = appendBytesKey(buf, a.Value(i))
	default:
		return nil, fmt.Errorf("cannot order by a %s", a.DataType())
	}
	if desc {
		for k := start; k < len(buf); k++ {
			buf[k] = ^buf[k]
		}
	}
	return buf, nil
}

// appendFloatKey orders floats as numbers: negative ones have every bit
// flipped, the others their sign bit (NaN sorts above +Inf, as DuckDB's).
func appendFloatKey(buf []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 and +0 are peers
	}
	b := math.Float64bits(f)
	if math.IsNaN(f) {
		b = math.Float64bits(math.NaN()) &^ (1 << 63)
	}
	if b&(1<<63) != 0 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(buf, b)
}

// appendBytesKey escapes 0 as 0 0xFF and ends with 0 0, so that a prefix sorts
// before its extensions and the encoding stays self-delimiting.
func appendBytesKey(buf, v []byte) []byte {
	for _, c := range v {
		if c == 0 {
			buf = append(buf, 0, 0xFF)
		} else {
			buf = append(buf, c)
		}
	}
	return append(buf, 0, 0)
}
