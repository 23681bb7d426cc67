package rewrite

import (
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// PushFilterBelowJoinID moves filters below the joins and projections they
// sit over, where the join order alone does not.
const PushFilterBelowJoinID RuleID = "push_filter_below_join"

// PushFilterBelowJoin moves each conjunct of a filter as far down as its
// meaning allows, before the joins are ordered:
//
//   - through a projection, when every column the conjunct reads is a
//     column the projection passes on (renamed or not);
//   - below a LEFT, semi, anti or mark join, into the left input, when it
//     reads the left input's columns only (the rows it keeps are the left
//     rows it keeps);
//   - a conjunct that is never TRUE when the right side of a LEFT JOIN is
//     NULL (l_quantity < $v, over the NULLs of an unmatched row) drops the
//     rows the LEFT JOIN adds, so the join is an inner join: then
//     ReorderJoins orders it with the joins around it;
//     (and a conjunct of the right side alone goes below it, into the
//     right input);
//   - an inner join's filters are left to ReorderJoins.
//
// A decorrelated subquery (TPC-H Q17's avg per part, Q2's min cost) is a
// LEFT JOIN under the query's WHERE; without this its filters of the outer
// tables (p_brand = ..., p_container = ...) ran above the join, over every
// joined row. Windowed joins are left as they are.
func PushFilterBelowJoin(n logical.Node) logical.Node {
	if f, ok := n.(*logical.Filter); ok {
		if out, moved := pushBelow(f); moved {
			return PushFilterBelowJoin(out)
		}
	}
	return logical.MapChildren(n, PushFilterBelowJoin)
}

// pushBelow moves what it can of f below f's input, one level; moved false:
// nothing moved and f is as it was.
func pushBelow(f *logical.Filter) (logical.Node, bool) {
	conj := conjuncts(f.Pred)
	switch in := f.Input.(type) {
	case *logical.Filter:
		return &logical.Filter{Input: in.Input, Pred: and(append(conjuncts(in.Pred), conj...)), Pos: in.Pos}, true
	case *logical.Project:
		var below, above []expr.Expr
		for _, c := range conj {
			if b, ok := throughProject(c, in); ok {
				below = append(below, b)
			} else {
				above = append(above, c)
			}
		}
		if len(below) == 0 {
			return f, false
		}
		out := in.WithChildren(&logical.Filter{Input: in.Input, Pred: and(below), Pos: f.Pos})
		return withFilter(out, above, f.Pos), true
	case *logical.Join:
		return pushBelowJoin(f, in, conj)
	}
	return f, false
}

func pushBelowJoin(f *logical.Filter, j *logical.Join, conj []expr.Expr) (logical.Node, bool) {
	if j.Window != nil || j.Kind == logical.InnerJoin || j.Kind == logical.CrossJoin {
		// (An inner join's filters are ReorderJoins's: it places each at
		// the relations it reads, and sees a constant filter of a key
		// before it copies it along the key's equalities.)
		return f, false
	}
	nl := j.Left.Schema().NumFields()
	kind := j.Kind
	if kind == logical.LeftJoin {
		for _, c := range conj {
			if nullOnRight(c, nl) {
				kind = logical.InnerJoin
				break
			}
		}
	}
	var left, right, above []expr.Expr
	for _, c := range conj {
		cols := expr.Columns(c)
		switch {
		case len(cols) > 0 && cols[len(cols)-1] < nl:
			left = append(left, c)
		case len(cols) > 0 && cols[0] >= nl && kind == logical.InnerJoin:
			right = append(right, shift(c, -nl))
		default:
			above = append(above, c)
		}
	}
	if len(left) == 0 && len(right) == 0 && kind == j.Kind {
		return f, false
	}
	l, r := j.Left, j.Right
	if len(left) > 0 {
		l = &logical.Filter{Input: l, Pred: and(left), Pos: f.Pos}
	}
	if len(right) > 0 {
		r = &logical.Filter{Input: r, Pred: and(right), Pos: f.Pos}
	}
	nj := j.WithChildren(l, r).(*logical.Join)
	nj.Kind = kind
	return withFilter(nj, above, f.Pos), true
}

func withFilter(n logical.Node, preds []expr.Expr, pos logical.Pos) logical.Node {
	if len(preds) == 0 {
		return n
	}
	return &logical.Filter{Input: n, Pred: and(preds), Pos: pos}
}

// throughProject is c over p's input, when every column c reads is one p
// passes on as a plain column.
func throughProject(c expr.Expr, p *logical.Project) (expr.Expr, bool) {
	for _, i := range expr.Columns(c) {
		if _, ok := p.Exprs[i].(*expr.Column); !ok {
			return nil, false
		}
	}
	return expr.Transform(c, func(x expr.Expr) expr.Expr {
		if col, ok := x.(*expr.Column); ok {
			return p.Exprs[col.Index]
		}
		return x
	}), true
}

// nullOnRight: e is never TRUE when every column from nl on (a LEFT JOIN's
// right side) is NULL, so a filter by e drops the rows a LEFT JOIN adds.
// NULL AND FALSE is FALSE: an AND needs one such operand, an OR all.
func nullOnRight(e expr.Expr, nl int) bool {
	if l, ok := e.(*expr.Logic); ok {
		all := true
		for _, a := range l.Args {
			r := nullOnRight(a, nl)
			if r && l.Op == expr.OpAnd {
				return true
			}
			all = all && r
		}
		return l.Op == expr.OpOr && all
	}
	return nullIfRightNull(e, nl)
}

// nullIfRightNull: e is NULL when the columns from nl on are. Conservative:
// only operators that are NULL when an operand is; anything else (IS NULL,
// COALESCE, CASE, AND, OR, a function) answers false.
func nullIfRightNull(e expr.Expr, nl int) bool {
	switch x := e.(type) {
	case *expr.Column:
		return x.Index >= nl
	case *expr.Cast:
		return nullIfRightNull(x.Expr, nl)
	case *expr.Not:
		return nullIfRightNull(x.Expr, nl)
	case *expr.Call:
		switch x.Func {
		case "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
			"add", "subtract", "multiply", "divide", "negate":
		default:
			return false
		}
		for _, a := range x.Args {
			if nullIfRightNull(a, nl) {
				return true
			}
		}
	case *expr.Between:
		// (Only x: x BETWEEN NULL AND 5 is FALSE for x = 7.)
		return nullIfRightNull(x.Expr, nl)
	case *expr.In:
		return nullIfRightNull(x.Expr, nl)
	case *expr.Like:
		return nullIfRightNull(x.Expr, nl) || nullIfRightNull(x.Pattern, nl)
	}
	return false
}
