package exec

import (
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/logical"
)

// projectScan narrows a scan of a columnar file to the columns it reads (and
// a stream's event-time column, which its watermark needs), in file order:
// the reader is opened with the returned schema and decodes nothing else. It
// returns the scan with its column indexes, and the event time, renumbered
// against that schema.
func projectScan(n *logical.Scan, schema *arrow.Schema, et sources.EventTime) (*arrow.Schema, *logical.Scan, sources.EventTime) {
	s, m, et, _ := projectColumns(n, schema, et)
	return s, m, et
}

// projectColumns is projectScan that also returns where each column of the
// narrowed schema is in schema (nil: nothing narrowed).
func projectColumns(n *logical.Scan, schema *arrow.Schema, et sources.EventTime) (*arrow.Schema, *logical.Scan, sources.EventTime, []int) {
	if len(n.Columns) == 0 {
		return schema, n, et, nil // no pruning recorded: every column
	}
	keep := slices.Clone(n.Columns)
	if et.Column >= 0 {
		keep = append(keep, et.Column)
	}
	slices.Sort(keep)
	keep = slices.Compact(keep)
	if len(keep) == schema.NumFields() || keep[len(keep)-1] >= schema.NumFields() {
		return schema, n, et, nil
	}
	at := make(map[int]int, len(keep))
	fs := make([]arrow.Field, len(keep))
	for i, c := range keep {
		at[c] = i
		fs[i] = schema.Field(c)
	}
	m := *n
	m.Columns = make([]int, len(n.Columns))
	for i, c := range n.Columns {
		m.Columns[i] = at[c]
	}
	if et.Column >= 0 {
		et.Column = at[et.Column]
	}
	md := schema.Metadata()
	return arrow.NewSchema(fs, &md), &m, et, keep
}

// minColumnarBatch is the fewest rows a scan of a Parquet table decodes at a
// time: the reader's cost per batch (a goroutine per column, page
// bookkeeping) is amortised over four times the default batch (1.5x to 1.8x
// on a filter and aggregate over 1M rows). A table's batches do not change
// its answer; a stream keeps --batch-size, since its watermark advances per
// batch.
const minColumnarBatch = 16384

func (b *builder) parquetBatch(table bool) int {
	if !table {
		return b.opts.BatchSize
	}
	return max(b.opts.BatchSize, minColumnarBatch)
}
