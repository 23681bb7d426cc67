package bind

import (
	"fmt"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/logical"
)

// decorrelate rewrites the correlated subqueries of a block's WHERE (and of
// its SELECT list when the block does not aggregate) into LEFT JOINs of the
// block's FROM row with a grouped derived table, as DuckDB's planner does:
//
//	x > (SELECT avg(y) FROM f WHERE f.k = o.k AND rest)
//	  LEFT JOIN (SELECT f.k AS $k1, avg(y) AS $v FROM f WHERE rest GROUP BY f.k) $sq ON o.k = $sq.$k1
//	  and the subquery reads $sq.$v (count: coalesce($sq.$v, 0))
//	EXISTS (...)        reads $sq.$n IS NOT NULL, $n = count(*)
//	x IN (SELECT y ...) reads a second table grouped by the keys and y,
//	                    joined on x = y too, and counts for NULL semantics
//
// Each derived table has one row per key, so the join keeps the block's rows
// as they are. The correlation must be equalities, inner = outer, AND-ed with
// conditions of the subquery alone; other shapes are refused at the
// subquery or the condition. The rewrite is recorded in b.replaced: binding
// the subquery expression binds its replacement instead.
func (b *Binder) decorrelate(s *lang.Select, node logical.Node, sc *scope) (logical.Node, *scope) {
	var roots, groupedRoots []lang.Expr
	if s.Where != nil {
		roots = append(roots, s.Where)
	}
	aggregating := len(s.GroupBy) > 0 || s.Having != nil || s.Distinct || itemsAggregate(s, b)
	for _, it := range s.Items {
		if it.Expr == nil {
			continue
		}
		if aggregating {
			groupedRoots = append(groupedRoots, it.Expr)
		} else {
			roots = append(roots, it.Expr)
		}
	}
	if s.Having != nil {
		groupedRoots = append(groupedRoots, s.Having)
	}
	var subs []lang.Expr
	grouped := map[lang.Expr]bool{}
	for i, r := range append(roots, groupedRoots...) {
		n0 := len(subs)
		lang.Inspect(r, func(n lang.Node) bool {
			switch x := n.(type) {
			case *lang.SubqueryExpr:
				subs = append(subs, x)
				return false
			case *lang.ExistsExpr:
				subs = append(subs, x)
				return false
			case *lang.InExpr:
				if x.Subquery != nil {
					subs = append(subs, x)
					return false
				}
			case *lang.Query:
				return false
			}
			return true
		})
		for _, e := range subs[n0:] {
			grouped[e] = i >= len(roots)
		}
	}
	semi := map[lang.Expr]bool{} // the EXISTS conjuncts of WHERE -> negated
	if s.Where != nil {
		for _, c := range splitAnd(s.Where) {
			if u, ok := c.(*lang.UnaryExpr); ok && u.Op == lang.OpNot {
				if x, ok := u.X.(*lang.ExistsExpr); ok {
					semi[x] = true
				}
			} else if x, ok := c.(*lang.ExistsExpr); ok {
				semi[x] = false
			}
		}
	}
	for _, e := range subs {
		if x, ok := e.(*lang.ExistsExpr); ok {
			if anti, top := semi[x]; top {
				if n2, ok := b.semiJoin(x, anti, node, sc); ok {
					// The join keeps or drops the row; the conjunct holds
					// (NOT EXISTS: NOT FALSE).
					if b.replaced == nil {
						b.replaced = map[lang.Expr]lang.Expr{}
					}
					b.replaced[e] = &lang.BoolLit{Pos: x.Pos, Value: !anti}
					if b.joined == nil {
						b.joined = map[lang.Expr]bool{}
					}
					b.joined[e] = true
					node = n2
					continue
				}
			}
		}
		var groups []lang.Expr
		if grouped[e] {
			groups = s.GroupBy
		}
		if n2, sc2 := b.decorrelateOne(e, s, node, sc, grouped[e], groups); n2 != nil {
			node, sc = n2, sc2
		}
	}
	return node, sc
}

// correlation is a subquery split into what the derived table needs.
type correlation struct {
	inner, outer []lang.Expr // the equalities' sides, aligned
	rest         lang.Expr   // the subquery's own conditions
	outerOnly    lang.Expr   // conditions on the outer row alone
}

// decorrelateOne rewrites one subquery expression; nil when it is not
// correlated or not rewritable (then it binds as written, and reports what
// is wrong there), or when it was refused here (reported).
//
// In the SELECT list or HAVING of an aggregating block (grouped), the
// correlation must be on GROUP BY expressions: the derived values are then
// the same for every row of a group, and the subquery reads min() of them.
func (b *Binder) decorrelateOne(e lang.Expr, outer *lang.Select, node logical.Node, sc *scope, grouped bool, groups []lang.Expr) (logical.Node, *scope) {
	var q *lang.Query
	var pos lexer.Position
	switch x := e.(type) {
	case *lang.SubqueryExpr:
		q, pos = x.Query, x.Pos
	case *lang.ExistsExpr:
		q, pos = x.Query, x.Pos
	case *lang.InExpr:
		q, pos = x.Subquery, x.Pos
	}
	s := q.Select
	if len(q.UnionAll) > 0 || len(q.With) > 0 || len(s.From) == 0 {
		return nil, nil
	}
	// The subquery's FROM row, bound quietly: this only decides the
	// rewrite; binding the derived table reports what is wrong.
	n0, clause := len(b.errs), b.clause
	var inner *scope
	for _, f := range s.From {
		_, fsc := b.fromItem(f)
		if fsc == nil {
			b.errs, b.clause = b.errs[:n0], clause
			return nil, nil
		}
		if inner == nil {
			inner = fsc
		} else {
			inner = inner.concat(fsc)
		}
	}
	b.errs, b.clause = b.errs[:n0], clause
	refs := func(x lang.Node) (nIn, nOut int) {
		if x == nil {
			return 0, 0
		}
		lang.Inspect(x, func(n lang.Node) bool {
			switch c := n.(type) {
			case *lang.Query:
				return false
			case *lang.ColumnRef:
				if len(c.Names) > 2 {
					return false
				}
				qual, name := "", c.Names[len(c.Names)-1]
				if len(c.Names) == 2 {
					qual = c.Names[0]
				}
				switch {
				case inner.has(qual, name):
					nIn++
				case sc.has(qual, name):
					nOut++
				}
			}
			return true
		})
		return nIn, nOut
	}
	correlated, general := false, false
	for _, it := range s.Items {
		if _, o := refs(it.Expr); o > 0 {
			// The outer row in the SELECT list: only the general
			// rewrite over the outer values' domain serves.
			correlated, general = true, true
		}
	}
	if _, o := refs(s.Where); o > 0 {
		correlated = true
	}
	for _, g := range s.GroupBy {
		if _, o := refs(g); o > 0 {
			correlated = true
		}
	}
	if _, o := refs(s.Having); o > 0 {
		correlated = true
	}
	if !correlated {
		return nil, nil
	}
	unsupported := func(at lexer.Position, what string) (logical.Node, *scope) {
		b.errorf(at, ErrNotSupported, "correlated subquery: %s is not supported yet", what)
		b.refuse(e)
		return nil, nil
	}
	if q.Limit != nil || q.Offset != nil {
		return unsupported(pos, "LIMIT or OFFSET")
	}
	if len(s.GroupBy) > 0 || s.Having != nil {
		return unsupported(pos, "GROUP BY or HAVING")
	}
	var corr correlation
	for _, c := range conjuncts(s.Where) {
		in, out := refs(c)
		if out == 0 {
			corr.rest = and(corr.rest, c)
			continue
		}
		eq, ok := c.(*lang.BinaryExpr)
		if ok && eq.Op == lang.OpEq {
			li, lo := refs(eq.Left)
			ri, ro := refs(eq.Right)
			switch {
			case li > 0 && lo == 0 && ri == 0 && ro > 0:
				corr.inner, corr.outer = append(corr.inner, eq.Left), append(corr.outer, eq.Right)
				continue
			case ri > 0 && ro == 0 && li == 0 && lo > 0:
				corr.inner, corr.outer = append(corr.inner, eq.Right), append(corr.outer, eq.Left)
				continue
			}
		}
		if in == 0 {
			corr.outerOnly = and(corr.outerOnly, c)
			continue
		}
		// Any other mix of the two rows (l2.k <> l1.k): the general
		// rewrite.
		general = true
	}
	if general {
		if grouped {
			return unsupported(pos, "in an aggregating query, correlation other than equalities on GROUP BY expressions")
		}
		return b.unnest(e, q, pos, outer, node, sc, inner)
	}
	if _, ok := e.(*lang.ExistsExpr); ok && len(corr.inner) == 1 && corr.outerOnly == nil {
		// One equality: decorrelateExists's IN over a set built once
		// serves, on streams too.
		return nil, nil
	}
	if grouped {
		isGroup := func(x lang.Expr) bool {
			for _, g := range groups {
				if sameRef(x, g) {
					return true
				}
			}
			return false
		}
		for _, o := range corr.outer {
			// A GROUP BY expression, or one of GROUP BY columns only.
			found := isGroup(o)
			if !found {
				found = true
				lang.Inspect(o, func(n lang.Node) bool {
					if c, ok := n.(*lang.ColumnRef); ok && !isGroup(c) {
						found = false
					}
					_, sub := n.(*lang.Query)
					return !sub
				})
			}
			if !found {
				return unsupported(o.Position(), fmt.Sprintf("in an aggregating query, correlation on %s, which is not a GROUP BY expression nor one of GROUP BY columns", lang.Print(o)))
			}
		}
	}
	b.sqN++
	alias := fmt.Sprintf("$sq%d", b.sqN)
	col := func(a, name string) lang.Expr {
		c := &lang.ColumnRef{Pos: pos, Names: []string{a, name}}
		if grouped {
			return &lang.FuncCall{Pos: pos, Name: "min", Args: []lang.Expr{c}}
		}
		return c
	}
	ref := func(a, name string) lang.Expr { return &lang.ColumnRef{Pos: pos, Names: []string{a, name}} }
	// Where a condition on the outer row alone fails (or is NULL), the
	// subquery has no rows: EXISTS and IN are FALSE, a value NULL (count 0).
	var empty lang.Expr = &lang.BoolLit{Pos: pos, Value: false}
	if _, ok := e.(*lang.SubqueryExpr); ok {
		empty = &lang.NullLit{Pos: pos}
		if f, ok := s.Items[0].Expr.(*lang.FuncCall); ok && !s.Items[0].Star && strings.EqualFold(f.Name, "count") {
			empty = &lang.NumberLit{Pos: pos, Value: "0"}
		}
	}
	guard := func(r lang.Expr) lang.Expr {
		if corr.outerOnly == nil {
			return r
		}
		return &lang.CaseExpr{Pos: pos, Whens: []*lang.WhenClause{{Pos: pos, Cond: corr.outerOnly, Result: r}}, Else: empty}
	}
	if len(corr.inner) == 0 {
		// Only conditions on the outer row: the rest is an uncorrelated
		// subquery, run once, chosen per row.
		q2, s2 := *q, *s
		s2.Where, q2.Select = corr.rest, &s2
		var sub lang.Expr
		negate := false
		switch x := e.(type) {
		case *lang.SubqueryExpr:
			sub = &lang.SubqueryExpr{Pos: pos, Query: &q2}
		case *lang.ExistsExpr:
			sub = &lang.ExistsExpr{Pos: pos, Query: &q2}
		case *lang.InExpr:
			sub, negate = &lang.InExpr{Pos: pos, X: x.X, Subquery: &q2}, x.Not
		}
		repl := guard(sub)
		if negate {
			repl = &lang.UnaryExpr{Pos: pos, Op: lang.OpNot, X: repl}
		}
		if b.replaced == nil {
			b.replaced = map[lang.Expr]lang.Expr{}
		}
		b.replaced[e] = repl
		return node, sc
	}
	var repl lang.Expr
	var joins []derived
	negate := false
	switch x := e.(type) {
	case *lang.SubqueryExpr:
		if len(s.Items) != 1 || s.Items[0].Star || !hasAggregateCall(s.Items[0].Expr, b.Funcs) {
			return unsupported(pos, "a value that does not aggregate (one row per outer row cannot be checked: use max(...), min(...) or another aggregate)")
		}
		v := s.Items[0].Expr
		repl = col(alias, "$v")
		if f, ok := v.(*lang.FuncCall); ok && strings.EqualFold(f.Name, "count") {
			// No partner row: the count of nothing is 0, not NULL.
			repl = &lang.FuncCall{Pos: pos, Name: "coalesce", Args: []lang.Expr{repl, &lang.NumberLit{Pos: pos, Value: "0"}}}
		} else if hasCount(v) {
			return unsupported(v.Position(), "count(...) inside a larger value")
		}
		joins = append(joins, derived{alias: alias, items: []*lang.SelectItem{{Pos: pos, Expr: v, Alias: "$v"}}})
	case *lang.ExistsExpr:
		repl = &lang.IsNullExpr{Pos: pos, X: col(alias, "$n"), Not: true}
		joins = append(joins, derived{alias: alias, items: []*lang.SelectItem{{Pos: pos, Expr: countStar(pos), Alias: "$n"}}})
	case *lang.InExpr:
		if len(s.Items) != 1 || s.Items[0].Star {
			return unsupported(pos, "IN over other than one column")
		}
		y := s.Items[0].Expr
		if hasAggregateCall(y, b.Funcs) {
			return unsupported(y.Position(), "IN over an aggregate")
		}
		// x IN S: TRUE where x is in S; else FALSE where S is empty; else
		// NULL where x is NULL or S holds a NULL; else FALSE.
		m, st := alias+"m", alias
		joins = append(joins,
			derived{alias: m, items: []*lang.SelectItem{{Pos: pos, Expr: countStar(pos), Alias: "$n"}}, key: y, outerKey: x.X},
			derived{alias: st, items: []*lang.SelectItem{
				{Pos: pos, Expr: countStar(pos), Alias: "$n"},
				{Pos: pos, Expr: &lang.FuncCall{Pos: pos, Name: "count", Args: []lang.Expr{y}}, Alias: "$nn"},
			}})
		isNull := func(e lang.Expr) lang.Expr { return &lang.IsNullExpr{Pos: pos, X: e} }
		repl = &lang.CaseExpr{Pos: pos, Whens: []*lang.WhenClause{
			{Pos: pos, Cond: &lang.IsNullExpr{Pos: pos, X: col(m, "$n"), Not: true}, Result: &lang.BoolLit{Pos: pos, Value: true}},
			{Pos: pos, Cond: isNull(col(st, "$n")), Result: &lang.BoolLit{Pos: pos, Value: false}},
			{Pos: pos, Cond: &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpOr, Left: isNull(x.X),
				Right: &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpGt, Left: col(st, "$n"), Right: col(st, "$nn")}},
				Result: &lang.NullLit{Pos: pos}},
		}, Else: &lang.BoolLit{Pos: pos, Value: false}}
		negate = x.Not
	}
	repl = guard(repl)
	if negate {
		repl = &lang.UnaryExpr{Pos: pos, Op: lang.OpNot, X: repl}
	}
	for _, d := range joins {
		sel := &lang.Select{Pos: s.Pos, From: s.From, Where: corr.rest}
		var on lang.Expr
		keys := append([]lang.Expr{}, corr.inner...)
		outer := append([]lang.Expr{}, corr.outer...)
		if d.key != nil {
			keys, outer = append(keys, d.key), append(outer, d.outerKey)
		}
		for i, k := range keys {
			name := fmt.Sprintf("$k%d", i+1)
			sel.Items = append(sel.Items, &lang.SelectItem{Pos: k.Position(), Expr: k, Alias: name})
			sel.GroupBy = append(sel.GroupBy, k)
			on = and(on, &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpEq, Left: outer[i], Right: ref(d.alias, name)})
		}
		sel.Items = append(sel.Items, d.items...)
		right, rsc := b.tableRef(&lang.TableRef{Pos: pos, Subquery: &lang.Query{Pos: q.Pos, Select: sel}, Alias: d.alias})
		if right == nil {
			b.refuse(e)
			return nil, nil
		}
		if st := streamOf(right); st != "" {
			b.errorf(pos, ErrNotSupported, "a correlated subquery reads tables only, not stream %s", st)
			b.refuse(e)
			return nil, nil
		}
		for i := range rsc.cols {
			rsc.cols[i].hidden = true
		}
		both := sc.concat(rsc)
		b.clause = "ON"
		cond := b.predicate(on, both, "ON")
		b.clause = clause
		if cond == nil {
			b.refuse(e)
			return nil, nil
		}
		node, sc = logical.NewJoin(logical.LeftJoin, node, right, cond, Pos(pos)), both
	}
	if b.replaced == nil {
		b.replaced = map[lang.Expr]lang.Expr{}
	}
	b.replaced[e] = repl
	return node, sc
}

// refuse stands a NULL for a subquery whose problem is reported, so that
// binding it as written does not report the outer names it cannot see.
func (b *Binder) refuse(e lang.Expr) {
	if b.replaced == nil {
		b.replaced = map[lang.Expr]lang.Expr{}
	}
	b.replaced[e] = &lang.NullLit{Pos: e.Position()}
}

// derived is one grouped table of a decorrelated subquery: items over the
// correlation keys, plus key = outerKey when set (IN's value).
type derived struct {
	alias         string
	items         []*lang.SelectItem
	key, outerKey lang.Expr
}

// sameRef: a and g are the same expression as written, up to a column's
// qualifier on one side only (s.g and g).
func sameRef(a, g lang.Expr) bool {
	ca, ok1 := a.(*lang.ColumnRef)
	cg, ok2 := g.(*lang.ColumnRef)
	if ok1 && ok2 {
		na, ng := ca.Names, cg.Names
		if !strings.EqualFold(na[len(na)-1], ng[len(ng)-1]) {
			return false
		}
		return len(na) == 1 || len(ng) == 1 || strings.EqualFold(na[0], ng[0])
	}
	return strings.EqualFold(lang.Print(a), lang.Print(g))
}

func countStar(pos lexer.Position) lang.Expr {
	return &lang.FuncCall{Pos: pos, Name: "count", Star: true}
}

func hasCount(e lang.Expr) bool {
	found := false
	lang.Inspect(e, func(n lang.Node) bool {
		if f, ok := n.(*lang.FuncCall); ok && strings.EqualFold(f.Name, "count") {
			found = true
		}
		_, sub := n.(*lang.Query)
		return !found && !sub
	})
	return found
}

func conjuncts(e lang.Expr) []lang.Expr {
	if a, ok := e.(*lang.BinaryExpr); ok && a.Op == lang.OpAnd {
		return append(conjuncts(a.Left), conjuncts(a.Right)...)
	}
	if e == nil {
		return nil
	}
	return []lang.Expr{e}
}

func and(a, c lang.Expr) lang.Expr {
	if a == nil {
		return c
	}
	return &lang.BinaryExpr{Pos: a.Position(), OpPos: c.Position(), Op: lang.OpAnd, Left: a, Right: c}
}
