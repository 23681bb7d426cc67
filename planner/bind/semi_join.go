package bind

import (
	"fmt"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/logical"
)

// semiJoin rewrites a correlated [NOT] EXISTS that is a conjunct of a
// block's WHERE into a semi (anti) join of the block's FROM row with the
// subquery's FROM row:
//
//	WHERE ... AND [NOT] EXISTS (SELECT ... FROM f WHERE f.k = o.k AND f.x <> o.x AND rest)
//	  node SEMI|ANTI JOIN (SELECT f.k AS $c1, f.x AS $c2 FROM f WHERE rest) $sq
//	       ON $sq.$c1 = o.k AND $sq.$c2 <> o.x
//
// As a conjunct of WHERE, EXISTS only keeps or drops the row, and a semi
// join does exactly that: one hash table of the subquery's rows, probed once
// per outer row (or built from the outer rows when they are fewer), with the
// non-equality correlations as the join's residual. The grouped derived
// table of decorrelateOne (a count per key, then a LEFT JOIN and IS NOT
// NULL) and the IN list of decorrelateExists (every key as a literal) both
// build more than this; they remain for EXISTS elsewhere (under OR, in the
// SELECT list) and for streams, where the set is built once.
//
// ok is false when the subquery does not have this shape; the caller then
// rewrites it as before. Nothing is reported here: a subquery this refuses
// binds the other way, which reports what is wrong.
func (b *Binder) semiJoin(x *lang.ExistsExpr, anti bool, node logical.Node, sc *scope) (logical.Node, bool) {
	q := x.Query
	s := q.Select
	if len(q.UnionAll) > 0 || len(q.With) > 0 || q.Limit != nil || q.Offset != nil ||
		len(s.From) == 0 || s.Where == nil || len(s.GroupBy) > 0 || s.Having != nil {
		return nil, false
	}
	for _, it := range s.Items {
		// SELECT count(*) ... has a row even over none: EXISTS is TRUE.
		if it.Expr != nil && hasAggregateCall(it.Expr, b.Funcs) {
			return nil, false
		}
	}
	if streamOf(node) != "" {
		return nil, false
	}
	quiet := func() func() {
		n0, clause := len(b.errs), b.clause
		return func() { b.errs, b.clause = b.errs[:n0], clause }
	}
	restore := quiet()
	var inner *scope
	for _, f := range s.From {
		_, fsc := b.fromItem(f)
		if fsc == nil {
			restore()
			return nil, false
		}
		if inner == nil {
			inner = fsc
		} else {
			inner = inner.concat(fsc)
		}
	}
	restore()
	side := func(c *lang.ColumnRef) int { // 1: the subquery's, 2: the outer row's
		if len(c.Names) > 2 {
			return 0
		}
		qual, name := "", c.Names[len(c.Names)-1]
		if len(c.Names) == 2 {
			qual = c.Names[0]
		}
		switch {
		case inner.has(qual, name):
			return 1
		case sc.has(qual, name):
			return 2
		}
		return 0
	}
	// Split WHERE: conditions on the subquery's row alone stay in the
	// derived table; the others (they read the outer row) become the join's
	// condition.
	var rest, corr []lang.Expr
	equality := false
	for _, c := range splitAnd(s.Where) {
		nIn, nOut, nested := 0, 0, false
		lang.Inspect(c, func(n lang.Node) bool {
			switch r := n.(type) {
			case *lang.Query:
				nested = true
				return false
			case *lang.ColumnRef:
				switch side(r) {
				case 1:
					nIn++
				case 2:
					nOut++
				}
			}
			return true
		})
		if nOut == 0 {
			rest = append(rest, c)
			continue
		}
		if nested {
			// A subquery inside a correlated condition: decorrelateOne's.
			return nil, false
		}
		if eq, ok := c.(*lang.BinaryExpr); ok && eq.Op == lang.OpEq && nIn > 0 {
			equality = true
		}
		corr = append(corr, c)
	}
	if len(corr) == 0 || !equality {
		// Uncorrelated, or no equality to hash on: the other rewrites.
		return nil, false
	}
	b.sqN++
	alias := fmt.Sprintf("$sq%d", b.sqN)
	sel := &lang.Select{Pos: s.Pos, From: s.From, Where: joinAnd(rest)}
	cols := map[string]string{} // the subquery's column as written -> $cN
	var on []lang.Expr
	for _, c := range corr {
		on = append(on, lang.Rewrite(c, func(n lang.Node) (lang.Node, bool) {
			r, ok := n.(*lang.ColumnRef)
			if !ok || side(r) != 1 {
				return nil, false
			}
			key := lang.Print(r)
			name, seen := cols[key]
			if !seen {
				name = fmt.Sprintf("$c%d", len(cols)+1)
				cols[key] = name
				sel.Items = append(sel.Items, &lang.SelectItem{Pos: r.Pos, Expr: r, Alias: name})
			}
			return &lang.ColumnRef{Pos: r.Pos, Names: []string{alias, name}}, true
		}))
	}
	restore = quiet()
	right, rsc := b.tableRef(&lang.TableRef{Pos: x.Pos, Subquery: &lang.Query{Pos: q.Pos, Select: sel}, Alias: alias})
	if right == nil || streamOf(right) != "" {
		restore()
		return nil, false
	}
	for i := range rsc.cols {
		rsc.cols[i].hidden = true
	}
	b.clause = "ON"
	cond := b.predicate(joinAnd(on), sc.concat(rsc), "ON")
	if cond == nil {
		restore()
		return nil, false
	}
	restore()
	kind := logical.SemiJoin
	if anti {
		kind = logical.AntiJoin
	}
	return logical.NewJoin(kind, node, right, cond, Pos(x.Pos)), true
}

// dropJoined is where without the conjuncts a semi or anti join answers.
func (b *Binder) dropJoined(where lang.Expr) lang.Expr {
	if where == nil || len(b.joined) == 0 {
		return where
	}
	var keep []lang.Expr
	for _, c := range splitAnd(where) {
		x := c
		if u, ok := c.(*lang.UnaryExpr); ok && u.Op == lang.OpNot {
			x = u.X
		}
		if !b.joined[x] {
			keep = append(keep, c)
		}
	}
	return joinAnd(keep)
}
