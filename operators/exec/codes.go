package exec

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// noteCodes finds the STRING columns of a table that a GROUP BY reads only
// as group keys, and records them for the table's scan: a Parquet reader
// then passes them on as their dictionary codes (sources.ParquetScan.Codes)
// and the aggregation groups on the codes (operators/rel's dictkeys.go), so
// no row's string is built. The GROUP BY must be right over the scan, or
// over a filter over it, or over a join of two tables (the scan of either
// side, right under the join): the join gathers the codes of its matches
// and the dictionary of its table once (HashJoin.Build). A column that a
// filter, the join's condition, an aggregate's argument or a computed key
// also reads stays a string, as does every column of an aggregation whose
// rows are hash-partitioned by key (the exchange hashes strings), or that
// is windowed, or whose rows may cross a relay (Options.Relayed), and of a
// join that may spill (its files hold plain columns) or is windowed.
func (b *builder) noteCodes(n *logical.Aggregate, exchange bool) {
	if n.Window != nil || exchange || b.opts.Relayed {
		return
	}
	other := map[int]bool{} // columns read other than as a plain key
	note := func(e expr.Expr) {
		for _, c := range expr.Columns(e) {
			other[c] = true
		}
	}
	for _, a := range n.Aggs {
		note(a)
	}
	var keys []int
	for _, g := range n.Group {
		c, ok := g.(*expr.Column)
		if !ok {
			note(g)
			continue
		}
		if c.DataType.ID() == arrow.STRING {
			keys = append(keys, c.Index)
		}
	}
	input := n.Input
	for {
		if f, ok := input.(*logical.Filter); ok {
			input = f.Input
			note(f.Pred)
			continue
		}
		// A projection of plain columns (the join order's, which restores
		// the columns' order over reordered joins) renumbers them.
		if p, ok := input.(*logical.Project); ok {
			cols, plain := plainColumns(p.Exprs)
			if !plain {
				break
			}
			for i, k := range keys {
				keys[i] = cols[k]
			}
			moved := map[int]bool{}
			for c := range other {
				moved[cols[c]] = true
			}
			other = moved
			input = p.Input
			continue
		}
		break
	}
	// sides: the scans whose columns the input's are, from column at on.
	type side struct {
		scan *logical.Scan
		at   int
	}
	var sides []side
	switch x := input.(type) {
	case *logical.Scan:
		sides = append(sides, side{x, 0})
	case *logical.Join:
		if x.Window != nil || x.On == nil || b.opts.MemoryLimit > 0 || !bounded(x.Left) || !bounded(x.Right) {
			return
		}
		note(x.On)
		nLeft := x.Left.Schema().NumFields()
		if s, ok := x.Left.(*logical.Scan); ok {
			sides = append(sides, side{s, 0})
		}
		if s, ok := x.Right.(*logical.Scan); ok {
			sides = append(sides, side{s, nLeft})
		}
	}
	for _, sd := range sides {
		if sd.scan.Table == nil {
			continue
		}
		width := sd.scan.Schema().NumFields()
		var codes []int
		for _, k := range keys {
			if !other[k] && k >= sd.at && k < sd.at+width {
				codes = append(codes, k-sd.at)
			}
		}
		if len(codes) == 0 {
			continue
		}
		if b.codes == nil {
			b.codes = map[*logical.Scan][]int{}
		}
		b.codes[sd.scan] = codes
	}
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
