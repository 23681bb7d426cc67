package arrowx

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// RecordBytes is the size of the part of rec's buffers its rows use
// (children and dictionaries included): what a record holds in memory,
// with nothing serialised. A slice counts its share, not the buffers it
// shares: a window aggregation cuts the windows a watermark closes out of
// one record, and 40,000 slices each weighed as the whole record would
// fill a link's byte credit or a join's spill budget 40,000 times over.
func RecordBytes(rec arrow.Record) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += DataBytes(c.Data())
	}
	return n
}

// DataBytes is the size of d's buffers, its children's and its
// dictionary's. A slice's top-level buffers count the range its rows use
// where the layout says it (fixed-width values, validity bitmaps, and the
// values of a string or binary array through its offsets); children and
// dictionaries count whole, as a slice of a nested array does not narrow
// its children.
func DataBytes(d arrow.ArrayData) int64 {
	var n int64
	specs := layoutBuffers(d.DataType())
	bufs := d.Buffers()
	for i, b := range bufs {
		if b == nil {
			continue
		}
		used := int64(b.Len())
		if i < len(specs) {
			if u, ok := usedBytes(d, specs[i], i); ok && u < used {
				used = u
			}
		}
		n += used
	}
	for _, c := range d.Children() {
		n += DataBytes(c)
	}
	// Dictionary returns a typed nil when there is none.
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += DataBytes(dict)
	}
	return n
}

// layoutBuffers is dt's buffer layout, or none when dt has no fixed one.
func layoutBuffers(dt arrow.DataType) []arrow.BufferSpec {
	l, ok := dt.(arrow.FixedWidthDataType)
	if ok {
		return l.Layout().Buffers
	}
	if isVarWidth(dt) {
		return dt.(interface{ Layout() arrow.DataTypeLayout }).Layout().Buffers
	}
	return nil
}

// isVarWidth says whether dt is a string or binary type (offsets, then values).
func isVarWidth(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// usedBytes is how much of buffer i (laid out as spec) d's rows use.
func usedBytes(d arrow.ArrayData, spec arrow.BufferSpec, i int) (int64, bool) {
	rows := int64(d.Len())
	switch spec.Kind {
	case arrow.KindBitmap:
		return (rows + 7) / 8, true
	case arrow.KindFixedWidth:
		if i == 1 && isVarWidth(d.DataType()) {
			rows++ // the offsets: one past the last row's too
		}
		return rows * int64(spec.ByteWidth), true
	case arrow.KindVarWidth:
		// The values between the first row's offset and the one past the
		// last row's.
		offs := d.Buffers()[1]
		if offs == nil || rows == 0 {
			return 0, true
		}
		first, last := int64(d.Offset()), int64(d.Offset())+rows
		switch d.DataType().ID() {
		case arrow.STRING, arrow.BINARY:
			o := arrow.Int32Traits.CastFromBytes(offs.Bytes())
			if last >= int64(len(o)) {
				return 0, false
			}
			return int64(o[last] - o[first]), true
		case arrow.LARGE_STRING, arrow.LARGE_BINARY:
			o := arrow.Int64Traits.CastFromBytes(offs.Bytes())
			if last >= int64(len(o)) {
				return 0, false
			}
			return o[last] - o[first], true
		}
	}
	return 0, false
}

// Reserve makes room in b for n more values. Arrow's Builder.Reserve sizes
// the room past n to the next power of two, so Reserve(1024) on an empty
// builder makes room for 2048 values (1 << bits.Len(1024)), and the
// finished array keeps that memory though it shrinks to its values: every
// batch of a power-of-two size held twice its bytes. An empty builder is
// sized to n exactly (Resize); one holding values grows as Arrow's does.
func Reserve(b array.Builder, n int) {
	if n <= 0 {
		return
	}
	if b.Len() == 0 && b.Cap() == 0 {
		b.Resize(n)
		return
	}
	b.Reserve(n)
}
