package rewrite

import (
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// PushFilterBelowModelID pushes filters below ML operators.
const PushFilterBelowModelID RuleID = "push_filter_below_model"

// PushFilterBelowModel moves the conjuncts of a filter that read only a
// model's input columns below the model, so the model scores only rows that
// survive (and fewer rows cross the link to it). Conjuncts that read the
// model's outputs stay above. Applies repeatedly through chains of models.
func PushFilterBelowModel(n logical.Node) logical.Node {
	return logical.Transform(n, func(x logical.Node) logical.Node {
		f, ok := x.(*logical.Filter)
		if !ok {
			return x
		}
		return pushFilter(f)
	})
}

func pushFilter(f *logical.Filter) logical.Node {
	m, ok := f.Input.(*logical.LateralModel)
	if !ok {
		return f
	}
	nin := len(m.Input.Schema().Fields())
	var below, above []expr.Expr
	for _, c := range conjuncts(f.Pred) {
		if readsOnlyBelow(c, nin) {
			below = append(below, c)
		} else {
			above = append(above, c)
		}
	}
	if len(below) == 0 {
		return f
	}
	// Columns of the model's input keep their indexes in its output, so the
	// pushed predicate needs no remapping.
	inner := pushFilter(&logical.Filter{Input: m.Input, Pred: and(below), Pos: f.Pos})
	var out logical.Node = m.WithChildren(inner)
	if len(above) > 0 {
		out = &logical.Filter{Input: out, Pred: and(above), Pos: f.Pos}
	}
	return out
}

func readsOnlyBelow(e expr.Expr, nin int) bool {
	for _, c := range expr.Columns(e) {
		if c >= nin {
			return false
		}
	}
	return true
}

func conjuncts(e expr.Expr) []expr.Expr {
	if l, ok := e.(*expr.Logic); ok && l.Op == expr.OpAnd {
		var out []expr.Expr
		for _, a := range l.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []expr.Expr{e}
}

func and(es []expr.Expr) expr.Expr {
	if len(es) == 1 {
		return es[0]
	}
	return &expr.Logic{Op: expr.OpAnd, Args: es}
}
