package rewrite

import (
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// PruneColumnsID drops columns no later operator reads.
const PruneColumnsID RuleID = "prune_columns"

// PruneColumns narrows scans to the columns the query reads and puts a
// projection on top of every ML operator whose output carries columns nobody
// above reads (an image a model has consumed must not ride on to the next
// tier). Column references are renumbered throughout.
func PruneColumns(n logical.Node) logical.Node {
	all := make([]bool, len(n.Schema().Fields()))
	for i := range all {
		all[i] = true
	}
	out, _ := prune(n, all)
	return out
}

// prune rebuilds n keeping at least the required output columns; it returns
// the new node and, per old output column, its new index (-1: dropped).
func prune(n logical.Node, req []bool) (logical.Node, []int) {
	switch x := n.(type) {
	case *logical.Scan:
		var cols []int
		for i, c := range x.Columns {
			if req[i] {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			// Something must flow: keep the first column (row count).
			cols = []int{x.Columns[0]}
			req = append([]bool{true}, req[1:]...)
		}
		s, err := logical.NewScan(x.Stream, x.Table, x.Alias, cols, x.Pos)
		if err != nil {
			return n, identity(len(req))
		}
		return s, compact(req)
	case *logical.Filter:
		in := union(req, expr.Columns(x.Pred))
		child, m := prune(x.Input, in)
		return &logical.Filter{Input: child, Pred: remap(x.Pred, m), Pos: x.Pos}, m
	case *logical.Project:
		var need []int
		var keep []int
		for i, e := range x.Exprs {
			if req[i] {
				keep = append(keep, i)
				need = append(need, expr.Columns(e)...)
			}
		}
		if len(keep) == 0 {
			keep = []int{0}
			need = expr.Columns(x.Exprs[0])
		}
		child, m := prune(x.Input, union(make([]bool, len(x.Input.Schema().Fields())), need))
		var exprs []expr.Expr
		var names []string
		out := make([]int, len(x.Exprs))
		for i := range out {
			out[i] = -1
		}
		for j, i := range keep {
			exprs = append(exprs, remap(x.Exprs[i], m))
			names = append(names, x.Names[i])
			out[i] = j
		}
		if inner, ok := child.(*logical.Project); ok && mergeable(exprs, inner.Exprs) {
			// Merge with a projection below (pruning puts one on top of
			// every model): one Project, not two.
			for i, e := range exprs {
				exprs[i] = substitute(e, inner.Exprs)
			}
			child = inner.Input
		}
		return logical.NewProject(child, exprs, names, x.Pos), out
	case *logical.LateralModel:
		nin := len(x.Input.Schema().Fields())
		in := make([]bool, nin)
		copy(in, req[:nin])
		var argCols []int
		for _, a := range x.Args {
			argCols = append(argCols, expr.Columns(a)...)
		}
		in = union(in, argCols)
		child, m := prune(x.Input, in)
		args := make([]expr.Expr, len(x.Args))
		for i, a := range x.Args {
			args[i] = remap(a, m)
		}
		lm := logical.NewLateralModel(child, x.Model, x.Name, args, x.Alias, x.Out, x.Pos)
		lm.Batch = x.Batch
		// Map of the model's full output, then project away what nobody
		// above reads (the model's inputs, typically).
		nchild := len(child.Schema().Fields())
		full := make([]int, len(req))
		for i := 0; i < nin; i++ {
			full[i] = m[i]
		}
		for i := nin; i < len(req); i++ {
			full[i] = nchild + i - nin
		}
		var exprs []expr.Expr
		var names []string
		out := make([]int, len(req))
		extra := false
		for i := range req {
			out[i] = -1
			if full[i] < 0 {
				continue
			}
			if !req[i] {
				extra = true
				continue
			}
			f := lm.Schema().Field(full[i])
			out[i] = len(exprs)
			exprs = append(exprs, &expr.Column{Index: full[i], Name: f.Name, DataType: f.Type})
			names = append(names, f.Name)
		}
		if !extra || len(exprs) == 0 {
			return lm, full
		}
		return logical.NewProject(lm, exprs, names, x.Pos), out
	case *logical.Join:
		if x.Kind.LeftOnly() {
			return pruneLeftOnly(x, req)
		}
		nl := len(x.Left.Schema().Fields())
		all := append([]bool(nil), req...)
		if x.On != nil {
			all = union(all, expr.Columns(x.On))
		}
		// A windowed join reads its event times even when nothing above does.
		if x.Window != nil {
			all = union(all, append(expr.Columns(x.Window.LeftTime), expr.Columns(x.Window.RightTime)...))
		}
		left, ml := narrowFilter(prune(x.Left, all[:nl]))(all[:nl])
		right, mr := narrowFilter(prune(x.Right, all[nl:]))(all[nl:])
		nlNew := len(left.Schema().Fields())
		m := make([]int, len(req))
		for i := range m {
			if i < nl {
				m[i] = ml[i]
			} else if mr[i-nl] >= 0 {
				m[i] = nlNew + mr[i-nl]
			} else {
				m[i] = -1
			}
		}
		var on expr.Expr
		if x.On != nil {
			on = remap(x.On, m)
		}
		if x.Window != nil {
			w := *x.Window
			w.LeftTime = remap(w.LeftTime, m)
			w.RightTime = remap(w.RightTime, m)
			return logical.NewWindowJoin(x.Kind, left, right, on, &w, x.Pos), m
		}
		return logical.NewJoin(x.Kind, left, right, on, x.Pos), m
	case *logical.Aggregate:
		var need []int
		for _, g := range x.Group {
			need = append(need, expr.Columns(g)...)
		}
		for _, a := range x.Aggs {
			need = append(need, expr.Columns(a)...)
		}
		if x.Window != nil {
			need = append(need, expr.Columns(x.Window.Time)...)
		}
		child, m := prune(x.Input, union(make([]bool, len(x.Input.Schema().Fields())), need))
		groups := make([]expr.Expr, len(x.Group))
		for i, g := range x.Group {
			groups[i] = remap(g, m)
		}
		aggs := make([]*expr.Aggregate, len(x.Aggs))
		for i, a := range x.Aggs {
			aggs[i] = remap(a, m).(*expr.Aggregate)
		}
		var w *logical.Window
		if x.Window != nil {
			c := *x.Window
			c.Time = remap(c.Time, m)
			w = &c
		}
		return logical.NewAggregate(child, groups, x.GroupNames, w, aggs, x.AggNames, x.Pos), identity(len(req))
	case *logical.Sort:
		var need []int
		for _, k := range x.Keys {
			need = append(need, expr.Columns(k.Expr)...)
		}
		child, m := prune(x.Input, union(req, need))
		keys := make([]logical.SortKey, len(x.Keys))
		for i, k := range x.Keys {
			keys[i] = logical.SortKey{Expr: remap(k.Expr, m), Desc: k.Desc}
		}
		return &logical.Sort{Input: child, Keys: keys, Pos: x.Pos}, m
	case *logical.Limit:
		child, m := prune(x.Input, req)
		return &logical.Limit{Input: child, N: x.N, Offset: x.Offset, Pos: x.Pos}, m
	case *logical.Sink:
		// The result keeps every column it was asked for.
		all := make([]bool, len(x.Input.Schema().Fields()))
		for i := range all {
			all[i] = true
		}
		child, m := prune(x.Input, all)
		return &logical.Sink{Input: child, Sink: x.Sink, Pos: x.Pos}, m
	}
	// Union and anything else: keep every column of every input, prune below.
	ch := n.Children()
	nc := make([]logical.Node, len(ch))
	for i, c := range ch {
		all := make([]bool, len(c.Schema().Fields()))
		for j := range all {
			all[j] = true
		}
		nc[i], _ = prune(c, all)
	}
	if len(nc) > 0 {
		n = n.WithChildren(nc...)
	}
	return n, identity(len(req))
}

func union(req []bool, cols []int) []bool {
	out := append([]bool(nil), req...)
	for _, c := range cols {
		if c < len(out) {
			out[c] = true
		}
	}
	return out
}

func compact(req []bool) []int {
	m := make([]int, len(req))
	j := 0
	for i, r := range req {
		if r {
			m[i] = j
			j++
		} else {
			m[i] = -1
		}
	}
	return m
}

func identity(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

func remap(e expr.Expr, m []int) expr.Expr {
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok && c.Index < len(m) && m[c.Index] >= 0 && m[c.Index] != c.Index {
			return &expr.Column{Index: m[c.Index], Name: c.Name, DataType: c.DataType}
		}
		return x
	})
}

// mergeable reports whether outer projection expressions can absorb the
// inner ones without computing anything twice: merging copies an inner
// expression into every reference to it, so one that computes (not a column
// or a constant) may be read once at most. Copies of copies multiply:
// projections that each read the one below twice (x + x AS x, 40 deep)
// merged into one expression of 2^40 terms, which hung the planner.
func mergeable(outer, inner []expr.Expr) bool {
	reads := make([]int, len(inner))
	for _, e := range outer {
		expr.Walk(e, func(x expr.Expr) bool {
			if c, ok := x.(*expr.Column); ok && c.Index < len(reads) {
				reads[c.Index]++
			}
			return true
		})
	}
	for i, n := range reads {
		if n < 2 {
			continue
		}
		switch inner[i].(type) {
		case *expr.Column, *expr.Literal:
		default:
			return false
		}
	}
	return true
}

// substitute replaces column references with the expressions they name.
func substitute(e expr.Expr, by []expr.Expr) expr.Expr {
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok && c.Index < len(by) {
			return by[c.Index]
		}
		return x
	})
}

// pruneLeftOnly prunes a semi, anti or mark join: its output is the left's
// columns (and the mark), its condition reads both sides.
func pruneLeftOnly(x *logical.Join, req []bool) (logical.Node, []int) {
	nl := len(x.Left.Schema().Fields())
	nr := len(x.Right.Schema().Fields())
	all := make([]bool, nl+nr)
	copy(all, req[:nl])
	if x.On != nil {
		all = union(all, expr.Columns(x.On))
	}
	left, ml := narrowFilter(prune(x.Left, all[:nl]))(all[:nl])
	right, mr := narrowFilter(prune(x.Right, all[nl:]))(all[nl:])
	nlNew := len(left.Schema().Fields())
	m := make([]int, nl+nr) // over left ++ right, for the condition
	for i := range m {
		if i < nl {
			m[i] = ml[i]
		} else if mr[i-nl] >= 0 {
			m[i] = nlNew + mr[i-nl]
		} else {
			m[i] = -1
		}
	}
	c := *x
	c.On = nil
	if x.On != nil {
		c.On = remap(x.On, m)
	}
	out := append([]int(nil), ml...)
	if x.Kind == logical.MarkJoin {
		out = append(out, nlNew)
	}
	return c.WithChildren(left, right), out
}

// narrowFilter puts a projection of the required columns on a join's input
// that is a filter passing on columns only its predicate reads (o_comment
// under Q13's NOT LIKE, p_name under Q9's LIKE): the join would otherwise
// copy them into every output row for nobody. The executor gathers only
// the kept columns of the filter's passing rows (a projection of columns
// over a filter runs as one operator). Curried: prune's two results, then
// what was required of them.
func narrowFilter(n logical.Node, m []int) func(req []bool) (logical.Node, []int) {
	return func(req []bool) (logical.Node, []int) {
		if _, ok := n.(*logical.Filter); !ok {
			return n, m
		}
		fields := n.Schema().Fields()
		keep := make([]bool, len(fields))
		for old, i := range m {
			if i >= 0 && old < len(req) && req[old] {
				keep[i] = true
			}
		}
		var exprs []expr.Expr
		var names []string
		at := make([]int, len(fields))
		for i, f := range fields {
			at[i] = -1
			if keep[i] {
				at[i] = len(exprs)
				exprs = append(exprs, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})
				names = append(names, f.Name)
			}
		}
		if len(exprs) == len(fields) || len(exprs) == 0 {
			return n, m
		}
		out := make([]int, len(m))
		for old, i := range m {
			out[old] = -1
			if i >= 0 {
				out[old] = at[i]
			}
		}
		return logical.NewProject(n, exprs, names, n.Position()), out
	}
}
