package rel

import (
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// fixedWidths is the byte width of each of schema's columns, or false when
// one is not a plain fixed-width type (booleans, strings, dictionaries,
// nested and extension types take the general path).
func fixedWidths(schema *arrow.Schema) ([]int, bool) {
	widths := make([]int, schema.NumFields())
	for i, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.DICTIONARY, arrow.EXTENSION, arrow.BOOL, arrow.NULL:
			return nil, false
		}
		fw, ok := f.Type.(arrow.FixedWidthDataType)
		if !ok || fw.BitWidth() < 8 || fw.BitWidth()%8 != 0 {
			return nil, false
		}
		widths[i] = fw.BitWidth() / 8
	}
	return widths, true
}

// gatherRefsFixed is gatherRefs for a side whose columns are all
// fixed-width (keys, prices, times: q4's, q5's and most joins' columns):
// each column is copied once, straight from each ref's segment. The
// general path gathers each segment, concatenates them and gathers again
// in order: three copies, and per segment a record, which cost the join
// most where its rows come from many small batches (an exchange over
// several workers cuts each batch in one part per worker).
// It is false, with nothing made, when a segment's column is not of the
// schema's type.
func gatherRefsFixed(mem memory.Allocator, schema *arrow.Schema, widths []int, refs []joinRef) (arrow.Record, bool) {
	var seg *joinSeg
	for _, r := range refs {
		if r.seg == seg || r.seg == nil {
			continue
		}
		seg = r.seg
		for i, f := range schema.Fields() {
			if !arrow.TypeEqual(seg.rec.Column(i).DataType(), f.Type) {
				return nil, false
			}
		}
	}
	n := len(refs)
	cols := make([]arrow.Array, len(widths))
	for i, w := range widths {
		cols[i] = gatherColumnFixed(mem, schema.Field(i).Type, i, w, refs)
	}
	rec := array.NewRecord(schema, cols, int64(n))
	releaseArrays(cols)
	return rec, true
}

// gatherColumnFixed gathers column i (w bytes a value) of the rows refs
// point at; a nil segment or a NULL gives NULL.
func gatherColumnFixed(mem memory.Allocator, typ arrow.DataType, i, w int, refs []joinRef) arrow.Array {
	n := len(refs)
	data := memory.NewResizableBuffer(mem)
	data.Resize(n * w)
	dst := data.Bytes()
	var valid *memory.Buffer
	var bits []byte
	nulls := 0
	var seg *joinSeg
	var col arrow.Array
	var src []byte
	for k, r := range refs {
		if r.seg != seg || k == 0 {
			seg, col, src = r.seg, nil, nil
			if seg != nil {
				col = seg.rec.Column(i)
				d := col.Data()
				src = d.Buffers()[1].Bytes()[d.Offset()*w:]
			}
		}
		if col == nil || col.IsNull(int(r.i)) {
			if bits == nil {
				// The first NULL: every row before it was valid.
				valid = memory.NewResizableBuffer(mem)
				valid.Resize(int(bitutil.BytesForBits(int64(n))))
				bits = valid.Bytes()
				clear(bits)
				bitutil.SetBitsTo(bits, 0, int64(k), true)
			}
			nulls++
			clear(dst[k*w : k*w+w])
			continue
		}
		if bits != nil {
			bitutil.SetBit(bits, k)
		}
		at := int(r.i) * w
		_ = src[at+w-1] // the value lies in the buffer
		if w == 8 {
			*(*uint64)(unsafe.Pointer(&dst[k*8])) = *(*uint64)(unsafe.Pointer(&src[at]))
		} else {
			copy(dst[k*w:k*w+w], src[at:at+w])
		}
	}
	d := array.NewData(typ, n, []*memory.Buffer{valid, data}, nil, nulls, 0)
	data.Release()
	if valid != nil {
		valid.Release()
	}
	a := array.MakeFromData(d)
	d.Release()
	return a
}
