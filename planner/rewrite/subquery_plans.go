package rewrite

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// optimizeSubqueries runs the rules over the plan of every subquery in the
// plan's expressions (an IN list's SELECT, a scalar subquery, a subquery
// inside those), as over the query itself: an executor answers each before
// the query by running its plan, which was otherwise the binder's as bound,
// joins in FROM order and filters where written (TPC-H Q20's decorrelated
// sum inside its IN). A subquery the rules copied (a key's IN filter on
// each side of a join) is one plan, optimized once, so that the copies
// still share it and it runs once.
func optimizeSubqueries(root logical.Node, o Options, memo map[logical.Node]logical.Node) logical.Node {
	fix := func(e expr.Expr) expr.Expr {
		if e == nil {
			return nil
		}
		return expr.Transform(e, func(x expr.Expr) expr.Expr {
			sq, ok := x.(*expr.Subquery)
			if !ok {
				return x
			}
			plan, ok := sq.Plan.(logical.Node)
			if !ok {
				return x
			}
			done, seen := memo[plan]
			if !seen {
				out := ApplyWith(&logical.Plan{Root: &logical.Sink{Input: plan, Pos: plan.Position()}}, o).Root
				if s, ok := out.(*logical.Sink); ok {
					done = s.Input
				} else {
					done = plan
				}
				if !sameColumns(done, plan) {
					done = plan
				}
				memo[plan] = done
			}
			c := *sq
			c.Plan = done
			return &c
		})
	}
	return logical.Transform(root, func(n logical.Node) logical.Node {
		switch x := n.(type) {
		case *logical.Filter:
			if !anySubquery(x.Pred) {
				return n
			}
			c := *x
			c.Pred = fix(x.Pred)
			return &c
		case *logical.Project:
			if !anySubquery(x.Exprs...) {
				return n
			}
			exprs := make([]expr.Expr, len(x.Exprs))
			for i, e := range x.Exprs {
				exprs[i] = fix(e)
			}
			return logical.NewProject(x.Input, exprs, x.Names, x.Pos)
		case *logical.Join:
			if !anySubquery(x.On) {
				return n
			}
			return x.WithOn(fix(x.On))
		}
		return n
	})
}

// sameColumns: the rules kept the subquery's output (its first column is
// what an IN or a value reads).
func sameColumns(a, b logical.Node) bool {
	as, bs := a.Schema(), b.Schema()
	if as.NumFields() != bs.NumFields() {
		return false
	}
	for i := range as.NumFields() {
		if as.Field(i).Name != bs.Field(i).Name || !arrow.TypeEqual(as.Field(i).Type, bs.Field(i).Type) {
			return false
		}
	}
	return true
}

func anySubquery(es ...expr.Expr) bool {
	found := false
	for _, e := range es {
		if e == nil {
			continue
		}
		expr.Transform(e, func(x expr.Expr) expr.Expr {
			if _, ok := x.(*expr.Subquery); ok {
				found = true
			}
			return x
		})
	}
	return found
}
