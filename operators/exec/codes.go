package exec

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// noteCodes finds the STRING columns of a table that a GROUP BY right over
// its scan (or over a filter over it) reads only as group keys, and records
// them for the scan: a Parquet reader then passes them on as their
// dictionary codes (sources.ParquetScan.Codes) and the aggregation groups on
// the codes (operators/rel's dictkeys.go), so no row's string is built. A
// column that the filter, an aggregate's argument or a computed key also
// reads stays a string, as does every column of an aggregation whose rows
// are hash-partitioned by key (the exchange hashes strings), or that is
// windowed, or whose rows may cross a relay (Options.Relayed).
func (b *builder) noteCodes(n *logical.Aggregate, exchange bool) {
	if n.Window != nil || exchange || b.opts.Relayed {
		return
	}
	input := n.Input
	var pred expr.Expr
	if f, ok := input.(*logical.Filter); ok {
		input, pred = f.Input, f.Pred
	}
	s, ok := input.(*logical.Scan)
	if !ok || s.Table == nil {
		return
	}
	other := map[int]bool{} // columns read other than as a plain key
	for _, c := range expr.Columns(pred) {
		other[c] = true
	}
	for _, a := range n.Aggs {
		for _, c := range expr.Columns(a) {
			other[c] = true
		}
	}
	var keys []int
	for _, g := range n.Group {
		c, ok := g.(*expr.Column)
		if !ok {
			for _, c := range expr.Columns(g) {
				other[c] = true
			}
			continue
		}
		if c.DataType.ID() == arrow.STRING {
			keys = append(keys, c.Index)
		}
	}
	var codes []int
	for _, k := range keys {
		if !other[k] {
			codes = append(codes, k)
		}
	}
	if len(codes) == 0 {
		return
	}
	if b.codes == nil {
		b.codes = map[*logical.Scan][]int{}
	}
	b.codes[s] = codes
}

// codeNames are the names, in the reader's schema, of the scan's output
// columns noteCodes recorded; n is the scan as projectScan renumbered it.
func codeNames(cols []int, n *logical.Scan, schema *arrow.Schema) []string {
	var out []string
	for _, c := range cols {
		if len(n.Columns) > 0 {
			if c >= len(n.Columns) {
				continue
			}
			c = n.Columns[c]
		}
		if c < schema.NumFields() && schema.Field(c).Type.ID() == arrow.STRING {
			out = append(out, schema.Field(c).Name)
		}
	}
	return out
}
