package bind

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// query binds a query (with its UNION ALL branches, ORDER BY and LIMIT); nil
// node when a branch failed (errors are recorded).
func (b *Binder) query(q *lang.Query, _ *scope) (logical.Node, *scope) {
	var nodes []logical.Node
	var first *scope
	for i, s := range q.Selects() {
		n, sc := b.selectBlock(s)
		if n == nil {
			continue
		}
		if i == 0 {
			first = sc
		} else if len(nodes) > 0 {
			prev := nodes[0].Schema()
			if len(prev.Fields()) != len(n.Schema().Fields()) {
				b.errorf(s.Pos, ErrBind, "UNION ALL branch has %d columns, the first has %d", len(n.Schema().Fields()), len(prev.Fields()))
				continue
			}
			for j, f := range n.Schema().Fields() {
				if !arrow.TypeEqual(f.Type, prev.Field(j).Type) {
					b.errorf(s.Pos, ErrBind, "UNION ALL column %d is %s here but %s in the first branch", j+1, expr.TypeName(f.Type), expr.TypeName(prev.Field(j).Type))
				}
			}
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	var n logical.Node = nodes[0]
	if len(nodes) > 1 {
		n = &logical.Union{Inputs: nodes, Pos: Pos(q.Pos)}
	}
	if first == nil {
		first = scopeOf(n, "")
	}
	if len(q.OrderBy) > 0 {
		var keys []logical.SortKey
		for _, o := range q.OrderBy {
			e := b.expr(o.Expr, first, nil)
			if e != nil {
				keys = append(keys, logical.SortKey{Expr: e, Desc: o.Desc})
			}
		}
		n = &logical.Sort{Input: n, Keys: keys, Pos: Pos(q.OrderBy[0].Pos)}
	}
	if q.Limit != nil {
		v, err := q.Limit.Int64()
		if err != nil || v < 0 {
			b.errorf(q.Limit.Pos, ErrBind, "LIMIT wants a non-negative integer, got %s", q.Limit.Value)
		} else {
			n = &logical.Limit{Input: n, N: v, Pos: Pos(q.Limit.Pos)}
		}
	}
	return n, first
}

// selectBlock binds one SELECT.
func (b *Binder) selectBlock(s *lang.Select) (logical.Node, *scope) {
	if len(s.From) == 0 {
		b.errorf(s.Pos, ErrBind, "a query needs a FROM clause: tierflow queries read streams or tables")
		return nil, nil
	}
	var node logical.Node
	var sc *scope
	for _, f := range s.From {
		n, fsc := b.fromItem(f)
		if n == nil {
			return nil, nil
		}
		if node == nil {
			node, sc = n, fsc
			continue
		}
		node = logical.NewJoin(logical.CrossJoin, node, n, nil, Pos(f.Pos))
		sc = sc.concat(fsc)
	}
	if s.Where != nil {
		if pred := b.predicate(s.Where, sc, "WHERE"); pred != nil {
			node = &logical.Filter{Input: node, Pred: pred, Pos: Pos(s.Where.Position())}
		}
	}
	aggregating := len(s.GroupBy) > 0 || s.Having != nil || s.Distinct
	if !aggregating {
		for _, it := range s.Items {
			if it.Expr != nil && hasAggregateCall(it.Expr, b.Funcs) {
				aggregating = true
			}
		}
	}
	if aggregating {
		return b.aggregate(s, node, sc)
	}
	return b.project(s, node, sc)
}

// project binds the SELECT list of a non-aggregating block.
func (b *Binder) project(s *lang.Select, node logical.Node, sc *scope) (logical.Node, *scope) {
	var exprs []expr.Expr
	var names []string
	out := &scope{}
	for _, it := range s.Items {
		if it.Star {
			n := 0
			for i, c := range sc.cols {
				if it.Qualifier != "" && !strings.EqualFold(c.qual, it.Qualifier) {
					continue
				}
				exprs = append(exprs, &expr.Column{Index: i, Name: c.name, DataType: c.typ})
				names = append(names, c.name)
				out.cols = append(out.cols, column{qual: c.qual, name: c.name, typ: c.typ})
				n++
			}
			if n == 0 && it.Qualifier != "" {
				b.unknown(it.Pos, "relation", it.Qualifier, nil)
			}
			continue
		}
		e := b.expr(it.Expr, sc, nil)
		if e == nil {
			continue
		}
		name := itemName(it, e)
		exprs = append(exprs, e)
		names = append(names, name)
		qual := ""
		if c, ok := e.(*expr.Column); ok && it.Alias == "" {
			// ORDER BY s.camera still finds the column s.camera became.
			qual = sc.cols[c.Index].qual
		}
		out.cols = append(out.cols, column{qual: qual, name: name, typ: e.Type()})
	}
	if len(exprs) == 0 {
		return nil, nil
	}
	return logical.NewProject(node, exprs, names, Pos(s.Pos)), out
}

func itemName(it *lang.SelectItem, e expr.Expr) string {
	if it.Alias != "" {
		return it.Alias
	}
	if c, ok := it.Expr.(*lang.ColumnRef); ok {
		return c.Names[len(c.Names)-1]
	}
	if c, ok := e.(*expr.Column); ok {
		return c.Name
	}
	if f, ok := it.Expr.(*lang.FuncCall); ok {
		return strings.ToLower(f.Name)
	}
	return strings.ToLower(e.String())
}

// fromItem binds a table reference and its joins.
func (b *Binder) fromItem(f *lang.FromItem) (logical.Node, *scope) {
	node, sc := b.tableRef(f.Table)
	if node == nil {
		return nil, nil
	}
	for _, j := range f.Joins {
		if j.Lateral != nil {
			n2, sc2 := b.lateral(j, node, sc)
			if n2 == nil {
				// Keep binding the rest of the query without the call, so
				// that every other problem is reported too.
				alias := j.Lateral.Alias
				if alias == "" && j.Lateral.Call != nil {
					alias = j.Lateral.Call.Name
				}
				sc = sc.concat(&scope{})
				sc.fail(alias)
				continue
			}
			node, sc = n2, sc2
			continue
		}
		right, rsc := b.tableRef(j.Table)
		if right == nil {
			return nil, nil
		}
		both := sc.concat(rsc)
		kind := logical.InnerJoin
		switch j.Kind {
		case lang.JoinLeft:
			kind = logical.LeftJoin
		case lang.JoinCross:
			kind = logical.CrossJoin
		}
		var on expr.Expr
		if j.On != nil {
			on = b.predicate(j.On, both, "ON")
		} else if kind != logical.CrossJoin {
			b.errorf(j.Pos, ErrBind, "%s JOIN needs an ON condition", j.Kind)
		}
		node = logical.NewJoin(kind, node, right, on, Pos(j.Pos))
		sc = both
	}
	return node, sc
}

func (b *Binder) tableRef(t *lang.TableRef) (logical.Node, *scope) {
	if t.Subquery != nil {
		n, sc := b.query(t.Subquery, nil)
		if n == nil {
			return nil, nil
		}
		if t.Alias == "" {
			b.errorf(t.Pos, ErrBind, "a subquery in FROM needs an alias")
		}
		out := &scope{}
		for _, c := range sc.cols {
			out.cols = append(out.cols, column{qual: t.Alias, name: c.name, typ: c.typ})
		}
		return n, out
	}
	alias := t.Alias
	if alias == "" {
		alias = t.Name
	}
	st := b.Catalog.Stream(t.Name)
	tb := b.Catalog.Table(t.Name)
	if st == nil && tb == nil {
		if b.Catalog.Model(t.Name) != nil {
			b.errorf(t.Pos, ErrBind, "%q is a model: call it with CROSS JOIN LATERAL %s(...)", t.Name, t.Name)
			return nil, nil
		}
		var have []string
		for _, s := range b.Catalog.Streams {
			have = append(have, s.Name)
		}
		for _, s := range b.Catalog.Tables {
			have = append(have, s.Name)
		}
		b.unknown(t.Pos, "stream or table", t.Name, have)
		return nil, nil
	}
	n, err := logical.NewScan(st, tb, alias, nil, Pos(t.Pos))
	if err != nil {
		b.errorf(t.Pos, ErrBind, "%v", err)
		return nil, nil
	}
	return n, scopeOf(n, alias)
}

// lateral binds CROSS JOIN LATERAL model(args) AS alias(cols).
func (b *Binder) lateral(j *lang.Join, in logical.Node, sc *scope) (logical.Node, *scope) {
	call := j.Lateral.Call
	m := b.Catalog.Model(call.Name)
	if m == nil {
		var have []string
		for _, x := range b.Catalog.Models {
			have = append(have, x.Name)
		}
		b.unknown(call.Pos, "model", call.Name, have)
		return nil, nil
	}
	if j.Kind != lang.JoinCross {
		b.errorf(j.Pos, ErrBind, "a model is applied with CROSS JOIN LATERAL, not %s JOIN", j.Kind)
	}
	if j.On != nil {
		b.errorf(j.On.Position(), ErrBind, "CROSS JOIN LATERAL takes no ON condition")
	}
	var args []expr.Expr
	ok := true
	for i, a := range call.Args {
		e := b.expr(a, sc, nil)
		if e == nil {
			ok = false
			continue
		}
		if i < len(m.Inputs) {
			want, err := catalog.ParseType(m.Inputs[i].Type)
			if err == nil && !compatible(e.Type(), want) {
				b.errorf(a.Position(), ErrBind, "model %s input %s wants %s, got %s", m.Name, m.Inputs[i].Name, m.Inputs[i].Type, expr.TypeName(e.Type()))
				ok = false
			}
		}
		args = append(args, e)
	}
	if len(m.Inputs) > 0 && len(call.Args) != len(m.Inputs) {
		b.errorf(call.Pos, ErrBind, "model %s takes %d inputs (%s), got %d", m.Name, len(m.Inputs), columnList(m.Inputs), len(call.Args))
		ok = false
	}
	if len(call.Args) == 0 {
		b.errorf(call.Pos, ErrBind, "model %s needs at least one argument", m.Name)
		ok = false
	}
	if len(m.Outputs) == 0 {
		b.errorf(call.Pos, ErrBind, "model %s declares no outputs (OUTPUTS (...) in CREATE MODEL, outputs: in the catalog)", m.Name)
		return nil, nil
	}
	names := make([]string, len(m.Outputs))
	for i, o := range m.Outputs {
		names[i] = o.Name
	}
	if cols := j.Lateral.Columns; len(cols) > 0 {
		if len(cols) != len(m.Outputs) {
			b.errorf(j.Lateral.Pos, ErrBind, "model %s has %d outputs (%s); the alias names %d", m.Name, len(m.Outputs), columnList(m.Outputs), len(cols))
			return nil, nil
		}
		names = cols
	}
	if !ok {
		return nil, nil
	}
	var out []arrow.Field
	for i, o := range m.Outputs {
		f, err := o.Field()
		if err != nil {
			b.errorf(call.Pos, ErrBind, "model %s output %s: %v", m.Name, o.Name, err)
			return nil, nil
		}
		f.Name = names[i]
		out = append(out, f)
	}
	alias := j.Lateral.Alias
	if alias == "" {
		alias = m.Name
	}
	name := m.Name
	if b.models[strings.ToLower(m.Name)] > 1 {
		// Called more than once: the alias tells the operators apart.
		name = m.Name + "_" + alias
	}
	n := logical.NewLateralModel(in, m, name, args, alias, out, Pos(call.Pos))
	osc := &scope{cols: append([]column(nil), sc.cols...)}
	for _, f := range out {
		osc.cols = append(osc.cols, column{qual: alias, name: f.Name, typ: f.Type})
	}
	return n, osc
}

func columnList(cs []catalog.Column) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name + " " + c.Type
	}
	return strings.Join(parts, ", ")
}

// compatible reports whether a value of type got can feed a model input of
// type want: equal types, numbers for numbers, and any bulk payload (tensor,
// blob, string) for a blob or tensor input, whose decoding the model's
// pre-processing owns.
func compatible(got, want arrow.DataType) bool {
	if arrow.TypeEqual(got, want) {
		return true
	}
	if expr.IsNumeric(got) && expr.IsNumeric(want) {
		return true
	}
	payload := func(t arrow.DataType) bool {
		switch t.(type) {
		case *arrow.FixedSizeListType, *arrow.BinaryType, *arrow.StringType, *arrow.ListType:
			return true
		}
		return false
	}
	if payload(got) && payload(want) {
		_, wantText := want.(*arrow.StringType)
		_, gotText := got.(*arrow.StringType)
		return !wantText || gotText
	}
	return false
}

// aggregate binds GROUP BY / HAVING / DISTINCT / aggregate calls.
func (b *Binder) aggregate(s *lang.Select, node logical.Node, sc *scope) (logical.Node, *scope) {
	var groups []expr.Expr
	var groupNames []string
	var win *logical.Window
	for _, g := range s.GroupBy {
		if fc, ok := g.(*lang.FuncCall); ok && isWindow(fc.Name) {
			if win != nil {
				b.errorf(fc.Pos, ErrBind, "only one window per GROUP BY")
				continue
			}
			win = b.window(fc, sc)
			continue
		}
		e := b.expr(g, sc, nil)
		if e == nil {
			continue
		}
		groups = append(groups, e)
		name := strings.ToLower(e.String())
		if c, ok := e.(*expr.Column); ok {
			name = c.Name
		}
		groupNames = append(groupNames, name)
	}
	if s.Distinct && len(s.GroupBy) == 0 {
		// SELECT DISTINCT items: group by every item.
		for _, it := range s.Items {
			if it.Star {
				for i, c := range sc.cols {
					groups = append(groups, &expr.Column{Index: i, Name: c.name, DataType: c.typ})
					groupNames = append(groupNames, c.name)
				}
				continue
			}
			if e := b.expr(it.Expr, sc, nil); e != nil {
				groups = append(groups, e)
				groupNames = append(groupNames, itemName(it, e))
			}
		}
	}
	ac := &aggCollector{}
	type item struct {
		e    expr.Expr
		name string
		pos  *lang.SelectItem
	}
	var items []item
	for _, it := range s.Items {
		if it.Star {
			if s.Distinct && len(s.GroupBy) == 0 {
				continue
			}
			b.errorf(it.Pos, ErrBind, "SELECT * cannot be used with GROUP BY")
			continue
		}
		e := b.expr(it.Expr, sc, ac)
		if e == nil {
			continue
		}
		items = append(items, item{e, itemName(it, e), it})
	}
	var having expr.Expr
	if s.Having != nil {
		having = b.predicate2(s.Having, sc, ac, "HAVING")
	}
	aggNames := make([]string, len(ac.aggs))
	for i := range ac.aggs {
		aggNames[i] = fmt.Sprintf("agg%d", i)
	}
	agg := logical.NewAggregate(node, groups, groupNames, win, ac.aggs, aggNames, Pos(s.Pos))
	// Rewrite the items over the aggregate's output: group keys, window
	// bounds, aggregates.
	nGroup := len(groups)
	winOff := nGroup
	aggOff := nGroup
	if win != nil {
		aggOff += 2
	}
	out := agg.Schema()
	rewrite := func(e expr.Expr, at *lang.SelectItem, pos lang.Node) expr.Expr {
		bad := false
		r := expr.Transform(e, func(x expr.Expr) expr.Expr {
			for i, g := range groups {
				if x.String() == g.String() {
					return &expr.Column{Index: i, Name: groupNames[i], DataType: out.Field(i).Type}
				}
			}
			if a, ok := x.(*expr.Aggregate); ok {
				for i, y := range ac.aggs {
					if y == a {
						return &expr.Column{Index: aggOff + i, Name: aggNames[i], DataType: a.Type()}
					}
				}
			}
			if c, ok := x.(*expr.Column); ok && c.Index >= 0 {
				if win != nil && (c.Name == "window_start" || c.Name == "window_end") {
					off := winOff
					if c.Name == "window_end" {
						off++
					}
					return &expr.Column{Index: off, Name: c.Name, DataType: expr.Timestamp}
				}
				bad = true
			}
			return x
		})
		if bad {
			b.errorf(pos.Position(), ErrBind, "%s must appear in GROUP BY or be used in an aggregate function", e.String())
			return nil
		}
		return r
	}
	var exprs []expr.Expr
	var names []string
	osc := &scope{}
	for _, it := range items {
		r := rewrite(it.e, it.pos, it.pos.Expr)
		if r == nil {
			continue
		}
		exprs = append(exprs, r)
		names = append(names, it.name)
		osc.cols = append(osc.cols, column{name: it.name, typ: r.Type()})
	}
	if s.Distinct && len(s.GroupBy) == 0 && len(exprs) == 0 {
		for i, f := range out.Fields() {
			exprs = append(exprs, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})
			names = append(names, f.Name)
			osc.cols = append(osc.cols, column{name: f.Name, typ: f.Type})
		}
	}
	var n logical.Node = agg
	if having != nil {
		if h := rewrite(having, nil, s.Having); h != nil {
			n = &logical.Filter{Input: n, Pred: h, Pos: Pos(s.Having.Position())}
		}
	}
	if len(exprs) == 0 {
		return nil, nil
	}
	return logical.NewProject(n, exprs, names, Pos(s.Pos)), osc
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

func (b *Binder) predicate(e lang.Expr, sc *scope, clause string) expr.Expr {
	return b.predicate2(e, sc, nil, clause)
}

func (b *Binder) predicate2(e lang.Expr, sc *scope, ac *aggCollector, clause string) expr.Expr {
	x := b.expr(e, sc, ac)
	if x == nil {
		return nil
	}
	if !arrow.TypeEqual(x.Type(), expr.Bool) && !expr.IsNullType(x.Type()) {
		b.errorf(e.Position(), ErrBind, "%s wants a BOOLEAN condition, got %s", clause, expr.TypeName(x.Type()))
		return nil
	}
	return x
}

// objectives reads WITH (ACCURACY >= ..., THROUGHPUT >= ... PER ..., ...).
func (b *Binder) objectives(os []lang.Objective) logical.Objectives {
	var o logical.Objectives
	num := func(n *lang.NumberLit) float64 {
		v, err := n.Float64()
		if err != nil || v < 0 {
			b.errorf(n.Pos, ErrBind, "want a non-negative number, got %s", n.Value)
			return 0
		}
		return v
	}
	for _, x := range os {
		switch x := x.(type) {
		case *lang.AccuracyObjective:
			v := num(x.Min)
			o.Accuracy = &v
		case *lang.ThroughputObjective:
			o.Throughput = num(x.Min) / x.Per.Seconds()
		case *lang.LatencyObjective:
			o.LatencyMs = num(x.Max) * x.Unit.Seconds() * 1000
			if x.Percentile != nil {
				o.Percentile = num(x.Percentile)
			}
		case *lang.BudgetObjective:
			o.Budget = num(x.Max)
		case *lang.PriorityObjective:
			o.Priority = string(x.Class)
		}
	}
	return o
}
