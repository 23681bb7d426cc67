package bind

import (
	"fmt"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/logical"
)

// unnest rewrites a correlated subquery of any correlation (l2.k <> l1.k,
// t2.d < t1.d, the outer row in the subquery's SELECT list) into ordinary
// joins and aggregates, after Neumann and Kemper, "Unnesting Arbitrary
// Queries" (BTW 2015): the dependent join of the outer rows with the
// subquery is replaced by
//
//	D   = SELECT DISTINCT a1 AS $d1, ... FROM <outer FROM> WHERE <its plain conditions>
//	      the domain: each combination of outer values the subquery reads
//	Q'  = SELECT $d1 AS $k1, ..., <the subquery's value> FROM D, <subquery FROM>
//	      WHERE <subquery WHERE, outer references read from D> GROUP BY $d1, ...
//	      the subquery for every value of the domain at once: the dependent
//	      join pushed below the subquery's FROM, where the executor runs it
//	      as a join (a hash join on any equality, the rest a residual)
//	outer LEFT JOIN Q' ON a1 = $k1 AND ...
//
// and the subquery expression reads Q”s columns, as decorrelateOne's
// rewrites do (EXISTS: a count that is not NULL; a value: the aggregate,
// count() of nothing 0; IN: counts of matches, rows and non-NULL values,
// with the outer value part of the domain). An outer value the subquery
// does not reject when NULL is joined on as equal to NULL (IS NOT DISTINCT
// FROM, as two hash keys), so a NULL outer value finds its row of Q'.
func (b *Binder) unnest(e lang.Expr, q *lang.Query, pos lexer.Position, outer *lang.Select, node logical.Node, sc, inner *scope) (logical.Node, *scope) {
	s := q.Select
	unsupported := func(at lexer.Position, what string) (logical.Node, *scope) {
		b.errorf(at, ErrNotSupported, "correlated subquery: %s is not supported yet", what)
		b.refuse(e)
		return nil, nil
	}
	if s.Distinct && len(s.Items) > 0 {
		if _, ok := e.(*lang.SubqueryExpr); ok {
			return unsupported(pos, "SELECT DISTINCT")
		}
	}
	for _, f := range outer.From {
		for _, j := range f.Joins {
			if j.Lateral != nil {
				return unsupported(pos, "non-equality correlation over a FROM with a model call (LATERAL)")
			}
		}
	}
	// The outer columns the subquery reads, each once, in the order read.
	isOuter := func(c *lang.ColumnRef) (int, bool) {
		if len(c.Names) > 2 {
			return -1, false
		}
		qual, name := "", c.Names[len(c.Names)-1]
		if len(c.Names) == 2 {
			qual = c.Names[0]
		}
		if inner.has(qual, name) {
			return -1, false
		}
		i, n := sc.resolve(qual, name)
		return i, n == 1
	}
	var refs []*lang.ColumnRef
	index := map[int]int{} // outer column -> domain column
	nested := false
	collect := func(x lang.Node) {
		lang.Inspect(x, func(n lang.Node) bool {
			switch c := n.(type) {
			case *lang.Query:
				lang.Inspect(c, func(m lang.Node) bool {
					if r, ok := m.(*lang.ColumnRef); ok {
						if _, out := isOuter(r); out && !b.resolvesIn(c, r) {
							nested = true
						}
					}
					return true
				})
				return false
			case *lang.ColumnRef:
				if i, ok := isOuter(c); ok {
					if _, seen := index[i]; !seen {
						index[i] = len(refs)
						refs = append(refs, c)
					}
				}
			}
			return true
		})
	}
	for _, it := range s.Items {
		collect(it.Expr)
	}
	collect(s.Where)
	if nested {
		return unsupported(pos, "a subquery inside a correlated subquery that reads the outer row")
	}
	for _, f := range s.From {
		found := false
		lang.Inspect(f, func(n lang.Node) bool {
			if c, ok := n.(*lang.ColumnRef); ok {
				if _, out := isOuter(c); out {
					found = true
				}
			}
			return !found
		})
		if found {
			return unsupported(f.Pos, "a FROM item that reads the outer row")
		}
	}
	b.sqN++
	dAlias, qAlias := fmt.Sprintf("$dom%d", b.sqN), fmt.Sprintf("$sq%d", b.sqN)
	ref := func(a, name string) *lang.ColumnRef { return &lang.ColumnRef{Pos: pos, Names: []string{a, name}} }
	// D, the domain.
	dom := &lang.Select{Pos: pos, Distinct: true, From: outer.From}
	for j, r := range refs {
		dom.Items = append(dom.Items, &lang.SelectItem{Pos: r.Pos, Expr: r, Alias: fmt.Sprintf("$d%d", j+1)})
	}
	var x lang.Expr // IN's outer value, part of the domain
	if in, ok := e.(*lang.InExpr); ok {
		x = in.X
		dom.Items = append(dom.Items, &lang.SelectItem{Pos: pos, Expr: x, Alias: "$dx"})
	}
	for _, c := range conjuncts(outer.Where) {
		if !hasSubquery(c) {
			dom.Where = and(dom.Where, c)
		}
	}
	// Q', the subquery over D: outer references read D's columns.
	subst := func(n lang.Expr) lang.Expr {
		if n == nil {
			return nil
		}
		return lang.Rewrite(n, func(m lang.Node) (lang.Node, bool) {
			switch c := m.(type) {
			case *lang.Query:
				return c, true // nested queries read no outer column (checked)
			case *lang.ColumnRef:
				if i, ok := isOuter(c); ok {
					return ref(dAlias, fmt.Sprintf("$d%d", index[i]+1)), true
				}
			}
			return nil, false
		})
	}
	sel := &lang.Select{Pos: s.Pos, Where: subst(s.Where)}
	sel.From = append([]*lang.FromItem{{Pos: pos, Table: &lang.TableRef{Pos: pos, Subquery: &lang.Query{Pos: pos, Select: dom}, Alias: dAlias}}}, s.From...)
	nKeys := len(refs)
	if x != nil {
		nKeys++
	}
	keyName := func(j int) string {
		if j == len(refs) {
			return "$dx"
		}
		return fmt.Sprintf("$d%d", j+1)
	}
	for j := 0; j < nKeys; j++ {
		k := ref(dAlias, keyName(j))
		sel.Items = append(sel.Items, &lang.SelectItem{Pos: pos, Expr: k, Alias: fmt.Sprintf("$k%d", j+1)})
		sel.GroupBy = append(sel.GroupBy, k)
	}
	col := func(name string) lang.Expr { return ref(qAlias, name) }
	var repl lang.Expr
	negate := false
	switch y := e.(type) {
	case *lang.SubqueryExpr:
		if len(s.Items) != 1 || s.Items[0].Star || !hasAggregateCall(s.Items[0].Expr, b.Funcs) {
			return unsupported(pos, "a value that does not aggregate (one row per outer row cannot be checked: use max(...), min(...) or another aggregate)")
		}
		v := subst(s.Items[0].Expr)
		sel.Items = append(sel.Items, &lang.SelectItem{Pos: pos, Expr: v, Alias: "$v"})
		repl = col("$v")
		if f, ok := v.(*lang.FuncCall); ok && strings.EqualFold(f.Name, "count") {
			repl = &lang.FuncCall{Pos: pos, Name: "coalesce", Args: []lang.Expr{repl, &lang.NumberLit{Pos: pos, Value: "0"}}}
		} else if hasCount(v) {
			return unsupported(v.Position(), "count(...) inside a larger value")
		}
	case *lang.ExistsExpr:
		sel.Items = append(sel.Items, &lang.SelectItem{Pos: pos, Expr: countStar(pos), Alias: "$n"})
		repl = &lang.IsNullExpr{Pos: pos, X: col("$n"), Not: true}
	case *lang.InExpr:
		if len(s.Items) != 1 || s.Items[0].Star {
			return unsupported(pos, "IN over other than one column")
		}
		if hasAggregateCall(s.Items[0].Expr, b.Funcs) {
			return unsupported(s.Items[0].Expr.Position(), "IN over an aggregate")
		}
		v := subst(s.Items[0].Expr)
		match := &lang.CaseExpr{Pos: pos, Whens: []*lang.WhenClause{{Pos: pos,
			Cond: &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpEq, Left: v, Right: ref(dAlias, "$dx")}, Result: &lang.NumberLit{Pos: pos, Value: "1"}}}}
		sel.Items = append(sel.Items,
			&lang.SelectItem{Pos: pos, Expr: countStar(pos), Alias: "$n"},
			&lang.SelectItem{Pos: pos, Expr: &lang.FuncCall{Pos: pos, Name: "count", Args: []lang.Expr{v}}, Alias: "$nn"},
			&lang.SelectItem{Pos: pos, Expr: &lang.FuncCall{Pos: pos, Name: "count", Args: []lang.Expr{match}}, Alias: "$m"})
		isNull := func(e lang.Expr) lang.Expr { return &lang.IsNullExpr{Pos: pos, X: e} }
		// x IN S: TRUE where x matches; FALSE where S is empty; NULL
		// where x is NULL or S holds a NULL; else FALSE.
		repl = &lang.CaseExpr{Pos: pos, Whens: []*lang.WhenClause{
			{Pos: pos, Cond: &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpGt, Left: col("$m"), Right: &lang.NumberLit{Pos: pos, Value: "0"}}, Result: &lang.BoolLit{Pos: pos, Value: true}},
			{Pos: pos, Cond: isNull(col("$n")), Result: &lang.BoolLit{Pos: pos, Value: false}},
			{Pos: pos, Cond: &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpOr, Left: isNull(y.X),
				Right: &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpGt, Left: col("$n"), Right: col("$nn")}},
				Result: &lang.NullLit{Pos: pos}},
		}, Else: &lang.BoolLit{Pos: pos, Value: false}}
		negate = y.Not
	}
	if negate {
		repl = &lang.UnaryExpr{Pos: pos, Op: lang.OpNot, X: repl}
	}
	right, rsc := b.tableRef(&lang.TableRef{Pos: pos, Subquery: &lang.Query{Pos: q.Pos, Select: sel}, Alias: qAlias})
	if right == nil {
		b.refuse(e)
		return nil, nil
	}
	if st := streamOf(right); st != "" {
		b.errorf(pos, ErrNotSupported, "a subquery correlated other than by equalities reads tables only, not stream %s", st)
		b.refuse(e)
		return nil, nil
	}
	for i := range rsc.cols {
		rsc.cols[i].hidden = true
	}
	// The join on the domain's keys: = where the subquery rejects a NULL
	// outer value anyway (no row of Q' has it), else NULL-safe.
	var on lang.Expr
	for j := 0; j < nKeys; j++ {
		var o lang.Expr
		safe := false
		if j < len(refs) {
			o = refs[j]
			safe = !nullRejected(s.Where, func(c *lang.ColumnRef) bool { i, ok := isOuter(c); return ok && index[i] == j })
		} else {
			o, safe = x, true
		}
		k := ref(qAlias, fmt.Sprintf("$k%d", j+1))
		if !safe {
			on = and(on, &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpEq, Left: o, Right: k})
			continue
		}
		// a IS NOT DISTINCT FROM k as two equalities a hash join keys on:
		// NULL-ness, and the value's text, '' for NULL (the text of a
		// value identifies it: a DECIMAL's digits, a DOUBLE's shortest).
		text := func(e lang.Expr) lang.Expr {
			return &lang.FuncCall{Pos: pos, Name: "coalesce", Args: []lang.Expr{
				&lang.CastExpr{Pos: pos, X: e, Type: &lang.Type{Pos: pos, Name: lang.TypeVarchar}}, &lang.StringLit{Pos: pos}}}
		}
		on = and(on, &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpEq,
			Left: &lang.IsNullExpr{Pos: pos, X: o}, Right: &lang.IsNullExpr{Pos: pos, X: k}})
		on = and(on, &lang.BinaryExpr{Pos: pos, OpPos: pos, Op: lang.OpEq, Left: text(o), Right: text(k)})
	}
	both := sc.concat(rsc)
	clause := b.clause
	b.clause = "ON"
	cond := b.predicate(on, both, "ON")
	b.clause = clause
	if cond == nil {
		b.refuse(e)
		return nil, nil
	}
	if b.replaced == nil {
		b.replaced = map[lang.Expr]lang.Expr{}
	}
	b.replaced[e] = repl
	return logical.NewJoin(logical.LeftJoin, node, right, cond, Pos(pos)), both
}

// resolvesIn reports whether a column reference inside nested query q names
// a column of q's own FROM (then it is not the outer row's).
func (b *Binder) resolvesIn(q *lang.Query, r *lang.ColumnRef) bool {
	if len(r.Names) > 2 {
		return true
	}
	qual, name := "", r.Names[len(r.Names)-1]
	if len(r.Names) == 2 {
		qual = r.Names[0]
	}
	n0, clause := len(b.errs), b.clause
	defer func() { b.errs, b.clause = b.errs[:n0], clause }()
	for _, s := range q.Selects() {
		for _, f := range s.From {
			if _, fsc := b.fromItem(f); fsc != nil && fsc.has(qual, name) {
				return true
			}
		}
	}
	return false
}

// hasSubquery reports whether e holds a subquery.
func hasSubquery(e lang.Expr) bool {
	found := false
	lang.Inspect(e, func(n lang.Node) bool {
		if _, ok := n.(*lang.Query); ok {
			found = true
		}
		return !found
	})
	return found
}

// nullRejected reports whether some conjunct of where is false or NULL
// whenever the outer column (isRef) is NULL: it compares an expression of
// it by =, <>, <, <=, >, >=, LIKE or BETWEEN, through arithmetic and casts
// only (not under OR, CASE, IS [NOT] NULL, IS DISTINCT FROM, or a function
// such as coalesce that may turn a NULL into a value).
func nullRejected(where lang.Expr, isRef func(*lang.ColumnRef) bool) bool {
	var strict func(e lang.Expr) bool // NULL when the column is NULL
	strict = func(e lang.Expr) bool {
		switch x := e.(type) {
		case *lang.ColumnRef:
			return isRef(x)
		case *lang.BinaryExpr:
			switch x.Op {
			case lang.OpAnd, lang.OpOr:
				return false
			}
			return strict(x.Left) || strict(x.Right)
		case *lang.UnaryExpr:
			return x.Op == lang.OpNeg && strict(x.X)
		case *lang.CastExpr:
			return strict(x.X)
		}
		return false
	}
	for _, c := range conjuncts(where) {
		switch x := c.(type) {
		case *lang.BinaryExpr:
			if isComparison(x.Op) && (strict(x.Left) || strict(x.Right)) {
				return true
			}
		case *lang.BetweenExpr:
			if strict(x.X) || strict(x.Low) || strict(x.High) {
				return true
			}
		case *lang.LikeExpr:
			if strict(x.X) || strict(x.Pattern) {
				return true
			}
		}
	}
	return false
}
