package rewrite

import (
	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// reduceGroupedLeaves narrows the input of a grouped leaf of a join region
// to the keys another leaf can meet, before it is grouped: a leaf
//
//	(SELECT k, agg(...) FROM r GROUP BY k) AS d   joined on d.k = x.c
//
// (what a decorrelated correlated aggregate becomes: TPC-H Q17's avg per
// part, Q20's sum per part and supplier) aggregates only
//
//	r SEMI JOIN x ON r.k = x.c
//
// Every output row of the region satisfies d.k = x.c (an inner join's
// condition holds for all its rows), so a group whose key x lacks never
// reaches the output, and the groups x has keep every row of r: the
// aggregates are unchanged. This is the magic-set step of Neumann and
// Kemper's unnesting (their dependent join's domain pushed into the
// subquery), chosen here by cost: x is the leaf of the key's class with the
// fewest distinct keys, and the rewrite is made when that is at most half
// of the grouped leaf's (so at least half of r's rows, under uniform keys,
// are never hashed into a group; the semi join's probe costs about what a
// group's insert does, and x is read a second time). The classes of the
// region say which columns are equal; every pair of key columns the two
// leaves share is part of the semi join's condition.
func (r *reorderer) reduceGroupedLeaves(g *region, nodes []logical.Node, ests []*cardinality.Estimate, classes [][]int) {
	for a := range g.leaves {
		agg, keyOf := groupedLeaf(nodes[a])
		if agg == nil {
			continue
		}
		// The classes holding a grouped key column of a, and the best
		// partner leaf.
		type pair struct{ in, x int } // aggregate input column, region column of x
		best, bestD := -1, 0.0
		var aD float64
		for _, cl := range classes {
			for _, c := range cl {
				if g.leafOf(c) != a {
					continue
				}
				if _, ok := keyOf(c - g.leaves[a].off); !ok {
					continue
				}
				da := g.distinct(c, ests[a], cl)
				for _, m := range cl {
					x := g.leafOf(m)
					if x == a || g.leaves[x].stream || hasAggregate(nodes[x]) {
						continue
					}
					dx := g.distinct(m, ests[x], cl)
					if dx <= da/2 && (best < 0 || dx < bestD) {
						best, bestD, aD = x, dx, da
					}
				}
			}
		}
		if best < 0 || aD == 0 {
			continue
		}
		var pairs []pair
		for _, cl := range classes {
			in, xc := -1, -1
			for _, c := range cl {
				switch g.leafOf(c) {
				case a:
					if k, ok := keyOf(c - g.leaves[a].off); ok && in < 0 {
						in = k
					}
				case best:
					if xc < 0 {
						xc = c - g.leaves[best].off
					}
				}
			}
			if in >= 0 && xc >= 0 {
				pairs = append(pairs, pair{in, xc})
			}
		}
		inSchema := agg.Input.Schema()
		xSchema := nodes[best].Schema()
		width := inSchema.NumFields()
		var on []expr.Expr
		for _, p := range pairs {
			l := &expr.Column{Index: p.in, Name: inSchema.Field(p.in).Name, DataType: inSchema.Field(p.in).Type}
			rc := &expr.Column{Index: width + p.x, Name: xSchema.Field(p.x).Name, DataType: xSchema.Field(p.x).Type}
			if eq, ok := equality(l, rc); ok {
				on = append(on, eq)
			}
		}
		if len(on) == 0 {
			continue
		}
		semi := logical.NewJoin(logical.SemiJoin, agg.Input, nodes[best], and(on), agg.Pos)
		reduced := logical.NewAggregate(semi, agg.Group, agg.GroupNames, agg.Window, agg.Aggs, agg.AggNames, agg.Pos)
		nodes[a] = replaceAggregate(nodes[a], reduced)
		ests[a] = r.est.Estimate(nodes[a])
	}
}

// groupedLeaf is the Aggregate under n's filters and projections, when it
// groups a bounded input without a window, and keyOf, which maps a column
// of n to the input column it is a group key of (a key that is a plain
// column of the input).
func groupedLeaf(n logical.Node) (*logical.Aggregate, func(int) (int, bool)) {
	var maps []func(int) (int, bool)
	for {
		switch x := n.(type) {
		case *logical.Filter:
			n = x.Input
			continue
		case *logical.Project:
			p := x
			maps = append(maps, func(c int) (int, bool) {
				if c < 0 || c >= len(p.Exprs) {
					return 0, false
				}
				col, ok := p.Exprs[c].(*expr.Column)
				if !ok {
					return 0, false
				}
				return col.Index, true
			})
			n = x.Input
			continue
		case *logical.Aggregate:
			if x.Window != nil || len(x.Group) == 0 || !boundedNode(x.Input) {
				return nil, nil
			}
			agg := x
			return agg, func(c int) (int, bool) {
				for _, m := range maps {
					var ok bool
					if c, ok = m(c); !ok {
						return 0, false
					}
				}
				if c < 0 || c >= len(agg.Group) {
					return 0, false
				}
				col, ok := agg.Group[c].(*expr.Column)
				if !ok {
					return 0, false
				}
				return col.Index, true
			}
		}
		return nil, nil
	}
}

// replaceAggregate is n with the Aggregate under its filters and
// projections replaced by agg (the same schema).
func replaceAggregate(n logical.Node, agg *logical.Aggregate) logical.Node {
	switch x := n.(type) {
	case *logical.Filter, *logical.Project:
		return n.WithChildren(replaceAggregate(x.Children()[0], agg))
	case *logical.Aggregate:
		return agg
	}
	return n
}

func hasAggregate(n logical.Node) bool {
	found := false
	logical.Walk(n, func(x logical.Node) bool {
		if _, ok := x.(*logical.Aggregate); ok {
			found = true
		}
		return !found
	})
	return found
}
