package rel

import (
	"sync/atomic"
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
// several workers cuts each batch in one part per worker). It is false,
// with nothing made, when a segment's column is not of the schema's kind.
func gatherRefsFixed(mem memory.Allocator, schema *arrow.Schema, widths []int, refs []joinRef) (arrow.Record, bool) {
	// Number the segments refs point at (a stamp on each segment, not a
	// map: a join's output rows alternate between many of them).
	gen := gatherGen.Add(1)
	at := make([]int32, len(refs))
	var segs []*joinSeg
	fields := schema.Fields()
	for k, r := range refs {
		if r.seg == nil {
			at[k] = -1
			continue
		}
		if r.seg.gatherGen != gen {
			for i, f := range fields {
				if r.seg.rec.Column(i).DataType().ID() != f.Type.ID() {
					return nil, false
				}
			}
			r.seg.gatherGen, r.seg.gatherAt = gen, int32(len(segs))
			segs = append(segs, r.seg)
		}
		at[k] = r.seg.gatherAt
	}
	n := len(refs)
	cols := make([]arrow.Array, len(widths))
	srcs := make([]fixedSource, len(segs))
	for i, w := range widths {
		for s, seg := range segs {
			col := seg.rec.Column(i)
			d := col.Data()
			srcs[s] = fixedSource{col: col, data: d.Buffers()[1].Bytes()[d.Offset()*w:], nulls: col.NullN() > 0}
		}
		cols[i] = gatherColumnFixed(mem, fields[i].Type, w, refs, at, srcs)
	}
	rec := array.NewRecord(schema, cols, int64(n))
	releaseArrays(cols)
	return rec, true
}

// gatherGen stamps the segments of one gatherRefsFixed call
// (joinSeg.gatherGen).
var gatherGen atomic.Uint64

// fixedSource is one segment's column in a gather.
type fixedSource struct {
	col   arrow.Array
	data  []byte // its values from its offset on
	nulls bool
}

// gatherColumnFixed gathers a column of w bytes a value: row k is
// srcs[at[k]]'s row refs[k].i, NULL where at[k] < 0 or that row is NULL.
func gatherColumnFixed(mem memory.Allocator, typ arrow.DataType, w int, refs []joinRef, at []int32, srcs []fixedSource) arrow.Array {
	n := len(refs)
	data := memory.NewResizableBuffer(mem)
	data.Resize(n * w)
	dst := data.Bytes()
	var valid *memory.Buffer
	var bits []byte
	nulls := 0
	for k, r := range refs {
		s := at[k]
		if s < 0 || srcs[s].nulls && srcs[s].col.IsNull(int(r.i)) {
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
		src := srcs[s].data
		off := int(r.i) * w
		_ = src[off+w-1] // the value lies in the buffer
		if w == 8 {
			*(*uint64)(unsafe.Pointer(&dst[k*8])) = *(*uint64)(unsafe.Pointer(&src[off]))
		} else {
			copy(dst[k*w:k*w+w], src[off:off+w])
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
