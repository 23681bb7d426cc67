package bind

import (
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// fullJoin binds l FULL JOIN r ON c as DuckDB answers it: every pair that
// matches, every left row that matches none (right columns NULL), and every
// right row that matches none (left columns NULL). It is built from the LEFT
// JOIN the executor has, in two branches of a UNION ALL:
//
//	l LEFT JOIN r ON c
//	UNION ALL
//	the rows of (r LEFT JOIN (l, TRUE AS m) ON c) where m IS NULL
//
// the second keeping only right rows with no partner, each once. Both sides
// are read twice, so both must be tables: a stream has no end at which its
// unmatched rows are known (a windowed FULL JOIN would need per-window
// state the join does not keep), and is refused at the JOIN.
func (b *Binder) fullJoin(j *lang.Join, left, right logical.Node, lsc, rsc *scope) logical.Node {
	if j.On == nil {
		b.errorf(j.Pos, ErrBind, "FULL JOIN needs an ON condition")
		return nil
	}
	for _, n := range []logical.Node{left, right} {
		if s := streamOf(n); s != "" {
			b.errorf(j.Pos, ErrNotSupported, "FULL JOIN reads tables only, not stream %s: a stream's unmatched rows are never final (use LEFT JOIN, or a windowed join)", s)
			return nil
		}
	}
	if _, wc := splitWindow(j.On); wc != nil {
		b.errorf(j.Pos, ErrNotSupported, "a windowed FULL JOIN is not supported")
		return nil
	}
	b.clause = "ON"
	on := b.predicate(j.On, lsc.concat(rsc), "ON")
	var swapped expr.Expr
	if on != nil {
		swapped = b.predicate(j.On, rsc.concat(lsc), "ON")
	}
	b.clause = ""
	if on == nil || swapped == nil {
		return nil
	}
	nl, nr := len(lsc.cols), len(rsc.cols)
	pos := Pos(j.Pos)
	both := logical.NewJoin(logical.LeftJoin, left, right, on, pos)

	// The left side with a marker that is NULL only where the LEFT JOIN of
	// the right side found no partner.
	lexprs, lnames := columnsOf(left, 0, nl)
	lm := logical.NewProject(left, append(lexprs, &expr.Literal{Value: true, DataType: expr.Bool}), append(lnames, "$matched"), pos)
	rl := logical.NewJoin(logical.LeftJoin, right, lm, swapped, pos)
	marker := &expr.Column{Index: nr + nl, Name: "$matched", DataType: expr.Bool}
	unmatched := &logical.Filter{Input: rl, Pred: &expr.IsNull{Expr: marker}, Pos: pos}

	// Both branches in the order left columns then right ones, every column
	// nullable (NewProject), so that the UNION ALL's schemas agree.
	e1, n1 := columnsOf(both, 0, nl+nr)
	var e2 []expr.Expr
	var n2 []string
	for i := 0; i < nl; i++ {
		f := both.Schema().Field(i)
		e2 = append(e2, expr.CastTo(&expr.Literal{Value: nil, DataType: expr.Null}, f.Type))
		n2 = append(n2, f.Name)
	}
	re, rn := columnsOf(unmatched, 0, nr)
	e2, n2 = append(e2, re...), append(n2, rn...)
	return &logical.Union{Inputs: []logical.Node{
		logical.NewProject(both, e1, n1, pos),
		logical.NewProject(unmatched, e2, n2, pos),
	}, Pos: pos}
}

// columnsOf reads columns [from, to) of n as they are.
func columnsOf(n logical.Node, from, to int) ([]expr.Expr, []string) {
	var exprs []expr.Expr
	var names []string
	for i := from; i < to; i++ {
		f := n.Schema().Field(i)
		exprs = append(exprs, &expr.Column{Index: i, Name: f.Name, DataType: f.Type})
		names = append(names, f.Name)
	}
	return exprs, names
}

// streamOf names the first stream n reads, "" when it reads tables only.
func streamOf(n logical.Node) string {
	var stream string
	logical.Walk(n, func(n logical.Node) bool {
		if s, ok := n.(*logical.Scan); ok && s.Stream != nil && stream == "" {
			stream = s.Stream.Name
		}
		return stream == ""
	})
	return stream
}
