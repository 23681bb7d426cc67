package bind

import (
	"math"
	"slices"
	"strconv"
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
	if len(q.With) > 0 {
		outer := len(b.ctes)
		seen := map[string]bool{}
		for _, c := range q.With {
			if seen[strings.ToLower(c.Name)] {
				b.errorf(c.Pos, ErrBind, "WITH names %s twice", c.Name)
			}
			seen[strings.ToLower(c.Name)] = true
			b.ctes = append(b.ctes, c)
		}
		defer func() { b.ctes = b.ctes[:outer] }()
	}
	var nodes []logical.Node
	var first *scope
	var common []arrow.DataType // each column's type across the branches
	selects := q.Selects()
	for i, s := range selects {
		var order []*lang.OrderItem
		if len(selects) == 1 {
			// One SELECT: ORDER BY sees its FROM row and aggregates too.
			order = q.OrderBy
		}
		n, sc := b.selectBlock(s, order)
		if n == nil {
			continue
		}
		if i == 0 {
			first = sc
		}
		if len(nodes) > 0 {
			prev := nodes[0].Schema()
			if len(prev.Fields()) != len(n.Schema().Fields()) {
				b.errorf(s.Pos, ErrBind, "UNION ALL branch has %d columns, the first has %d", len(n.Schema().Fields()), len(prev.Fields()))
				continue
			}
			// As DuckDB: the branches' types unify (NULL, INT and
			// BIGINT, BIGINT and DOUBLE), and each branch is cast to them.
			for j, f := range n.Schema().Fields() {
				if arrow.TypeEqual(common[j], f.Type) {
					continue
				}
				t, ok := expr.CommonType(common[j], f.Type)
				if !ok {
					b.errorf(s.Pos, ErrBind, "UNION ALL column %d is %s here but %s in the first branch", j+1, expr.TypeName(f.Type), expr.TypeName(prev.Field(j).Type))
					continue
				}
				common[j] = t
			}
		} else {
			for _, f := range n.Schema().Fields() {
				common = append(common, f.Type)
			}
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	if len(nodes) > 1 {
		for i, n := range nodes {
			nodes[i] = castColumns(n, common)
		}
		if first != nil {
			for j := range first.cols {
				if j < len(common) {
					first.cols[j].typ = common[j]
				}
			}
		}
	}
	var n logical.Node = nodes[0]
	if len(nodes) > 1 {
		n = &logical.Union{Inputs: nodes, Pos: Pos(q.Pos)}
	}
	if first == nil {
		first = scopeOf(n, "")
	}
	if len(q.OrderBy) > 0 && len(selects) > 1 {
		n = b.sortOutput(n, first, q.OrderBy)
	}
	if q.OrderByAll {
		n = orderByAll(n, q)
	}
	if q.Limit != nil || q.Offset != nil {
		lim := &logical.Limit{Input: n, N: logical.NoLimit}
		ok := true
		if q.Limit != nil {
			v, err := q.Limit.Int64()
			if err != nil || v < 0 {
				b.errorf(q.Limit.Pos, ErrBind, "LIMIT wants a non-negative integer, got %s", q.Limit.Value)
				ok = false
			}
			lim.N, lim.Pos = v, Pos(q.Limit.Pos)
		}
		if q.Offset != nil {
			v, err := q.Offset.Int64()
			if err != nil || v < 0 {
				b.errorf(q.Offset.Pos, ErrBind, "OFFSET wants a non-negative integer, got %s", q.Offset.Value)
				ok = false
			}
			lim.Offset = v
			if q.Limit == nil {
				lim.Pos = Pos(q.Offset.Pos)
			}
		}
		if ok {
			n = lim
		}
	}
	return n, first
}

// selectBlock binds one SELECT, and the query's ORDER BY when order is set.
func (b *Binder) selectBlock(s *lang.Select, order []*lang.OrderItem) (logical.Node, *scope) {
	// A block nested in an expression (a subquery) has window functions of
	// its own, and none in its WHERE.
	prev := b.wins
	b.wins = nil
	defer func() { b.wins = prev }()
	if s.GroupByAll {
		s = b.groupByAll(s)
	}
	var node logical.Node
	var sc *scope
	if len(s.From) == 0 {
		// SELECT without FROM reads one row of no columns, as DuckDB.
		node, sc = &logical.Values{Pos: Pos(s.Pos)}, &scope{}
	}
	where := s.Where
	conj := splitAnd(s.Where)
	used := make([]bool, len(conj))
	for _, f := range s.From {
		n, fsc := b.fromItem(f)
		if n == nil {
			return nil, nil
		}
		if node == nil {
			node, sc = n, fsc
			continue
		}
		if keys := commaJoinKeys(conj, used, sc, fsc); len(keys) > 0 {
			both := sc.concat(fsc)
			b.clause = "WHERE"
			on := b.conjunction(keys, both)
			b.clause = ""
			node = logical.NewJoin(logical.InnerJoin, node, n, on, Pos(f.Pos))
			sc = both
			continue
		}
		node = logical.NewJoin(logical.CrossJoin, node, n, nil, Pos(f.Pos))
		sc = sc.concat(fsc)
	}
	if slices.Contains(used, true) {
		var rest []lang.Expr
		for i, c := range conj {
			if !used[i] {
				rest = append(rest, c)
			}
		}
		where = joinAnd(rest)
	}
	if node != nil && len(s.From) > 0 {
		node, sc = b.decorrelate(s, node, sc)
		where = b.dropJoined(where)
	}
	if where != nil {
		b.clause = "WHERE"
		if pred := b.predicate(where, sc, "WHERE"); pred != nil {
			node = &logical.Filter{Input: node, Pred: pred, Pos: Pos(where.Position())}
		}
		b.clause = ""
	}
	// SELECT DISTINCT over window functions takes the distinct rows of the
	// projection (project does), not groups of the FROM rows.
	distinct := s.Distinct && !itemsWindow(s)
	aggregating := len(s.GroupBy) > 0 || s.Having != nil || distinct || itemsAggregate(s, b)
	for _, o := range order {
		aggregating = aggregating || hasAggregateCall(o.Expr, b.Funcs)
	}
	if aggregating {
		return b.aggregate(s, order, node, sc)
	}
	return b.project(s, order, node, sc)
}

// project binds the SELECT list of a non-aggregating block.
func (b *Binder) project(s *lang.Select, order []*lang.OrderItem, node logical.Node, sc *scope) (logical.Node, *scope) {
	p := &projection{}
	ws := b.newWinScope(s)
	b.wins = ws // selectBlock restores the enclosing block's
	b.clause = "SELECT"
	for _, it := range s.Items {
		if it.Star {
			for _, c := range b.star(it, sc) {
				p.add(c.e, c.name, c.qual)
			}
			continue
		}
		e := b.expr(it.Expr, sc, nil)
		if e == nil {
			continue
		}
		qual := ""
		if c, ok := e.(*expr.Column); ok && it.Alias == "" && c.Index < len(sc.cols) {
			// A later reference to s.camera still finds the column s.camera became.
			qual = sc.cols[c.Index].qual
		}
		p.item(it, e, false, qual)
	}
	b.clause = "ORDER BY"
	keys := b.orderKeys(order, p, func(e lang.Expr) expr.Expr { return b.expr(e, sc, nil) }, s.Distinct)
	b.clause = ""
	if p.visible == 0 {
		return nil, nil
	}
	node = b.placeWindows(ws, node, p.exprs, Pos(s.Pos))
	return p.build(node, keys, order, s.Distinct, Pos(s.Pos))
}

func itemName(it *lang.SelectItem, e expr.Expr, grouped bool) string {
	if it.Alias != "" {
		return it.Alias
	}
	if c, ok := it.Expr.(*lang.ColumnRef); ok {
		return c.Names[len(c.Names)-1]
	}
	if f, ok := it.Expr.(*lang.FuncCall); ok {
		return strings.ToLower(f.Name)
	}
	if c, ok := e.(*expr.Column); ok {
		return c.Name
	}
	if _, ok := it.Expr.(*lang.DistinctFromExpr); ok {
		// Bound as a CASE, which would make a long name.
		return lang.Print(it.Expr)
	}
	if n := strings.ToLower(e.String()); strings.Contains(n, "$") && hasSubquery(it.Expr) {
		// A decorrelated subquery binds to the rewrite's own columns
		// ($v, $n), which are no name for a user: name it as written,
		// on one line.
		one := strings.Join(strings.Fields(lang.Print(it.Expr)), " ")
		return strings.ReplaceAll(strings.ReplaceAll(one, "( ", "("), " )", ")")
	}
	if expr.HasAggregate(e) || grouped {
		// Over an Aggregate's output the bound form reads agg0, agg1...:
		// name the item as written instead.
		return lang.Print(it.Expr)
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
		if j.Kind == lang.JoinLeft || j.Kind == lang.JoinRight || j.Kind == lang.JoinFull {
			if j.On != nil {
				if _, wc := splitWindow(j.On); wc == nil {
					folded := *j
					var pushed []lang.Expr
					folded.On, pushed = nullSideOn(j.On, j.Kind, sc, rsc)
					if len(pushed) > 0 {
						c := joinAnd(pushed)
						if j.Kind == lang.JoinLeft {
							right = &logical.Filter{Input: right, Pred: b.predicate(c, rsc, "ON"), Pos: Pos(c.Position())}
						} else {
							node = &logical.Filter{Input: node, Pred: b.predicate(c, sc, "ON"), Pos: Pos(c.Position())}
						}
					}
					folded.On = foldOuterOn(folded.On, sc, rsc)
					j = &folded
				}
			}
		}
		switch j.Kind {
		case lang.JoinRight:
			if node = b.rightJoin(j, node, right, sc, rsc); node == nil {
				return nil, nil
			}
			sc = both
			continue
		case lang.JoinFull:
			if node = b.fullJoin(j, node, right, sc, rsc); node == nil {
				return nil, nil
			}
			sc = both
			continue
		}
		kind := logical.InnerJoin
		switch j.Kind {
		case lang.JoinLeft:
			kind = logical.LeftJoin
		case lang.JoinCross:
			kind = logical.CrossJoin
		}
		var on expr.Expr
		var win *logical.JoinWindow
		if j.On != nil {
			b.clause = "ON"
			if conj, wc := splitWindow(j.On); wc != nil {
				win = b.joinWindow(j, wc, node, right, sc, both)
				on = b.conjunction(conj, both)
			} else {
				on = b.predicate(j.On, both, "ON")
			}
			b.clause = ""
		} else if kind != logical.CrossJoin {
			b.errorf(j.Pos, ErrBind, "%s JOIN needs an ON condition", j.Kind)
		}
		node = logical.NewWindowJoin(kind, node, right, on, win, Pos(j.Pos))
		sc = both
	}
	return node, sc
}

func (b *Binder) tableRef(t *lang.TableRef) (logical.Node, *scope) {
	n, sc := b.relation(t)
	if n == nil || len(t.Columns) == 0 {
		return n, sc
	}
	// AS alias (c1, c2, ...): the first columns take these names.
	if len(t.Columns) > len(sc.cols) {
		b.errorf(t.Pos, ErrBind, "%s names %d columns, the relation has %d", t.Alias, len(t.Columns), len(sc.cols))
		return nil, nil
	}
	if t.Alias == "" && t.Subquery == nil {
		b.errorf(t.Pos, ErrBind, "a column list needs an alias: %s AS alias (%s)", t.Name, strings.Join(t.Columns, ", "))
		return nil, nil
	}
	out := &scope{cols: append([]column(nil), sc.cols...)}
	for i, name := range t.Columns {
		out.cols[i].name = name
	}
	return n, out
}

// relation binds what a FROM item names: a subquery, a CTE, a view, a
// stream or a table.
func (b *Binder) relation(t *lang.TableRef) (logical.Node, *scope) {
	if t.Subquery != nil {
		n, sc := b.query(t.Subquery, nil)
		if n == nil {
			return nil, nil
		}
		// Without an alias (Flink, DuckDB and Postgres 16 take one) the
		// subquery's columns are reached by their names alone: no qualifier
		// names them, so two such subqueries joined keep SQL's ambiguity
		// rule for a name both have.
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
	if n, sc, ok := b.cteRef(t, alias); ok {
		return n, sc
	}
	if v := b.Catalog.View(t.Name); v != nil {
		return b.viewRef(v, t, alias)
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
		for _, v := range b.Catalog.Views {
			have = append(have, v.Name)
		}
		b.unknown(t.Pos, "stream, table or view", t.Name, have)
		return nil, nil
	}
	// A table or file stream declared without columns (in a catalog YAML,
	// or where the CREATE could not read its file) takes its file's.
	if st != nil && len(st.Columns) == 0 {
		cols, err := b.Catalog.StreamColumns(st)
		if err != nil {
			b.errs = append(b.errs, &Error{Pos: Pos(t.Pos), Msg: err.Error(), Kind: ErrBind, Err: err})
			return nil, nil
		}
		c := *st
		c.Columns = cols
		st = &c
	}
	if tb != nil && len(tb.Columns) == 0 {
		cols, err := b.Catalog.TableColumns(tb)
		if err != nil {
			b.errs = append(b.errs, &Error{Pos: Pos(t.Pos), Msg: err.Error(), Kind: ErrBind, Err: err})
			return nil, nil
		}
		c := *tb
		c.Columns = cols
		tb = &c
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
	b.clause = "a model's arguments"
	defer func() { b.clause = "" }()
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
	if ok && b.CheckModelArgs != nil && len(args) > 0 {
		types := make([]arrow.DataType, len(args))
		for i, a := range args {
			types[i] = a.Type()
		}
		if i, err := b.CheckModelArgs(m, types); err != nil {
			pos := call.Pos
			if i >= 0 && i < len(call.Args) {
				pos = call.Args[i].Position()
			}
			b.errorf(pos, ErrBind, "%v", err)
			ok = false
		}
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
	n.Batch = b.callBatch(j.Lateral.Options)
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

func (b *Binder) predicate(e lang.Expr, sc *scope, clause string) expr.Expr {
	return b.predicate2(e, sc, nil, clause)
}

func (b *Binder) predicate2(e lang.Expr, sc *scope, ac *aggScope, clause string) expr.Expr {
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
	if len(os) > 0 {
		o.Pos = Pos(os[0].Position())
	}
	for _, x := range os {
		if name, ok := honoured(x); !ok {
			b.errorf(x.Position(), ErrNotSupported, "%s in WITH (...) is not supported yet: the planner would ignore it; remove it to run the query", name)
			continue
		}
		switch x := x.(type) {
		case *lang.AccuracyObjective:
			v := num(x.Min)
			o.Accuracy, o.AccuracyPos = &v, Pos(x.Pos)
			if x.DataAware {
				o.DataAware, o.DataAwarePos = true, Pos(x.Pos)
			}
		case *lang.ThroughputObjective:
			o.Throughput, o.ThroughputPos = num(x.Min)/x.Per.Seconds(), Pos(x.Pos)
		case *lang.LatencyObjective:
			o.LatencyMs = num(x.Max) * x.Unit.Seconds() * 1000
			if x.Percentile != nil {
				o.Percentile = num(x.Percentile)
			}
		case *lang.BudgetObjective:
			// The most accurate plan within nothing is no question.
			o.BudgetPos = Pos(x.Pos)
			if o.Budget = num(x.Max); o.Budget == 0 {
				b.errorf(x.Max.Pos, ErrBind, "BUDGET wants a positive cost per hour, got %s", x.Max.Value)
			}
		case *lang.PriorityObjective:
			o.Priority, o.PriorityPos = string(x.Class), Pos(x.Pos)
		}
	}
	// A real-time query is scheduled against its latency bound: without
	// one the scheduler has nothing to protect.
	if o.Priority == string(lang.PriorityRealtime) && o.LatencyMs == 0 {
		for _, x := range os {
			if p, ok := x.(*lang.PriorityObjective); ok {
				b.errorf(p.Pos, ErrBind, "PRIORITY REALTIME needs a latency bound: add LATENCY <= n MS to WITH (...)")
			}
		}
	}
	return o
}

// maxCallBatch bounds WITH (max_batch = n) of a model call.
const maxCallBatch = 4096

// callBatch reads a model call's WITH (max_batch = n, max_delay_ms = x),
// reporting a bad key or value at its position.
func (b *Binder) callBatch(opts []*lang.CallOption) logical.CallBatch {
	var cb logical.CallBatch
	seen := map[string]bool{}
	for _, o := range opts {
		key := strings.ToLower(o.Key)
		if seen[key] {
			b.errorf(o.Pos, ErrBind, "option %s is given twice", o.Key)
			continue
		}
		seen[key] = true
		n, isNum := o.Value.(*lang.NumberLit)
		var v float64
		var err error
		if isNum {
			v, err = strconv.ParseFloat(n.Value, 64)
		}
		switch key {
		case "max_batch":
			if !isNum || err != nil || v != math.Trunc(v) || v < 1 || v > maxCallBatch {
				b.errorf(o.Pos, ErrBind, "max_batch wants an integer from 1 to %d, got %s", maxCallBatch, lang.Print(o.Value))
				continue
			}
			cb.MaxBatch = int(v)
		case "max_delay_ms":
			if !isNum || err != nil || v < 0 || v > 3.6e6 {
				b.errorf(o.Pos, ErrBind, "max_delay_ms wants milliseconds from 0 to 3600000, got %s", lang.Print(o.Value))
				continue
			}
			// 0 means no waiting: cut whatever is queued (the batcher's
			// zero is its default, so the smallest delay stands for it).
			cb.MaxDelay = max(time.Duration(v*float64(time.Millisecond)), time.Nanosecond)
		default:
			b.errorf(o.Pos, ErrBind, "unknown model call option %q (want max_batch, max_delay_ms)", o.Key)
		}
	}
	return cb
}

// cteRef binds a FROM name that a WITH defines (the innermost of that name;
// a CTE's own name and later ones are not in scope in its body, so it cannot
// refer to itself). Each reference binds the CTE's query anew: a CTE is
// inlined, as DuckDB does unless it is materialized. ok is false when no CTE
// has the name.
func (b *Binder) cteRef(t *lang.TableRef, alias string) (logical.Node, *scope, bool) {
	i := len(b.ctes) - 1
	for i >= 0 && !strings.EqualFold(b.ctes[i].Name, t.Name) {
		i--
	}
	if i < 0 {
		return nil, nil, false
	}
	c := b.ctes[i]
	n, sc := b.inline(t, "WITH "+c.Name, func() (logical.Node, *scope) {
		saved := b.ctes
		b.ctes = b.ctes[:i:i]
		defer func() { b.ctes = saved }()
		return b.query(c.Query, nil)
	})
	if n == nil {
		return nil, nil, true
	}
	if len(c.Columns) > len(sc.cols) {
		b.errorf(c.Pos, ErrBind, "WITH %s names %d columns, its query has %d", c.Name, len(c.Columns), len(sc.cols))
		return nil, nil, true
	}
	out := &scope{}
	for j, col := range sc.cols {
		name := col.name
		if j < len(c.Columns) {
			name = c.Columns[j]
		}
		out.cols = append(out.cols, column{qual: alias, name: name, typ: col.typ})
	}
	return n, out, true
}

// MaxInlined bounds the operators that references to WITH names and views
// copy into one plan. Each reference binds the named query anew, so WITHs
// that each read the one before twice write 2^n operators in n lines (40
// lines took the coordinator past 4 GB before it planned anything). A plan
// written out by hand has at most about one operator per token, and a
// script at most lang.MaxTokens tokens: references may not make a plan
// larger than a script could write.
const MaxInlined = lang.MaxTokens

// inline binds what reference t names (what: "WITH c", "view v") with bind,
// adding the operators it copies into the plan to b.inlined. Once that
// passes MaxInlined nothing more is bound, so the work stays within the
// bound too, and the statement's own reference (the outermost, the one its
// author wrote there) is the error.
func (b *Binder) inline(t *lang.TableRef, what string, bind func() (logical.Node, *scope)) (logical.Node, *scope) {
	if b.inlined > MaxInlined {
		return nil, nil
	}
	before := b.inlined
	b.inlining++
	n, sc := bind()
	b.inlining--
	if b.inlined > MaxInlined && b.inlining == 0 {
		b.errorf(t.Pos, ErrBind, "%s makes the plan larger than %d operators: each reference copies the query it names, and references to references multiply; read it fewer times", what, MaxInlined)
		return nil, nil
	}
	if n == nil {
		return nil, nil
	}
	// Nested references were counted inside; n includes them.
	size := 0
	logical.Walk(n, func(logical.Node) bool { size++; return true })
	b.inlined = before + size
	if b.inlined > MaxInlined && b.inlining == 0 {
		b.errorf(t.Pos, ErrBind, "%s makes the plan larger than %d operators (%d): each reference copies the query it names, and references to references multiply; read it fewer times", what, MaxInlined, b.inlined)
		return nil, nil
	}
	return n, sc
}

// viewRef binds a FROM name that is a view: its query, bound anew here, as
// a subquery. The view sees the catalog, not the CTEs of the query that
// reads it; a view that reads itself (through others) is an error.
func (b *Binder) viewRef(v *catalog.View, t *lang.TableRef, alias string) (logical.Node, *scope) {
	key := strings.ToLower(v.Name)
	if b.inView[key] {
		b.errorf(t.Pos, ErrBind, "view %s reads itself", v.Name)
		return nil, nil
	}
	q := v.Query
	if q == nil {
		script, err := lang.Parse(v.Name+".sql", v.SQL)
		if err != nil || len(script.Statements) != 1 {
			b.errorf(t.Pos, ErrBind, "view %s: its query does not parse: %v", v.Name, err)
			return nil, nil
		}
		if q, _ = script.Statements[0].(*lang.Query); q == nil {
			b.errorf(t.Pos, ErrBind, "view %s: its text is not a query", v.Name)
			return nil, nil
		}
	}
	if b.inView == nil {
		b.inView = map[string]bool{}
	}
	b.inView[key] = true
	n, sc := b.inline(t, "view "+v.Name, func() (logical.Node, *scope) {
		saved := b.ctes
		b.ctes = nil
		defer func() { b.ctes = saved }()
		return b.query(q, nil)
	})
	delete(b.inView, key)
	if n == nil {
		return nil, nil
	}
	if len(v.Columns) > len(sc.cols) {
		b.errorf(t.Pos, ErrBind, "view %s names %d columns, its query has %d", v.Name, len(v.Columns), len(sc.cols))
		return nil, nil
	}
	out := &scope{}
	for j, col := range sc.cols {
		name := col.name
		if j < len(v.Columns) {
			name = v.Columns[j]
		}
		out.cols = append(out.cols, column{qual: alias, name: name, typ: col.typ})
	}
	return n, out
}

// rightJoin binds l RIGHT JOIN r ON c as r LEFT JOIN l ON c, with a
// projection that puts the columns back in the written order (l's, then
// r's), so that the rest of the query sees the join as written.
func (b *Binder) rightJoin(j *lang.Join, left, right logical.Node, lsc, rsc *scope) logical.Node {
	if j.On == nil {
		b.errorf(j.Pos, ErrBind, "RIGHT JOIN needs an ON condition")
		return nil
	}
	if _, wc := splitWindow(j.On); wc != nil {
		b.errorf(j.Pos, ErrNotSupported, "a windowed RIGHT JOIN is not supported yet: swap the inputs and use LEFT JOIN")
		return nil
	}
	b.clause = "ON"
	on := b.predicate(j.On, rsc.concat(lsc), "ON")
	b.clause = ""
	if on == nil {
		return nil
	}
	jn := logical.NewJoin(logical.LeftJoin, right, left, on, Pos(j.Pos))
	nl, nr := len(lsc.cols), len(rsc.cols)
	exprs := make([]expr.Expr, 0, nl+nr)
	names := make([]string, 0, nl+nr)
	for _, i := range append(seq(nr, nr+nl), seq(0, nr)...) {
		f := jn.Schema().Field(i)
		exprs = append(exprs, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})
		names = append(names, f.Name)
	}
	return logical.NewProject(jn, exprs, names, Pos(j.Pos))
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// castColumns is n with each column cast to types[i] where its type differs
// (a UNION ALL branch brought to the types of all branches).
func castColumns(n logical.Node, types []arrow.DataType) logical.Node {
	fs := n.Schema().Fields()
	if len(fs) != len(types) {
		return n
	}
	same := true
	exprs := make([]expr.Expr, len(fs))
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
		exprs[i] = &expr.Column{Index: i, Name: f.Name, DataType: f.Type}
		if !arrow.TypeEqual(f.Type, types[i]) && !expr.IsNullType(types[i]) {
			exprs[i] = &expr.Cast{Expr: exprs[i], To: types[i]}
			same = false
		}
	}
	if same {
		return n
	}
	return logical.NewProject(n, exprs, names, logical.Pos{})
}
