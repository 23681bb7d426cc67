package frame

import (
	"bytes"
	"encoding/binary"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// appendRecordFast is the sending half of zerocopy.go: for the plain layouts
// it writes the IPC record batch message itself, the metadata flatbuffer laid
// out by hand (it only ever has the same three tables), and the column buffers
// straight from the record. Arrow's writer builds the same message through a
// generic flatbuffer builder, a dictionary walk and a dozen allocations, which
// for small batches costs more than moving the bytes. ok is false, with
// nothing written, for anything it does not handle (sliced arrays, buffers
// shorter than their length implies); the caller then uses Arrow's writer.
func appendRecordFast(buf *bytes.Buffer, rec arrow.Record, w *fastWriter) bool {
	w.nodes, w.bufs = w.nodes[:0], w.bufs[:0]
	defer clear(w.bufs[:cap(w.bufs)]) // don't keep the record's memory alive
	for _, c := range rec.Columns() {
		if !w.add(c.Data()) {
			return false
		}
	}
	w.write(buf, rec.NumRows())
	return true
}

// fastWriter is the scratch of appendRecordFast, kept by the Encoder so a
// steady stream does not allocate it per batch.
type fastWriter struct {
	nodes [][2]int64
	bufs  [][]byte
	meta  []byte
}

func (w *fastWriter) add(d arrow.ArrayData) bool { return w.addN(d, d.Len()) }

// addN queues the first n rows of d. A fixed-size list or struct sliced from
// the start of a bigger record keeps its children whole: only the values its
// rows use are sent (a prefix with nulls, whose count Arrow keeps only for the
// whole array, is left to Arrow's writer).
func (w *fastWriter) addN(d arrow.ArrayData, n int) bool {
	if d.Offset() != 0 || n > d.Len() {
		return false
	}
	nulls := d.NullN()
	if n < d.Len() && nulls != 0 {
		return false
	}
	w.nodes = append(w.nodes, [2]int64{int64(n), int64(nulls)})
	bs := d.Buffers()
	if len(bs) == 0 {
		return false
	}
	if nulls == 0 {
		w.bufs = append(w.bufs, nil)
	} else if !w.buf(bs[0], (n+7)/8) {
		return false
	}
	switch t := d.DataType().(type) {
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		wide := t.ID() == arrow.LARGE_STRING || t.ID() == arrow.LARGE_BINARY
		end, ok := w.offsets(bs, n, wide)
		return ok && len(bs) > 2 && w.buf(bs[2], int(end))
	case *arrow.ListType, *arrow.LargeListType:
		end, ok := w.offsets(bs, n, t.ID() == arrow.LARGE_LIST)
		ch := d.Children()
		return ok && len(ch) == 1 && int64(ch[0].Len()) >= end && w.add(ch[0])
	case *arrow.FixedSizeListType:
		ch := d.Children()
		return len(ch) == 1 && ch[0].Len() >= n*int(t.Len()) && w.addN(ch[0], n*int(t.Len()))
	case *arrow.StructType:
		for _, c := range d.Children() {
			if c.Len() < n || !w.addN(c, n) {
				return false
			}
		}
		return len(d.Children()) == len(t.Fields())
	case arrow.FixedWidthDataType:
		if !zeroCopyable(t) || len(bs) < 2 {
			return false
		}
		return w.buf(bs[1], int((int64(n)*int64(t.BitWidth())+7)/8))
	}
	return false
}

// buf queues the first n bytes of b, refusing a buffer shorter than that.
func (w *fastWriter) buf(b *memory.Buffer, n int) bool {
	if n == 0 {
		w.bufs = append(w.bufs, nil)
		return true
	}
	if b == nil {
		return false
	}
	raw := b.Bytes()
	if len(raw) < n {
		return false
	}
	w.bufs = append(w.bufs, raw[:n])
	return true
}

// offsets queues the offsets of an n-row variable-length array, which must
// start at 0 (else the data would need rebasing), and returns the last one.
func (w *fastWriter) offsets(bs []*memory.Buffer, n int, wide bool) (int64, bool) {
	if n == 0 {
		w.bufs = append(w.bufs, nil)
		return 0, true
	}
	if len(bs) < 2 || bs[1] == nil {
		return 0, false
	}
	width := 4
	if wide {
		width = 8
	}
	raw := bs[1].Bytes()
	if len(raw) < (n+1)*width {
		return 0, false
	}
	var first, last int64
	if wide {
		first, last = int64(binary.LittleEndian.Uint64(raw)), int64(binary.LittleEndian.Uint64(raw[n*8:]))
	} else {
		first, last = int64(int32(binary.LittleEndian.Uint32(raw))), int64(int32(binary.LittleEndian.Uint32(raw[n*4:])))
	}
	if first != 0 || last < 0 {
		return 0, false
	}
	w.bufs = append(w.bufs, raw[:(n+1)*width])
	return last, true
}

func pad8(n int) int { return (n + 7) &^ 7 }

// write emits continuation, metadata length, metadata and body. The metadata
// layout (offsets from its start):
//
//	0   root offset -> Message table at 32
//	4   Message vtable: 4 fields (version, header type, header, body length)
//	16  RecordBatch vtable: 3 fields (length, nodes, buffers)
//	32  Message table (24 bytes)
//	56  RecordBatch table (24 bytes)
//	80  nodes vector (length at 84, 16-byte structs from 88), then buffers
func (w *fastWriter) write(buf *bytes.Buffer, rows int64) {
	nn, nb := len(w.nodes), len(w.bufs)
	nodesAt := 84
	bufsAt := 88 + 16*nn + 4
	metaLen := bufsAt + 4 + 16*nb
	body := 0
	for _, b := range w.bufs {
		body += pad8(len(b))
	}
	if cap(w.meta) < metaLen {
		w.meta = make([]byte, metaLen)
	}
	m := w.meta[:metaLen]
	clear(m)
	le := binary.LittleEndian
	le.PutUint32(m[0:], 32)
	// Message vtable.
	le.PutUint16(m[4:], 12)
	le.PutUint16(m[6:], 24)
	le.PutUint16(m[8:], 4)   // version
	le.PutUint16(m[10:], 6)  // header type
	le.PutUint16(m[12:], 8)  // header
	le.PutUint16(m[14:], 16) // body length
	// RecordBatch vtable.
	le.PutUint16(m[16:], 10)
	le.PutUint16(m[18:], 24)
	le.PutUint16(m[20:], 8)  // length
	le.PutUint16(m[22:], 4)  // nodes
	le.PutUint16(m[24:], 16) // buffers
	// Message table.
	le.PutUint32(m[32:], uint32(32-4))
	le.PutUint16(m[36:], 4) // MetadataV5
	m[38] = fbHeaderRecord
	le.PutUint32(m[40:], uint32(56-40))
	le.PutUint64(m[48:], uint64(body))
	// RecordBatch table.
	le.PutUint32(m[56:], uint32(56-16))
	le.PutUint32(m[60:], uint32(nodesAt-60))
	le.PutUint64(m[64:], uint64(rows))
	le.PutUint32(m[72:], uint32(bufsAt-72))
	// Vectors.
	le.PutUint32(m[nodesAt:], uint32(nn))
	for i, nd := range w.nodes {
		le.PutUint64(m[88+16*i:], uint64(nd[0]))
		le.PutUint64(m[88+16*i+8:], uint64(nd[1]))
	}
	le.PutUint32(m[bufsAt:], uint32(nb))
	off := 0
	for i, b := range w.bufs {
		le.PutUint64(m[bufsAt+4+16*i:], uint64(off))
		le.PutUint64(m[bufsAt+4+16*i+8:], uint64(len(b)))
		off += pad8(len(b))
	}
	var pre [8]byte
	le.PutUint32(pre[:], ipcContinuation)
	le.PutUint32(pre[4:], uint32(metaLen))
	buf.Grow(8 + metaLen + body)
	buf.Write(pre[:])
	buf.Write(m)
	var zeros [8]byte
	for _, b := range w.bufs {
		buf.Write(b)
		buf.Write(zeros[:pad8(len(b))-len(b)])
	}
}
