package bind

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// aggScope is where a grouping query's SELECT list, HAVING and ORDER BY bind
// (DuckDB's aggregate binder): an expression equal to a group key, the
// window bounds and aggregate calls become columns of the Aggregate's output
// (group keys, window_start, window_end, aggregates); any other column of the
// FROM row is an error, since it has no single value per group. Scalar
// expressions over those (round(avg(x), 2), upper(site)) are computed by the
// projection above the Aggregate.
//
// Inside an aggregate call's arguments the scope has inside set: they read
// the FROM row, and another aggregate there is an error.
type aggScope struct {
	groups     []expr.Expr
	groupKeys  []string
	groupNames []string
	win        *logical.Window
	aggs       []*expr.Aggregate
	aggKeys    []string
	inside     *lang.FuncCall
	// incomplete: a GROUP BY item did not bind, so a column that is not
	// grouped may well be meant to be; that is not reported again.
	incomplete bool
}

func (a *aggScope) grouped() bool { return a != nil && a.inside == nil }

// ref adds an aggregate (once per distinct call) and returns its output column.
func (a *aggScope) ref(x *expr.Aggregate) expr.Expr {
	k := exprKey(x)
	i := 0
	for i < len(a.aggKeys) && a.aggKeys[i] != k {
		i++
	}
	if i == len(a.aggs) {
		a.aggs = append(a.aggs, x)
		a.aggKeys = append(a.aggKeys, k)
	}
	off := len(a.groups)
	if a.win != nil {
		off += 2
	}
	return &expr.Column{Index: off + i, Name: aggName(i), DataType: a.aggs[i].Type()}
}

func aggName(i int) string { return fmt.Sprintf("agg%d", i) }

// exprKey identifies a bound expression: its rendering with columns by index,
// so that r.sensor and s.sensor differ.
func exprKey(e expr.Expr) string {
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok {
			return &expr.Column{Index: c.Index, Name: fmt.Sprintf("#%d", c.Index), DataType: c.DataType}
		}
		return x
	}).String()
}

// groupRef returns the group key column e stands for, or nil.
func (b *Binder) groupRef(e lang.Expr, sc *scope, ac *aggScope) expr.Expr {
	if len(ac.groups) == 0 {
		return nil
	}
	switch e.(type) {
	case *lang.NumberLit, *lang.StringLit, *lang.BoolLit, *lang.NullLit, *lang.IntervalLit, *lang.TimestampLit:
		return nil
	}
	if hasWindowCall(e) {
		// Never a group key, and binding it here would collect the call.
		return nil
	}
	// Bind e over the FROM row, quietly: failing here only means e is not a
	// group key, and binding it in ac reports what is wrong.
	n, clause := len(b.errs), b.clause
	x := b.expr(e, sc, nil)
	b.errs, b.clause = b.errs[:n], clause
	if x == nil {
		return nil
	}
	k := exprKey(x)
	for i, g := range ac.groupKeys {
		if g == k {
			return &expr.Column{Index: i, Name: ac.groupNames[i], DataType: ac.groups[i].Type()}
		}
	}
	return nil
}

func isWindowBound(name string) bool {
	return strings.EqualFold(name, "window_start") || strings.EqualFold(name, "window_end") || strings.EqualFold(name, "window_time")
}

// windowBound binds window_start, window_end or window_time, which only a
// windowed grouping defines (a FROM column of that name wins: the binder
// only gets here when there is none). window_time is Flink's: the last
// instant inside the window (window_end less 1 µs, our precision), the
// time attribute of the window's rows downstream.
func (b *Binder) windowBound(x *lang.ColumnRef, name string, ac *aggScope) expr.Expr {
	name = strings.ToLower(name)
	switch {
	case ac.grouped() && ac.win != nil:
		i := len(ac.groups)
		if name == "window_time" {
			end := &expr.Column{Index: i + 1, Name: "window_end", DataType: expr.Timestamp}
			c, err := b.Funcs.NewCall("subtract", end, &expr.Literal{Value: time.Microsecond, DataType: expr.Interval})
			if err != nil {
				b.errorf(x.Pos, ErrBind, "window_time: %v", err)
				return nil
			}
			return c
		}
		if name == "window_end" {
			i++
		}
		return &expr.Column{Index: i, Name: name, DataType: expr.Timestamp}
	case ac != nil && ac.inside != nil:
		b.errorf(x.Pos, ErrBind, "%s is a bound of the window, not a column of its rows: it cannot be used inside aggregate %s", name, strings.ToLower(ac.inside.Name))
	case !ac.grouped() && (b.clause == "WHERE" || b.clause == "ON" || b.clause == "GROUP BY"):
		b.errorf(x.Pos, ErrUnknown, "%s is not defined in %s: only the SELECT list, HAVING and ORDER BY of a query grouped by a window see it", name, b.clause)
	default:
		b.errorf(x.Pos, ErrUnknown, "%s needs a window in GROUP BY: TUMBLE(ts, size), HOP(ts, size, slide) or SESSION(ts, gap)", name)
	}
	return nil
}

func (b *Binder) clauseName() string {
	if b.clause == "" {
		return "this clause"
	}
	return b.clause
}

// aggregate binds a grouping SELECT: GROUP BY (with at most one window),
// aggregates anywhere in the SELECT list, HAVING and ORDER BY, and DISTINCT.
func (b *Binder) aggregate(s *lang.Select, order []*lang.OrderItem, node logical.Node, sc *scope) (logical.Node, *scope) {
	ac := &aggScope{}
	addGroup := func(e expr.Expr, name string) {
		ac.groups = append(ac.groups, e)
		ac.groupKeys = append(ac.groupKeys, exprKey(e))
		ac.groupNames = append(ac.groupNames, name)
	}
	b.clause = "GROUP BY"
	for _, g := range s.GroupBy {
		if g = b.groupItem(g, s, sc); g == nil {
			ac.incomplete = true
			continue
		}
		if fc, ok := g.(*lang.FuncCall); ok && isWindow(fc.Name) {
			if ac.win != nil {
				b.errorf(fc.Pos, ErrBind, "only one window per GROUP BY")
				continue
			}
			ac.win = b.window(fc, sc)
			continue
		}
		e := b.expr(g, sc, nil)
		if e == nil {
			ac.incomplete = true
			continue
		}
		name := strings.ToLower(e.String())
		if c, ok := e.(*expr.Column); ok {
			name = c.Name
		}
		addGroup(e, name)
	}
	// SELECT DISTINCT without GROUP BY or aggregates groups by its items; with
	// them, the distinct rows are taken after the projection.
	distinctGroups := s.Distinct && len(s.GroupBy) == 0 && s.Having == nil && !itemsAggregate(s, b)
	ws := b.newWinScope(s)
	b.wins = ws // selectBlock restores the enclosing block's
	b.clause = "SELECT"
	if distinctGroups {
		for _, it := range s.Items {
			if it.Star {
				for _, c := range b.star(it, sc) {
					addGroup(c.e, c.name)
				}
				continue
			}
			if e := b.expr(it.Expr, sc, nil); e != nil {
				addGroup(e, itemName(it, e, false))
			}
		}
	}
	p := &projection{}
	for _, it := range s.Items {
		if it.Star {
			if !distinctGroups {
				b.errorf(it.Pos, ErrBind, "SELECT * cannot be used with GROUP BY or aggregates")
				continue
			}
			for _, c := range b.star(it, sc) {
				k := exprKey(c.e)
				for i, g := range ac.groupKeys {
					if g == k {
						p.add(&expr.Column{Index: i, Name: c.name, DataType: c.e.Type()}, c.name, "")
						break
					}
				}
			}
			continue
		}
		e := b.expr(it.Expr, sc, ac)
		if e == nil {
			continue
		}
		p.item(it, e, true, "")
	}
	var having expr.Expr
	if s.Having != nil {
		b.clause = "HAVING"
		b.wins = nil
		b.havingAliases(s, sc)
		having = b.predicate2(s.Having, sc, ac, "HAVING")
		b.wins = ws
	}
	b.clause = "ORDER BY"
	bindOrder := func(e lang.Expr) expr.Expr { return b.expr(e, sc, ac) }
	if distinctGroups {
		bindOrder = func(e lang.Expr) expr.Expr {
			n := len(b.errs)
			if x := b.expr(e, sc, ac); x != nil {
				return x
			}
			// Not a group key: say why in DISTINCT's terms, unless e does
			// not bind at all (that error is the one to show).
			b.errs = b.errs[:n]
			if b.expr(e, sc, nil) != nil {
				b.errorf(e.Position(), ErrBind, "with SELECT DISTINCT, ORDER BY %s must appear in the select list", lang.Print(e))
			}
			return nil
		}
	}
	keys := b.orderKeys(order, p, bindOrder, s.Distinct)
	b.clause = ""
	aggNames := make([]string, len(ac.aggs))
	for i := range ac.aggs {
		aggNames[i] = aggName(i)
	}
	var n logical.Node = logical.NewAggregate(node, ac.groups, ac.groupNames, ac.win, ac.aggs, aggNames, Pos(s.Pos))
	if having != nil {
		n = &logical.Filter{Input: n, Pred: having, Pos: Pos(s.Having.Position())}
	}
	n = b.placeWindows(ws, n, p.exprs, Pos(s.Pos))
	if len(p.exprs) == 0 {
		return nil, nil
	}
	return p.build(n, keys, order, s.Distinct && !distinctGroups, Pos(s.Pos))
}

func itemsWindow(s *lang.Select) bool {
	for _, it := range s.Items {
		if it.Expr != nil && hasWindowCall(it.Expr) {
			return true
		}
	}
	return false
}

func itemsAggregate(s *lang.Select, b *Binder) bool {
	for _, it := range s.Items {
		if it.Expr != nil && hasAggregateCall(it.Expr, b.Funcs) {
			return true
		}
	}
	return false
}

func isWindow(name string) bool {
	switch strings.ToUpper(name) {
	case "TUMBLE", "HOP", "SESSION":
		return true
	}
	return false
}

func (b *Binder) window(fc *lang.FuncCall, sc *scope) *logical.Window {
	kind := map[string]logical.WindowKind{"TUMBLE": logical.Tumble, "HOP": logical.Hop, "SESSION": logical.Session}[strings.ToUpper(fc.Name)]
	want := 2
	if kind == logical.Hop {
		want = 3
	}
	if len(fc.Args) != want {
		b.errorf(fc.Pos, ErrBind, "%s takes %d arguments (time column, %s), got %d", strings.ToUpper(fc.Name), want,
			map[logical.WindowKind]string{logical.Tumble: "size", logical.Hop: "size, slide", logical.Session: "gap"}[kind], len(fc.Args))
		return nil
	}
	t := b.expr(fc.Args[0], sc, nil)
	if t != nil && !arrow.TypeEqual(t.Type(), expr.Timestamp) {
		b.errorf(fc.Args[0].Position(), ErrBind, "%s wants a TIMESTAMP time column, got %s", strings.ToUpper(fc.Name), expr.TypeName(t.Type()))
	}
	durs := make([]time.Duration, 0, 2)
	for _, a := range fc.Args[1:] {
		iv, ok := a.(*lang.IntervalLit)
		if !ok {
			b.errorf(a.Position(), ErrBind, "window sizes are INTERVAL literals, e.g. INTERVAL '10' SECOND")
			return nil
		}
		sec, err := iv.Seconds()
		if err != nil || sec <= 0 {
			b.errorf(a.Position(), ErrBind, "window interval must be positive, got '%s' %s", iv.Value, iv.Unit)
			return nil
		}
		durs = append(durs, time.Duration(sec*float64(time.Second)))
	}
	if t == nil {
		return nil
	}
	w := &logical.Window{Kind: kind, Time: t, Size: durs[0]}
	if kind == logical.Hop {
		w.Slide = durs[1]
	}
	return w
}

// groupItem resolves a GROUP BY item that names a SELECT item, as DuckDB
// does: an ordinal (GROUP BY 1) is that item's expression, and so is a bare
// name that is no column of the FROM row but an item's alias. nil when the
// item is wrong (reported).
func (b *Binder) groupItem(g lang.Expr, s *lang.Select, sc *scope) lang.Expr {
	switch x := g.(type) {
	case *lang.NumberLit:
		v, err := x.Int64()
		if err != nil {
			return g // a constant; binding it says what is wrong
		}
		if v < 1 || v > int64(len(s.Items)) {
			b.errorf(x.Pos, ErrBind, "GROUP BY position %d is not in the select list (1 to %d)", v, len(s.Items))
			return nil
		}
		it := s.Items[v-1]
		switch {
		case it.Star:
			b.errorf(x.Pos, ErrBind, "GROUP BY position %d is a *, not one expression", v)
			return nil
		case hasAggregateCall(it.Expr, b.Funcs):
			b.errorf(x.Pos, ErrBind, "GROUP BY position %d is an aggregate (%s): it cannot be grouped by", v, lang.Print(it.Expr))
			return nil
		}
		return it.Expr
	case *lang.ColumnRef:
		if len(x.Names) != 1 || sc.has("", x.Names[0]) {
			return g
		}
		for _, it := range s.Items {
			if it.Alias != "" && strings.EqualFold(it.Alias, x.Names[0]) && !hasAggregateCall(it.Expr, b.Funcs) {
				return it.Expr
			}
		}
	}
	return g
}

// havingAliases lets HAVING name a SELECT item by its alias, as DuckDB does
// (SELECT g, sum(x) AS s ... HAVING s > 10); a FROM column of that name
// wins.
func (b *Binder) havingAliases(s *lang.Select, sc *scope) {
	lang.Inspect(s.Having, func(n lang.Node) bool {
		switch x := n.(type) {
		case *lang.Query:
			return false
		case *lang.ColumnRef:
			if len(x.Names) != 1 || sc.has("", x.Names[0]) {
				return true
			}
			for _, it := range s.Items {
				if it.Expr != nil && it.Alias != "" && strings.EqualFold(it.Alias, x.Names[0]) && !hasWindowCall(it.Expr) {
					if b.replaced == nil {
						b.replaced = map[lang.Expr]lang.Expr{}
					}
					b.replaced[x] = it.Expr
					break
				}
			}
		}
		return true
	})
}
