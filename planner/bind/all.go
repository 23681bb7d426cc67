package bind

import (
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// DuckDB's GROUP BY ALL and ORDER BY ALL spare listing the columns twice.

// groupByAll is s grouped by each of its SELECT items that has neither an
// aggregate nor a window function (a copy: the AST is not changed).
func (b *Binder) groupByAll(s *lang.Select) *lang.Select {
	c := *s
	c.GroupByAll, c.GroupBy = false, nil
	for _, it := range s.Items {
		if it.Expr == nil || hasAggregateCall(it.Expr, b.Funcs) || hasWindowCall(it.Expr) {
			continue
		}
		c.GroupBy = append(c.GroupBy, it.Expr)
	}
	return &c
}

// orderByAll sorts n's rows by every column, left to right, ascending with
// NULLs last.
func orderByAll(n logical.Node, pos lang.Node) logical.Node {
	var keys []logical.SortKey
	for i, f := range n.Schema().Fields() {
		keys = append(keys, nullOrder(&lang.OrderItem{}, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})...)
	}
	if len(keys) == 0 {
		return n
	}
	return &logical.Sort{Input: n, Keys: keys, Pos: Pos(pos.Position())}
}
