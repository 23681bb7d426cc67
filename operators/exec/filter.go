package exec

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// filterInput builds what a filter reads and compiles its predicate,
// noting what the predicate tells the operators below it (noteFilter).
func (b *builder) filterInput(n *logical.Filter) (int, *arrow.Schema, *eval.Predicate, error) {
	b.noteFilter(n)
	in, schema, err := b.node(n.Input)
	if err != nil {
		return 0, nil, nil, err
	}
	pred, err := eval.NewPredicate(n.Pred, schema, b.opts.Functions)
	if err != nil {
		if p := n.Position(); p.Line > 0 && !positioned.MatchString(err.Error()) {
			err = fmt.Errorf("%s: %w", p, err)
		}
		return 0, nil, nil, err
	}
	return in, schema, pred, nil
}

// noteFilter notes what filter n tells the operators right below it,
// before they are built, whichever way n itself is built (one operator,
// per-core instances, fused into an aggregation): the bounds a scan
// prunes row groups by, the filter over a join, a limit on a rank.
func (b *builder) noteFilter(n *logical.Filter) {
	if s, ok := n.Input.(*logical.Scan); ok {
		b.noteBounds(s, n.Pred)
	}
	if j, ok := n.Input.(*logical.Join); ok {
		b.joinFilters[j] = n.Pred
	}
	if wf, rn, ok := rankBelow(n.Input); ok {
		if limit, ok := rankBound(n.Pred, rn); ok {
			if old, seen := b.rankLimits[wf]; !seen || limit < old {
				b.rankLimits[wf] = limit
			}
		}
	}
}

// project adds n's projection after in, whose rows have schema.
func (b *builder) project(n *logical.Project, in int, schema *arrow.Schema) (int, *arrow.Schema, error) {
	exprs, names := n.Exprs, n.Names
	if rel.IsChangelog(schema) {
		// A changelog's rows keep their op column.
		last := schema.NumFields() - 1
		exprs = append(append([]expr.Expr(nil), exprs...), &expr.Column{Index: last, Name: schema.Field(last).Name, DataType: schema.Field(last).Type})
		names = append(append([]string(nil), names...), schema.Field(last).Name)
	}
	proj, err := eval.NewProjection(exprs, names, schema, b.opts.Functions)
	if err != nil {
		if p := n.Position(); p.Line > 0 && !positioned.MatchString(err.Error()) {
			err = fmt.Errorf("%s: %w", p, err)
		}
		return 0, nil, err
	}
	op := b.add("project", 1, func() (dataflow.Operator, error) { return rel.NewProject(proj), nil })
	b.g.Connect(in, 0, op, 0)
	return op, proj.Schema(), nil
}

// filterColumns builds columns of a filter's rows (n over f): the filter
// gathers only those columns of its passing rows (rel.FilterProject), and
// the projection after it passes them on as they are. The graph keeps an
// operator per plan node, in the plan's order (runtime/deploy pairs them).
func (b *builder) filterColumns(n *logical.Project, f *logical.Filter) (int, *arrow.Schema, error) {
	in, schema, pred, err := b.filterInput(f)
	if err != nil {
		return 0, nil, err
	}
	if rel.IsChangelog(schema) {
		op := b.add("filter", 1, func() (dataflow.Operator, error) { return rel.NewFilter(pred, nil), nil })
		b.g.Connect(in, 0, op, 0)
		return b.project(n, op, schema)
	}
	fns := b.opts.Functions
	proj, err := eval.NewProjection(n.Exprs, n.Names, schema, fns)
	if err != nil {
		if p := n.Position(); p.Line > 0 && !positioned.MatchString(err.Error()) {
			err = fmt.Errorf("%s: %w", p, err)
		}
		return 0, nil, err
	}
	op := b.add("filter", 1, func() (dataflow.Operator, error) { return rel.NewFilterProject(pred, proj, nil), nil })
	b.g.Connect(in, 0, op, 0)
	out := proj.Schema()
	same := make([]expr.Expr, out.NumFields())
	names := make([]string, out.NumFields())
	for i, fd := range out.Fields() {
		same[i], names[i] = &expr.Column{Index: i, Name: fd.Name, DataType: fd.Type}, fd.Name
	}
	pass, err := eval.NewProjection(same, names, out, fns)
	if err != nil {
		return 0, nil, err
	}
	next := b.add("project", 1, func() (dataflow.Operator, error) { return rel.NewProject(pass), nil })
	b.g.Connect(op, 0, next, 0)
	return next, pass.Schema(), nil
}

// columnsOnly: every expression is a column reference.
func columnsOnly(exprs []expr.Expr) bool {
	for _, e := range exprs {
		if _, ok := e.(*expr.Column); !ok {
			return false
		}
	}
	return len(exprs) > 0
}
