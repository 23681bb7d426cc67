package eval

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// Predicate is a compiled WHERE condition: rows where it is TRUE pass; FALSE and
// NULL rows are dropped.
type Predicate struct{ ev *Evaluator }

// NewPredicate compiles a boolean expression.
func NewPredicate(e expr.Expr, in *arrow.Schema, fns *functions.Registry) (*Predicate, error) {
	if e.Type().ID() != arrow.BOOL {
		return nil, fmt.Errorf("%w: predicate %s is %s, want BOOLEAN", ErrCompile, e, expr.TypeName(e.Type()))
	}
	ev, err := Compile(e, in, fns)
	if err != nil {
		return nil, err
	}
	return &Predicate{ev: ev}, nil
}

// Filter returns the rows of rec that pass (rec itself, retained, when all do;
// nil when none do). rec is not released.
func (p *Predicate) Filter(c *functions.Ctx, rec arrow.Record) (arrow.Record, error) {
	d, err := p.ev.EvalDatum(c, rec)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if sd, ok := d.(*compute.ScalarDatum); ok {
		if b, ok := sd.Value.(*scalar.Boolean); ok && b.Valid && b.Value {
			rec.Retain()
			return rec, nil
		}
		return nil, nil
	}
	mask := d.(*compute.ArrayDatum).MakeArray().(*array.Boolean)
	defer mask.Release()
	if mask.NullN() == 0 {
		switch bitutil.CountSetBits(mask.Data().Buffers()[1].Bytes(), mask.Data().Offset(), mask.Len()) {
		case mask.Len():
			rec.Retain()
			return rec, nil
		case 0:
			return nil, nil
		}
	}
	out, err := compute.FilterRecordBatch(c.Context(), rec, mask, &compute.FilterOptions{NullSelection: compute.SelectionDropNulls})
	if err != nil {
		return nil, err
	}
	if out.NumRows() == 0 {
		out.Release()
		return nil, nil
	}
	return out, nil
}

// Projection computes a list of expressions into a new record. Bare column
// references are passed through without copying.
type Projection struct {
	evals  []*Evaluator
	cols   []int // input column for pass-through outputs, -1 for computed
	schema *arrow.Schema
}

// NewProjection compiles exprs, naming the outputs names.
func NewProjection(exprs []expr.Expr, names []string, in *arrow.Schema, fns *functions.Registry) (*Projection, error) {
	if len(names) != len(exprs) {
		return nil, fmt.Errorf("%w: %d names for %d expressions", ErrCompile, len(names), len(exprs))
	}
	p := &Projection{}
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		ev, err := Compile(e, in, fns)
		if err != nil {
			return nil, err
		}
		p.evals = append(p.evals, ev)
		col := -1
		if c, ok := e.(*expr.Column); ok {
			col = c.Index
		}
		p.cols = append(p.cols, col)
		fields[i] = arrow.Field{Name: names[i], Type: e.Type(), Nullable: true}
	}
	p.schema = arrow.NewSchema(fields, nil)
	return p, nil
}

// Schema is the output schema.
func (p *Projection) Schema() *arrow.Schema { return p.schema }

// Apply projects rec into a new record (rec is not released).
func (p *Projection) Apply(c *functions.Ctx, rec arrow.Record) (arrow.Record, error) {
	cols := make([]arrow.Array, len(p.evals))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, ev := range p.evals {
		if p.cols[i] >= 0 {
			cols[i] = rec.Column(p.cols[i])
			cols[i].Retain()
			continue
		}
		a, err := ev.Eval(c, rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ev, err)
		}
		cols[i] = a
	}
	return array.NewRecord(p.schema, cols, rec.NumRows()), nil
}
