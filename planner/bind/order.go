package bind

import (
	"fmt"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// projection is a SELECT list being built: the visible items, then hidden
// ones that only ORDER BY reads (dropped by a projection above the Sort).
type projection struct {
	exprs   []expr.Expr
	names   []string
	quals   []string
	visible int
	hidden  int
	// calls are the unaliased function-call items named after their
	// function, by index, with the call as written.
	calls map[int]string
}

// item adds a select item under its SQL name.
func (p *projection) item(it *lang.SelectItem, e expr.Expr, grouped bool, qual string) {
	if _, ok := it.Expr.(*lang.FuncCall); ok && it.Alias == "" {
		if p.calls == nil {
			p.calls = map[int]string{}
		}
		p.calls[len(p.exprs)] = lang.Print(it.Expr)
	}
	p.add(e, itemName(it, e, grouped), qual)
}

// distinctNames names calls that share a function name (count(*),
// count(DISTINCT x)) as written, so that the result's columns can be told
// apart; a call whose function is used once keeps the short name.
func (p *projection) distinctNames() {
	seen := map[string]int{}
	for _, n := range p.names[:p.visible] {
		seen[strings.ToLower(n)]++
	}
	for i, text := range p.calls {
		if seen[strings.ToLower(p.names[i])] > 1 {
			p.names[i] = text
		}
	}
}

func (p *projection) add(e expr.Expr, name, qual string) {
	p.exprs = append(p.exprs, e)
	p.names = append(p.names, name)
	p.quals = append(p.quals, qual)
	p.visible++
}

func (p *projection) column(i int) *expr.Column {
	return &expr.Column{Index: i, Name: p.names[i], DataType: p.exprs[i].Type()}
}

// orderKeys binds ORDER BY for one SELECT block (SQL's rules): an ordinal or
// an output name (alias) is that column of the result; anything else is bound
// like a select item by bind, and is either equal to an item or computed as
// a hidden column (not for DISTINCT, whose rows have no such value).
func (b *Binder) orderKeys(order []*lang.OrderItem, p *projection, bind func(lang.Expr) expr.Expr, distinct bool) []logical.SortKey {
	// Output names are final before ORDER BY resolves names against them.
	p.distinctNames()
	var keys []logical.SortKey
	for _, o := range order {
		if i, ok := b.outputColumn(o.Expr, p.names[:p.visible]); ok {
			if i >= 0 {
				keys = append(keys, nullOrder(o, p.column(i))...)
			}
			continue
		}
		e := bind(o.Expr)
		if e == nil {
			continue
		}
		k := exprKey(e)
		i := 0
		for i < len(p.exprs) && exprKey(p.exprs[i]) != k {
			i++
		}
		if i == len(p.exprs) {
			if distinct {
				b.errorf(o.Expr.Position(), ErrBind, "with SELECT DISTINCT, ORDER BY %s must appear in the select list", e)
				continue
			}
			p.exprs = append(p.exprs, e)
			p.names = append(p.names, fmt.Sprintf("order%d", p.hidden))
			p.quals = append(p.quals, "")
			p.hidden++
		}
		keys = append(keys, nullOrder(o, p.column(i))...)
	}
	return keys
}

// outputColumn resolves an ORDER BY ordinal or bare output name. ok is false
// when e is neither; i is -1 when it was one but is wrong (reported).
func (b *Binder) outputColumn(e lang.Expr, names []string) (i int, ok bool) {
	switch x := e.(type) {
	case *lang.NumberLit:
		v, err := x.Int64()
		if err != nil {
			return 0, false
		}
		if v < 1 || v > int64(len(names)) {
			b.errorf(x.Pos, ErrBind, "ORDER BY position %d is not in the select list (1 to %d)", v, len(names))
			return -1, true
		}
		return int(v - 1), true
	case *lang.ColumnRef:
		if len(x.Names) != 1 {
			return 0, false
		}
		found := -1
		for j, n := range names {
			if strings.EqualFold(n, x.Names[0]) {
				if found >= 0 {
					// Two outputs of that name: let the input scope decide,
					// or report the ambiguity.
					return 0, false
				}
				found = j
			}
		}
		return found, found >= 0
	}
	return 0, false
}

// build puts the projection (and DISTINCT, then ORDER BY) over in and returns
// the result with its scope.
func (p *projection) build(in logical.Node, keys []logical.SortKey, order []*lang.OrderItem, distinct bool, pos logical.Pos) (logical.Node, *scope) {
	var n logical.Node = logical.NewProject(in, p.exprs, p.names, pos)
	if distinct {
		groups := make([]expr.Expr, p.visible)
		for i := range groups {
			groups[i] = p.column(i)
		}
		n = logical.NewAggregate(n, groups, p.names[:p.visible], nil, nil, nil, pos)
	}
	if len(keys) > 0 {
		n = &logical.Sort{Input: n, Keys: keys, Pos: Pos(order[0].Pos)}
	}
	if p.hidden > 0 {
		cols := make([]expr.Expr, p.visible)
		for i := range cols {
			cols[i] = p.column(i)
		}
		n = logical.NewProject(n, cols, p.names[:p.visible], pos)
	}
	out := &scope{}
	for i := 0; i < p.visible; i++ {
		out.cols = append(out.cols, column{qual: p.quals[i], name: p.names[i], typ: p.exprs[i].Type()})
	}
	return n, out
}

// sortOutput orders the result of a UNION ALL: by ordinal, output name, or an
// expression over the output columns.
func (b *Binder) sortOutput(n logical.Node, sc *scope, order []*lang.OrderItem) logical.Node {
	b.clause = "ORDER BY"
	defer func() { b.clause = "" }()
	var keys []logical.SortKey
	for _, o := range order {
		if i, ok := b.outputColumn(o.Expr, sc.names()); ok {
			if i >= 0 {
				keys = append(keys, nullOrder(o, &expr.Column{Index: i, Name: sc.cols[i].name, DataType: sc.cols[i].typ})...)
			}
			continue
		}
		if e := b.expr(o.Expr, sc, nil); e != nil {
			keys = append(keys, nullOrder(o, e)...)
		}
	}
	if len(keys) == 0 {
		return n
	}
	return &logical.Sort{Input: n, Keys: keys, Pos: Pos(order[0].Pos)}
}

// starColumn is one column a SELECT * or t.* expands to.
type starColumn struct {
	e    *expr.Column
	name string
	qual string
}

func (b *Binder) star(it *lang.SelectItem, sc *scope) []starColumn {
	var out []starColumn
	for i, c := range sc.cols {
		if c.hidden || it.Qualifier != "" && !strings.EqualFold(c.qual, it.Qualifier) {
			continue
		}
		out = append(out, starColumn{e: &expr.Column{Index: i, Name: c.name, DataType: c.typ}, name: c.name, qual: c.qual})
	}
	if len(out) == 0 && it.Qualifier != "" {
		b.unknown(it.Pos, "relation", it.Qualifier, nil)
	}
	return out
}

// nullOrder is the sort keys of one ORDER BY item. The sort operators put
// NULL after every value, so last ascending and first descending; where the
// item wants otherwise (NULLS FIRST ascending, and DESC, whose default is
// NULLS LAST as in DuckDB) a key "e IS NULL" goes first to place them.
func nullOrder(o *lang.OrderItem, e expr.Expr) []logical.SortKey {
	key := logical.SortKey{Expr: e, Desc: o.Desc}
	nullsFirst := o.Nulls == "FIRST"
	if nullsFirst == o.Desc {
		return []logical.SortKey{key}
	}
	if l, ok := e.(*expr.Literal); ok && l.Value != nil {
		return []logical.SortKey{key}
	}
	return []logical.SortKey{{Expr: &expr.IsNull{Expr: e}, Desc: nullsFirst}, key}
}
