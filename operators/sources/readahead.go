package sources

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
)

// A parallel reader bounds what it holds parsed ahead of its consumer by
// bytes, not by a count of chunks per core: its part of the query's
// read-ahead (dataflow.ReadAheadGate), which every reader of the query
// shares. A count per core made the read-ahead of a 16-core worker ~34
// MiB, so a query under a 10 MiB limit failed in its scan on that machine
// and ran on a 2-core one: whether a query fits its budget would depend on
// the machine. A chunk (or row group) is charged what it will hold: its
// records and what the reader keeps besides (a CSV chunk's text).

// settleRecords settles a chunk's charge at what it holds: its records'
// buffers and kept bytes besides, parsed from in input bytes.
func settleRecords(g *dataflow.ReadAheadGate, charged *int64, in int64, recs []arrow.Record, kept int64) {
	if g == nil {
		return
	}
	n := kept
	for _, r := range recs {
		for _, c := range r.Columns() {
			n += allocatedBytes(c.Data())
		}
	}
	g.Settle(charged, in, n)
}

// aheadChunkBytes is the size of a CSV chunk read ahead under allow bytes
// of read-ahead: csvChunkBytes, or less where the allowance would hold
// fewer than aheadChunks of them, so that several chunks are parsed at
// once under a small budget too (a chunk of an eighth of a 10 MiB budget's
// allowance parses in parallel with the next; a chunk of 1 MiB would go
// alone). Never under csvMinChunkBytes, where a chunk's fixed costs (its
// builders, a record per batch) would dominate.
func aheadChunkBytes(allow int64) int {
	if allow <= 0 {
		return csvChunkBytes
	}
	return int(min(int64(csvChunkBytes), max(allow/aheadChunks, csvMinChunkBytes)))
}

// aheadChunks is how many chunks an allowance is cut into: room for the
// chunk being handed out, one being parsed and two more, when records take
// the bytes of their text and the text is held beside them (twice a
// chunk's bytes each).
const aheadChunks = 8

// csvMinChunkBytes is the smallest chunk aheadChunkBytes cuts.
const csvMinChunkBytes = 64 << 10

// allocatedBytes is what d's buffers took from the allocator (their
// capacity: a builder's buffer grows by doubling, and the budget is
// charged the allocation, not the length used).
func allocatedBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Cap())
		}
	}
	for _, c := range d.Children() {
		n += allocatedBytes(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += allocatedBytes(dict)
	}
	return n
}
