package logical

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tierflow/tierflow/planner/expr"
)

// SubtreeKey is a text two subtrees share only when they compute the same
// rows from the same sources: the same stream or table read, the same
// columns, filters, projections and aggregations, each expression compared
// by its form, its types and the input columns it reads. Names take part
// too (an alias makes another key), which keeps the rule simple at the cost
// of missing some equal pairs. ok is false for a subtree that holds a node
// it does not compare (a join, a model call, a sort, ...) or a subquery: a
// common subtree is only ever scans, filters, projections and aggregations.
//
// The executor builds a subtree whose key it has built before as the first
// one's operators, their output feeding both consumers (q5's two identical
// HOP aggregations of the bid stream then scan and exchange the bids once),
// and runtime/deploy pairs the graph's operators with the plan by the same
// key.
func SubtreeKey(n Node) (key string, ok bool) {
	var b strings.Builder
	if !writeSubtreeKey(&b, n) {
		return "", false
	}
	return b.String(), true
}

func writeSubtreeKey(b *strings.Builder, n Node) bool {
	switch x := n.(type) {
	case *Scan:
		// The catalog entry itself, not its name: two entries of one name
		// (a script that declares a stream again) are different sources.
		fmt.Fprintf(b, "scan(%p %p %q %v)", x.Stream, x.Table, x.Alias, x.Columns)
	case *Filter:
		b.WriteString("filter(")
		if !writeExprKey(b, x.Pred) {
			return false
		}
	case *Project:
		b.WriteString("project(")
		for i, e := range x.Exprs {
			b.WriteString(strconv.Quote(x.Names[i]))
			if !writeExprKey(b, e) {
				return false
			}
		}
	case *Aggregate:
		b.WriteString("aggregate(")
		for i, g := range x.Group {
			b.WriteString(strconv.Quote(x.GroupNames[i]))
			if !writeExprKey(b, g) {
				return false
			}
		}
		if w := x.Window; w != nil {
			fmt.Fprintf(b, "window(%d %d %d", w.Kind, w.Size, w.Slide)
			if !writeExprKey(b, w.Time) {
				return false
			}
			b.WriteString(")")
		}
		for i, a := range x.Aggs {
			b.WriteString(strconv.Quote(x.AggNames[i]))
			if !writeExprKey(b, a) {
				return false
			}
		}
	default:
		return false
	}
	for _, c := range n.Children() {
		if !writeSubtreeKey(b, c) {
			return false
		}
	}
	b.WriteString(")")
	return true
}

// writeExprKey writes e's form (its text) and, node by node, each node's
// Go type, result type and, for a column, its index: the text alone names
// columns, which two inputs may share.
func writeExprKey(b *strings.Builder, e expr.Expr) bool {
	if e == nil {
		b.WriteString("<nil>")
		return true
	}
	ok := true
	fmt.Fprintf(b, "[%q", e.String())
	expr.Walk(e, func(x expr.Expr) bool {
		if _, sub := x.(*expr.Subquery); sub {
			ok = false
			return false
		}
		fmt.Fprintf(b, " %T:%s", x, x.Type())
		if c, isCol := x.(*expr.Column); isCol {
			fmt.Fprintf(b, "#%d", c.Index)
		}
		return true
	})
	b.WriteString("]")
	return ok
}
