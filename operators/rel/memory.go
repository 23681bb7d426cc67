package rel

import "github.com/apache/arrow/go/v17/arrow"

// What an operator keeps counts against its query's memory budget
// (dataflow.Context.Memory): the Arrow buffers of the records it holds are
// counted where they were made (the query's allocator, or the relay for a
// record decoded in place), so an operator charges what it keeps beside
// them, in Go structures: its hash tables and indexes, its window, session
// and partition state, and each record it holds (the record's, arrays' and
// buffers' headers). The estimates are by construction, so they cost
// nothing to keep up to date.

// recordGoBytes is what holding rec costs beside its buffers: the record
// and, per column, its array, data and buffer headers.
func recordGoBytes(rec arrow.Record) int64 {
	return 64 + 160*rec.NumCols()
}

// recordsGoBytes is recordGoBytes over recs.
func recordsGoBytes(recs []arrow.Record) int64 {
	var n int64
	for _, r := range recs {
		n += recordGoBytes(r)
	}
	return n
}
