package bind

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

func hasAggregateCall(e lang.Node, reg *expr.Registry) bool {
	found := false
	lang.Inspect(e, func(n lang.Node) bool {
		if _, ok := n.(*lang.Query); ok {
			return false // a subquery's aggregates are its own
		}
		if x, ok := n.(*lang.FuncCall); ok && x.Over == nil {
			// sum(x) OVER (...) is a window function; only an aggregate in
			// its arguments (sum(sum(x)) OVER ()) makes the block group.
			if f, ok := reg.Lookup(x.Name); ok && f.Kind == expr.AggregateKind {
				found = true
			}
			if x.WithinGroup != nil {
				found = true // an ordered-set aggregate (percentile_cont)
			}
		}
		return !found
	})
	return found
}

// expr binds an expression in scope sc; nil when it does not bind (the
// problem is recorded).
//
// ac says where aggregates may appear: nil where they may not (WHERE, ON,
// GROUP BY, model arguments); a grouping scope for the SELECT list, HAVING and
// ORDER BY of a grouping query, whose expressions are then bound over the
// aggregate's output; an aggregate's arguments scope inside an aggregate call.
func (b *Binder) expr(e lang.Expr, sc *scope, ac *aggScope) expr.Expr {
	if r, ok := b.replaced[e]; ok {
		return b.expr(r, sc, ac)
	}
	if ac.grouped() {
		if g := b.groupRef(e, sc, ac); g != nil {
			return g
		}
	}
	switch x := e.(type) {
	case *lang.ColumnRef:
		return b.columnRef(x, sc, ac)
	case *lang.NumberLit:
		if i, err := strconv.ParseInt(x.Value, 10, 64); err == nil {
			l, _ := expr.NewLiteral(i)
			return l
		}
		if v, t, ok := expr.ParseDecimal(x.Value); ok {
			// 0.06 is DECIMAL(3,2), exact, as in DuckDB.
			return &expr.Literal{Value: v, DataType: t}
		}
		f, err := strconv.ParseFloat(x.Value, 64)
		if err != nil {
			b.errorf(x.Pos, ErrBind, "bad number %s", x.Value)
			return nil
		}
		l, _ := expr.NewLiteral(f)
		return l
	case *lang.StringLit:
		l, _ := expr.NewLiteral(x.Value)
		return l
	case *lang.BoolLit:
		l, _ := expr.NewLiteral(x.Value)
		return l
	case *lang.NullLit:
		l, _ := expr.NewLiteral(nil)
		return l
	case *lang.IntervalLit:
		months, sec, err := x.Parts()
		if err != nil {
			b.errorf(x.Pos, ErrBind, "bad interval '%s': %v", x.Value, err)
			return nil
		}
		if months != 0 {
			// A calendar interval: whole days apart from the rest, as
			// DuckDB keeps them (1 month 2 days).
			days := int64(sec / 86400)
			nanos := int64((sec - float64(days)*86400) * 1e9)
			return &expr.Literal{Value: arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days), Nanoseconds: nanos}, DataType: expr.Calendar}
		}
		l, _ := expr.NewLiteral(time.Duration(sec * float64(time.Second)))
		return l
	case *lang.TimestampLit:
		if t, ok := parseTimestampText(x.Value); ok {
			l, _ := expr.NewLiteral(t)
			return l
		}
		b.errorf(x.Pos, ErrBind, "bad timestamp '%s': want 'YYYY-MM-DD[ HH:MM:SS]'", x.Value)
		return nil
	case *lang.BinaryExpr:
		l, r := b.expr(x.Left, sc, ac), b.expr(x.Right, sc, ac)
		if l == nil || r == nil {
			return nil
		}
		switch x.Op {
		case lang.OpAnd, lang.OpOr:
			op := expr.OpAnd
			if x.Op == lang.OpOr {
				op = expr.OpOr
			}
			out, err := expr.NewLogic(op, l, r)
			return b.check(x.OpPos, out, err)
		}
		if f := foldTimeArith(x.Op, l, r); f != nil {
			return f
		}
		if isComparison(x.Op) {
			l, r = b.textAsTime(l, r, x.Left.Position()), b.textAsTime(r, l, x.Right.Position())
			if l == nil || r == nil {
				return nil
			}
			l, r = asDateLiteral(l, r), asDateLiteral(r, l)
		}
		f, ok := b.Funcs.Operator(string(x.Op), 2)
		if !ok {
			b.errorf(x.OpPos, ErrBind, "operator %s is not supported", x.Op)
			return nil
		}
		out, err := b.Funcs.NewCall(f.Name, l, r)
		return b.check(x.OpPos, out, err)
	case *lang.UnaryExpr:
		v := b.expr(x.X, sc, ac)
		if v == nil {
			return nil
		}
		if x.Op == lang.OpNot {
			out, err := expr.NewNot(v)
			return b.check(x.Pos, out, err)
		}
		f, ok := b.Funcs.Operator("-", 1)
		if !ok {
			b.errorf(x.Pos, ErrBind, "unary minus is not supported")
			return nil
		}
		out, err := b.Funcs.NewCall(f.Name, v)
		return b.check(x.Pos, out, err)
	case *lang.IsNullExpr:
		v := b.expr(x.X, sc, ac)
		if v == nil {
			return nil
		}
		return &expr.IsNull{Expr: v, Negated: x.Not}
	case *lang.DistinctFromExpr:
		return b.distinctFrom(x, sc, ac)
	case *lang.BetweenExpr:
		v, lo, hi := b.expr(x.X, sc, ac), b.expr(x.Low, sc, ac), b.expr(x.High, sc, ac)
		if v == nil || lo == nil || hi == nil {
			return nil
		}
		lo, hi = b.textAsTime(lo, v, x.Low.Position()), b.textAsTime(hi, v, x.High.Position())
		if lo == nil || hi == nil {
			return nil
		}
		lo, hi = asDateLiteral(lo, v), asDateLiteral(hi, v)
		out, err := expr.NewBetween(v, lo, hi, x.Not)
		return b.check(x.Pos, out, err)
	case *lang.SubqueryExpr:
		return b.subquery(x.Query, x.Pos, expr.ScalarSubquery, nil, false, sc)
	case *lang.ExistsExpr:
		if in := b.decorrelateExists(x, sc); in != nil {
			return b.expr(in, sc, ac)
		}
		return b.subquery(x.Query, x.Pos, expr.ExistsSubquery, nil, false, sc)
	case *lang.InExpr:
		if x.Subquery != nil {
			v := b.expr(x.X, sc, ac)
			if v == nil {
				return nil
			}
			return b.subquery(x.Subquery, x.Pos, expr.InSubquery, v, x.Not, sc)
		}
		v := b.expr(x.X, sc, ac)
		var list []expr.Expr
		ok := v != nil
		for _, it := range x.List {
			if y := b.textAsTime(b.expr(it, sc, ac), v, it.Position()); y != nil {
				list = append(list, y)
			} else {
				ok = false
			}
		}
		if !ok {
			return nil
		}
		out, err := expr.NewIn(v, list, x.Not)
		return b.check(x.Pos, out, err)
	case *lang.LikeExpr:
		v, p := b.expr(x.X, sc, ac), b.expr(x.Pattern, sc, ac)
		if v == nil || p == nil {
			return nil
		}
		out, err := expr.NewLike(v, p, x.Not, x.ILike)
		return b.check(x.Pos, out, err)
	case *lang.CaseExpr:
		var op expr.Expr
		if x.Operand != nil {
			if op = b.expr(x.Operand, sc, ac); op == nil {
				return nil
			}
		}
		var whens []expr.When
		ok := true
		for _, w := range x.Whens {
			c, r := b.expr(w.Cond, sc, ac), b.expr(w.Result, sc, ac)
			if c == nil || r == nil {
				ok = false
				continue
			}
			if op != nil {
				eq, err := b.Funcs.NewCall("equal", op, c)
				if b.check(w.Pos, eq, err) == nil {
					ok = false
					continue
				}
				c = eq
			}
			whens = append(whens, expr.When{Cond: c, Then: r})
		}
		var els expr.Expr
		if x.Else != nil {
			if els = b.expr(x.Else, sc, ac); els == nil {
				ok = false
			}
		}
		if !ok {
			return nil
		}
		out, err := expr.NewCase(whens, els)
		return b.check(x.Pos, out, err)
	case *lang.CastExpr:
		v := b.expr(x.X, sc, ac)
		if v == nil {
			return nil
		}
		if x.Type.Name == lang.TypeDate {
			return b.castDate(x, v)
		}
		if !b.checkTypeArgs(x.Type) {
			return nil
		}
		t, err := catalog.ParseType(TypeString(x.Type))
		if err != nil {
			b.errorf(x.Type.Pos, ErrBind, "%v", err)
			return nil
		}
		return &expr.Cast{Expr: v, To: t, Try: x.Try}
	case *lang.FuncCall:
		return b.call(x, sc, ac)
	case *lang.FieldAccess:
		// Struct fields and tensor elements need expression kinds that the
		// operators' evaluator does not have yet.
		b.errorf(x.Pos, ErrBind, "field access %s is not supported yet", lang.Print(x))
	case *lang.IndexExpr:
		b.errorf(x.Pos, ErrBind, "indexing %s is not supported yet", lang.Print(x))
	default:
		b.errorf(e.Position(), ErrBind, "unsupported expression %T", e)
	}
	return nil
}

// check records err at p, or returns the built expression.
func (b *Binder) check(p lexer.Position, e expr.Expr, err error) expr.Expr {
	if err != nil {
		b.errorf(p, ErrBind, "%v", err)
		return nil
	}
	return e
}

func (b *Binder) call(x *lang.FuncCall, sc *scope, ac *aggScope) expr.Expr {
	if y, ok := b.orderedSet(x); ok {
		if y == nil {
			return nil
		}
		x = y
	}
	if x.Filter != nil || len(x.OrderBy) > 0 || (x.Distinct && strings.EqualFold(x.Name, "string_agg")) {
		if x = b.aggClauses(x); x == nil {
			return nil
		}
	}
	if unit, ok := x.Args0String(); ok && strings.EqualFold(x.Name, "date_part") && strings.EqualFold(unit, "epoch") && len(x.Args) == 2 {
		// DuckDB's epoch part keeps the fraction of the second (a DOUBLE),
		// where every other part is a whole number.
		x = &lang.FuncCall{Pos: x.Pos, Name: "epoch", Args: x.Args[1:], Over: x.Over}
	}
	if x.Over != nil {
		return b.windowCall(x, sc, ac)
	}
	if isWindowOnly(x.Name) {
		b.errorf(x.Pos, ErrBind, "%s is a window function: it needs OVER (...)", strings.ToLower(x.Name))
		return nil
	}
	if isWindow(x.Name) {
		b.errorf(x.Pos, ErrBind, "%s is a window: it belongs in GROUP BY, or in a join's ON as %s(l.ts, size) = %s(r.ts, size)", strings.ToUpper(x.Name), strings.ToUpper(x.Name), strings.ToUpper(x.Name))
		return nil
	}
	f, ok := b.Funcs.Lookup(x.Name)
	if !ok {
		if b.Catalog.Model(x.Name) != nil {
			b.errorf(x.Pos, ErrBind, "%s is a model: apply it with CROSS JOIN LATERAL %s(...)", x.Name, x.Name)
			return nil
		}
		var names []string
		for _, fn := range b.Funcs.Functions() {
			if !fn.Internal {
				names = append(names, fn.Name)
			}
		}
		// A misspelt window function (rnk() OVER ...) or model is meant
		// as much as a scalar function.
		for _, n := range sortedKeys(rankingFuncs, valueFuncs) {
			names = append(names, n)
		}
		for _, m := range b.Catalog.Models {
			names = append(names, m.Name)
		}
		b.unknown(x.Pos, "function", x.Name, names)
		return nil
	}
	argScope := ac
	if f.Kind == expr.AggregateKind {
		switch {
		case ac == nil:
			b.errorf(x.Pos, ErrBind, "aggregate %s is not allowed in %s", f.Name, b.clauseName())
			return nil
		case ac.inside != nil:
			b.errorf(x.Pos, ErrBind, "aggregate %s cannot be nested inside aggregate %s", f.Name, strings.ToLower(ac.inside.Name))
			return nil
		}
		// The arguments read the input rows, not the groups.
		argScope = &aggScope{inside: x}
	}
	var args []expr.Expr
	ok = true
	for _, a := range x.Args {
		if v := b.expr(a, sc, argScope); v != nil {
			args = append(args, v)
		} else {
			ok = false
		}
	}
	if !ok {
		return nil
	}
	if f.Kind == expr.AggregateKind {
		switch f.Name {
		case "count", "sum", "avg", "min", "max":
		default:
			if x.Distinct {
				// The executor keeps distinct sets for these five only.
				b.errorf(x.Pos, ErrNotSupported, "%s(DISTINCT ...) is not supported (DISTINCT is for count, sum, avg, min and max)", f.Name)
				return nil
			}
		}
		for i, a := range args[min(1, len(args)):] {
			// Only the first argument is per row (quantile_cont(x, 0.9),
			// string_agg(s, ', ')): the others are constants of the call.
			if !isConstant(a) {
				b.errorf(x.Args[i+1].Position(), ErrBind, "argument %d of %s must be a constant (a literal)", i+2, f.Name)
				return nil
			}
			if strings.HasPrefix(f.Name, "quantile") {
				if q, ok := literalFloat(a); !ok || q < 0 || q > 1 {
					b.errorf(x.Args[i+1].Position(), ErrBind, "the fraction of %s must be from 0 to 1, got %s", f.Name, lang.Print(x.Args[i+1]))
					return nil
				}
			}
		}
		a, err := b.Funcs.NewAggregate(f.Name, x.Distinct, args...)
		if err != nil {
			b.errorf(x.Pos, ErrBind, "%v", err)
			return nil
		}
		return ac.ref(a)
	}
	if x.Star || x.Distinct {
		b.errorf(x.Pos, ErrBind, "%s is not an aggregate: * and DISTINCT do not apply", f.Name)
		return nil
	}
	if f.Name == "now" && len(args) == 0 {
		// One instant for the whole query, as DuckDB's now() is the
		// statement's start: every row and every batch see the same.
		l, _ := expr.NewLiteral(b.now())
		return l
	}
	out, err := b.Funcs.NewCall(f.Name, args...)
	return b.check(x.Pos, out, err)
}

func (b *Binder) columnRef(x *lang.ColumnRef, sc *scope, ac *aggScope) expr.Expr {
	var qual, name string
	switch len(x.Names) {
	case 1:
		name = x.Names[0]
	case 2:
		qual, name = x.Names[0], x.Names[1]
	default:
		b.errorf(x.Pos, ErrBind, "field access %s is not supported yet", strings.Join(x.Names, "."))
		return nil
	}
	if qual != "" && sc.failed[strings.ToLower(qual)] {
		return nil
	}
	if isWindowBound(name) && !sc.has(qual, name) && (qual == "" || sc.hasQualifier(qual)) {
		return b.windowBound(x, name, ac)
	}
	if qual != "" && !sc.hasQualifier(qual) {
		var quals []string
		seen := map[string]bool{}
		for _, c := range sc.cols {
			if c.qual != "" && !seen[c.qual] {
				seen[c.qual] = true
				quals = append(quals, c.qual)
			}
		}
		b.unknown(x.Pos, "relation", qual, quals)
		return nil
	}
	i, n := sc.resolve(qual, name)
	switch {
	case n == 0:
		b.unknown(x.Pos, "column", strings.Join(x.Names, "."), sc.names())
		return nil
	case n > 1:
		b.errorf(x.Pos, ErrBind, "column %q is ambiguous: qualify it with its relation", name)
		return nil
	}
	if ac.grouped() {
		// Not a group key (groupRef tried): it has no single value per group.
		if ac.incomplete {
			return nil
		}
		b.errorf(x.Pos, ErrBind, "column %s must appear in GROUP BY or be used in an aggregate function", strings.Join(x.Names, "."))
		return nil
	}
	c := sc.cols[i]
	return &expr.Column{Index: i, Name: c.name, DataType: c.typ}
}

// checkTypeArgs reports a precision given to a type that takes none
// (INT(3)); only DECIMAL has one.
func (b *Binder) checkTypeArgs(t *lang.Type) bool {
	if t.Precision != nil && t.Name != lang.TypeDecimal {
		b.errorf(t.Pos, ErrBind, "%s takes no precision (only DECIMAL(precision, scale) does)", t.Name)
		return false
	}
	return true
}

// TypeString spells a parsed type the way the catalog stores it.
func TypeString(t *lang.Type) string {
	if t == nil {
		return ""
	}
	if t.Name == lang.TypeDecimal && t.Precision != nil {
		scale := int64(0)
		if t.Scale != nil {
			scale = *t.Scale
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", *t.Precision, scale)
	}
	if t.Name != lang.TypeTensor {
		if t.Precision != nil {
			// INT(3): the catalog says what is wrong with it.
			return fmt.Sprintf("%s(%d)", t.Name, *t.Precision)
		}
		return string(t.Name)
	}
	parts := []string{string(t.Elem)}
	for _, d := range t.Dims {
		parts = append(parts, strconv.FormatInt(d, 10))
	}
	return "TENSOR(" + strings.Join(parts, ", ") + ")"
}

// distinctFrom binds x IS [NOT] DISTINCT FROM y as the CASE it means: NULL
// equals NULL and differs from every value, and the answer is never NULL.
func (b *Binder) distinctFrom(x *lang.DistinctFromExpr, sc *scope, ac *aggScope) expr.Expr {
	l, r := b.expr(x.X, sc, ac), b.expr(x.Y, sc, ac)
	if l == nil || r == nil {
		return nil
	}
	cmp := "not_equal"
	if x.Not {
		cmp = "equal"
	}
	c, err := b.Funcs.NewCall(cmp, l, r)
	if b.check(x.Pos, c, err) == nil {
		return nil
	}
	lit := func(v bool) expr.Expr { e, _ := expr.NewLiteral(v); return e }
	out, err := expr.NewCase([]expr.When{
		{Cond: &expr.IsNull{Expr: l}, Then: &expr.IsNull{Expr: r, Negated: !x.Not}},
		{Cond: &expr.IsNull{Expr: r}, Then: lit(!x.Not)},
	}, c)
	return b.check(x.Pos, out, err)
}

// isConstant reports whether e is a literal (or the cast the binder put on
// one to coerce it): the constant arguments aggregates take.
func isConstant(e expr.Expr) bool {
	if c, ok := e.(*expr.Cast); ok {
		e = c.Expr
	}
	l, ok := e.(*expr.Literal)
	return ok && l.Value != nil
}

func literalFloat(e expr.Expr) (float64, bool) {
	if c, ok := e.(*expr.Cast); ok {
		e = c.Expr
	}
	l := e.(*expr.Literal)
	switch v := l.Value.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case decimal128.Num:
		return expr.DecimalFloat64(v, l.DataType.(*arrow.Decimal128Type).Scale), true
	}
	return 0, false
}

// subquery binds an uncorrelated subquery used as a value, in EXISTS or in
// IN: it is bound on its own (it sees the WITH names, not the outer row),
// must read tables only (it is run once, before the query), and a value or
// IN subquery must return one column.
func (b *Binder) subquery(q *lang.Query, pos lexer.Position, kind expr.SubqueryKind, x expr.Expr, not bool, outer *scope) expr.Expr {
	clause := b.clause
	n0 := len(b.errs)
	node, sc := b.query(q, nil)
	b.clause = clause
	for _, e := range b.errs[n0:] {
		// A name of the outer row: say why it is not seen.
		if _, name, ok := strings.Cut(e.Msg, `unknown column "`); ok {
			name, _, _ = strings.Cut(name, `"`)
			qual, col, dotted := strings.Cut(name, ".")
			if !dotted {
				qual, col = "", name
			}
			if outer != nil && outer.has(qual, col) {
				e.Msg += " (it is a column of the outer query: a correlated subquery is supported in WHERE, and in the SELECT list of a query that does not aggregate)"
			}
		}
		if _, name, ok := strings.Cut(e.Msg, `unknown relation "`); ok {
			name, _, _ = strings.Cut(name, `"`)
			if outer != nil && outer.hasQualifier(name) {
				e.Msg += " (it is a relation of the outer query: a correlated subquery is supported in WHERE, and in the SELECT list of a query that does not aggregate)"
			}
		}
	}
	if node == nil {
		return nil
	}
	var stream string
	logical.Walk(node, func(n logical.Node) bool {
		if s, ok := n.(*logical.Scan); ok && s.Stream != nil && stream == "" {
			stream = s.Stream.Name
		}
		return stream == ""
	})
	if stream != "" {
		b.errorf(pos, ErrBind, "a subquery in an expression reads tables only (it runs once, before the query), not stream %s", stream)
		return nil
	}
	sq := &expr.Subquery{Kind: kind, Negated: not, Plan: node, Elem: expr.Bool}
	if kind == expr.ExistsSubquery {
		return sq
	}
	if len(sc.cols) != 1 {
		b.errorf(pos, ErrBind, "a subquery used as a value returns one column, this one returns %d", len(sc.cols))
		return nil
	}
	// A value in canonical type (INT is BIGINT): the executor puts a
	// literal in its place.
	sq.Elem = expr.Canonical(sc.cols[0].typ)
	if kind == expr.InSubquery {
		t, ok := expr.CommonType(x.Type(), sq.Elem)
		if !ok {
			b.errorf(pos, ErrBind, "IN compares %s with a subquery of %s", expr.TypeName(x.Type()), expr.TypeName(sq.Elem))
			return nil
		}
		// Canonical: the IN list is then plain literals, a hash set.
		t = expr.Canonical(t)
		sq.Expr, sq.Elem = expr.CastTo(x, t), t
	}
	return sq
}

// decorrelateExists rewrites EXISTS (SELECT ... FROM f WHERE f.k = outer.k
// AND rest) - one equality between a column of the subquery and one of the
// outer row, the rest uncorrelated - as coalesce(outer.k IN (SELECT f.k FROM
// f WHERE rest), FALSE), which is the same answer for every row, NULLs
// included (no match, and a NULL key, is FALSE), and runs once. nil when the
// subquery has another shape: it is then bound as written.
func (b *Binder) decorrelateExists(x *lang.ExistsExpr, outer *scope) lang.Expr {
	q := x.Query
	s := q.Select
	if outer == nil || len(q.UnionAll) > 0 || len(q.With) > 0 || q.Limit != nil || q.Offset != nil ||
		s.Where == nil || len(s.From) == 0 || len(s.GroupBy) > 0 || s.Having != nil {
		return nil
	}
	// The subquery's own columns, bound quietly: this only decides the
	// rewrite; binding the result reports what is wrong.
	n, clause := len(b.errs), b.clause
	var inner *scope
	for _, f := range s.From {
		_, fsc := b.fromItem(f)
		if fsc == nil {
			b.errs, b.clause = b.errs[:n], clause
			return nil
		}
		if inner == nil {
			inner = fsc
		} else {
			inner = inner.concat(fsc)
		}
	}
	b.errs, b.clause = b.errs[:n], clause
	side := func(e lang.Expr) int { // 1: the subquery's, 2: the outer row's
		c, ok := e.(*lang.ColumnRef)
		if !ok || len(c.Names) > 2 {
			return 0
		}
		qual, name := "", c.Names[len(c.Names)-1]
		if len(c.Names) == 2 {
			qual = c.Names[0]
		}
		if _, k := inner.resolve(qual, name); k > 0 {
			return 1
		}
		if _, k := outer.resolve(qual, name); k == 1 {
			return 2
		}
		return 0
	}
	var conj []lang.Expr
	var split func(e lang.Expr)
	split = func(e lang.Expr) {
		if a, ok := e.(*lang.BinaryExpr); ok && a.Op == lang.OpAnd {
			split(a.Left)
			split(a.Right)
			return
		}
		conj = append(conj, e)
	}
	split(s.Where)
	var innerKey, outerKey lang.Expr
	var rest lang.Expr
	for _, c := range conj {
		if eq, ok := c.(*lang.BinaryExpr); ok && eq.Op == lang.OpEq && innerKey == nil {
			l, r := side(eq.Left), side(eq.Right)
			if l == 1 && r == 2 {
				innerKey, outerKey = eq.Left, eq.Right
				continue
			}
			if l == 2 && r == 1 {
				innerKey, outerKey = eq.Right, eq.Left
				continue
			}
		}
		if rest == nil {
			rest = c
		} else {
			rest = &lang.BinaryExpr{Pos: rest.Position(), OpPos: c.Position(), Op: lang.OpAnd, Left: rest, Right: c}
		}
	}
	if innerKey == nil {
		return nil
	}
	sub := &lang.Query{Pos: q.Pos, Select: &lang.Select{Pos: s.Pos, Items: []*lang.SelectItem{{Pos: innerKey.Position(), Expr: innerKey}}, From: s.From, Where: rest}}
	in := &lang.InExpr{Pos: x.Pos, X: outerKey, Subquery: sub}
	return &lang.FuncCall{Pos: x.Pos, Name: "coalesce", Args: []lang.Expr{in, &lang.BoolLit{Pos: x.Pos, Value: false}}}
}

// orderedSet binds the SQL standard's ordered-set aggregates,
// percentile_cont(q) and percentile_disc(q) WITHIN GROUP (ORDER BY x), as the
// quantile_cont(x, q) and quantile_disc(x, q) they are (DESC: 1 - q, for the
// continuous one). ok is false for any other call; y is nil when the call is
// wrong (reported).
func (b *Binder) orderedSet(x *lang.FuncCall) (y *lang.FuncCall, ok bool) {
	name := strings.ToLower(x.Name)
	isPct := name == "percentile_cont" || name == "percentile_disc"
	switch {
	case x.WithinGroup == nil && !isPct:
		return nil, false
	case x.WithinGroup == nil:
		b.errorf(x.Pos, ErrBind, "%s is an ordered-set aggregate: %s(q) WITHIN GROUP (ORDER BY x)", name, name)
		return nil, true
	case !isPct:
		b.errorf(x.WithinGroup.Pos, ErrBind, "WITHIN GROUP applies to percentile_cont and percentile_disc, not %s", x.Name)
		return nil, true
	case len(x.Args) != 1 || x.Star || x.Distinct:
		b.errorf(x.Pos, ErrBind, "%s takes one fraction: %s(q) WITHIN GROUP (ORDER BY x)", name, name)
		return nil, true
	case x.WithinGroup.Nulls != "":
		b.errorf(x.WithinGroup.Pos, ErrBind, "NULLS %s has no meaning here: %s skips NULLs", x.WithinGroup.Nulls, name)
		return nil, true
	}
	q := x.Args[0]
	if x.WithinGroup.Desc {
		if name == "percentile_disc" {
			b.errorf(x.WithinGroup.Pos, ErrNotSupported, "percentile_disc over ORDER BY ... DESC is not supported yet")
			return nil, true
		}
		n, isNum := q.(*lang.NumberLit)
		var v float64
		var err error
		if isNum {
			v, err = strconv.ParseFloat(n.Value, 64)
		}
		if !isNum || err != nil {
			b.errorf(q.Position(), ErrBind, "the fraction of %s must be a number from 0 to 1", name)
			return nil, true
		}
		q = &lang.NumberLit{Pos: n.Pos, Value: strconv.FormatFloat(1-v, 'g', -1, 64)}
	}
	fn := "quantile_cont"
	if name == "percentile_disc" {
		fn = "quantile_disc"
	}
	return &lang.FuncCall{Pos: x.Pos, Name: fn, Args: []lang.Expr{x.WithinGroup.Expr, q}, Filter: x.Filter, Over: x.Over}, true
}

// aggClauses binds an aggregate's FILTER (WHERE c) and ORDER BY as the
// plain call they amount to. Every aggregate skips NULLs, so FILTER is
// agg(CASE WHEN c THEN x END) (count(*): count(CASE WHEN c THEN 1 END)).
// ORDER BY changes only string_agg's answer, which becomes
// string_agg_sorted(sort_key(s, order, keys...), sep); the other aggregates
// are the same in any order, so it is dropped there. nil when the call is
// wrong (reported).
func (b *Binder) aggClauses(x *lang.FuncCall) *lang.FuncCall {
	name := strings.ToLower(x.Name)
	if f, ok := b.Funcs.Lookup(name); !ok || f.Kind != expr.AggregateKind {
		if !ok {
			return x // reported as an unknown function
		}
		if x.Filter != nil {
			b.errorf(x.Filter.Position(), ErrBind, "FILTER (WHERE ...) applies to aggregates, not %s", name)
		} else {
			b.errorf(x.OrderBy[0].Pos, ErrBind, "ORDER BY inside a call applies to aggregates, not %s", name)
		}
		return nil
	}
	y := *x
	y.Filter, y.OrderBy = nil, nil
	y.Args = append([]lang.Expr(nil), x.Args...)
	if x.Filter != nil {
		if x.Star {
			y.Star = false
			y.Args = []lang.Expr{&lang.NumberLit{Pos: x.Pos, Value: "1"}}
		}
		if len(y.Args) == 0 {
			b.errorf(x.Pos, ErrBind, "%s takes no argument for FILTER to apply to", name)
			return nil
		}
		y.Args[0] = &lang.CaseExpr{Pos: x.Filter.Position(), Whens: []*lang.WhenClause{{Pos: x.Filter.Position(), Cond: x.Filter, Result: y.Args[0]}}}
	}
	if (len(x.OrderBy) > 0 || x.Distinct) && name == "string_agg" {
		if x.Star || len(y.Args) == 0 {
			b.errorf(x.Pos, ErrBind, "string_agg takes a string to join")
			return nil
		}
		orderBy := x.OrderBy
		if x.Distinct {
			// As in PostgreSQL, DISTINCT orders by the value itself (the
			// order is DuckDB's own otherwise): equal values are adjacent,
			// and the aggregate keeps one of each.
			for _, o := range orderBy {
				if lang.Print(o.Expr) != lang.Print(x.Args[0]) {
					b.errorf(o.Pos, ErrBind, "in string_agg(DISTINCT ...), ORDER BY must be the aggregated value %s", lang.Print(x.Args[0]))
					return nil
				}
			}
			if len(orderBy) == 0 {
				orderBy = []*lang.OrderItem{{Pos: x.Pos, Expr: x.Args[0]}}
			}
			y.Distinct = false
			if len(y.Args) == 1 {
				y.Args = append(y.Args, &lang.StringLit{Pos: x.Pos, Value: ","})
			}
			y.Args = append(y.Args, &lang.BoolLit{Pos: x.Pos, Value: true})
		}
		order := ""
		keys := []lang.Expr{y.Args[0], nil}
		for _, o := range orderBy {
			dir, nulls := "A", "L"
			if o.Desc {
				dir = "D"
			}
			if o.Nulls == "FIRST" {
				nulls = "F"
			}
			order += dir + nulls
			keys = append(keys, o.Expr)
		}
		keys[1] = &lang.StringLit{Pos: orderBy[0].Pos, Value: order}
		y.Name = "string_agg_sorted"
		y.Args[0] = &lang.FuncCall{Pos: x.Pos, Name: "sort_key", Args: keys}
	}
	return &y
}
