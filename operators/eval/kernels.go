package eval

import (
	"errors"
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
type Predicate struct {
	ev *Evaluator
	// fast, when set, computes the selection directly (column <op> constant on
	// a numeric column), skipping the intermediate boolean mask.
	fast func(rec arrow.Record, buf []int32) []int32
	buf  []int32
}

// NewPredicate compiles a boolean expression.
func NewPredicate(e expr.Expr, in *arrow.Schema, fns *functions.Registry) (*Predicate, error) {
	if expr.IsNullType(e.Type()) {
		// WHERE NULL (the binder lets a NULL stand for any type): a NULL
		// condition keeps no row.
		e = expr.CastTo(e, expr.Bool)
	}
	if e.Type().ID() != arrow.BOOL {
		return nil, fmt.Errorf("%w: predicate %s is %s, want BOOLEAN", ErrCompile, e, expr.TypeName(e.Type()))
	}
	ev, err := Compile(e, in, fns)
	if err != nil {
		return nil, err
	}
	return &Predicate{ev: ev, fast: fastSelection(e)}, nil
}

// Clone returns a predicate sharing the compiled expression but with its own
// scratch buffer: one per operator instance, since Filter reuses it.
func (p *Predicate) Clone() *Predicate {
	c := *p
	c.buf = nil
	return &c
}

// Filter returns the rows of rec that pass (rec itself, retained, when all do;
// nil when none do). rec is not released.
func (p *Predicate) Filter(c *functions.Ctx, rec arrow.Record) (arrow.Record, error) {
	if p.fast != nil {
		p.buf = p.fast(rec, p.buf)
		return p.take(c, rec, p.buf)
	}
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
	p.buf = SelectionIndices(mask, p.buf)
	return p.take(c, rec, p.buf)
}

// Select computes which rows of rec pass without copying any: all true when
// every row does, else the passing rows' indices in order (empty when none
// do). The indices live in p's scratch buffer until the next call. An
// aggregation under the filter folds those rows in place (a selection
// vector), where Filter would gather every column.
func (p *Predicate) Select(c *functions.Ctx, rec arrow.Record) (sel []int32, all bool, err error) {
	n := int(rec.NumRows())
	if p.fast != nil {
		p.buf = p.fast(rec, p.buf)
		return p.buf, len(p.buf) == n, nil
	}
	d, err := p.ev.EvalDatum(c, rec)
	if err != nil {
		return nil, false, err
	}
	defer d.Release()
	if sd, ok := d.(*compute.ScalarDatum); ok {
		b, ok := sd.Value.(*scalar.Boolean)
		return nil, ok && b.Valid && b.Value, nil
	}
	mask := d.(*compute.ArrayDatum).MakeArray().(*array.Boolean)
	defer mask.Release()
	if mask.NullN() == 0 {
		switch bitutil.CountSetBits(mask.Data().Buffers()[1].Bytes(), mask.Data().Offset(), mask.Len()) {
		case mask.Len():
			return nil, true, nil
		case 0:
			return p.buf[:0], false, nil
		}
	}
	p.buf = SelectionIndices(mask, p.buf)
	return p.buf, len(p.buf) == n, nil
}

func (p *Predicate) take(c *functions.Ctx, rec arrow.Record, idx []int32) (arrow.Record, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	if len(idx) == int(rec.NumRows()) {
		rec.Retain()
		return rec, nil
	}
	return GatherRecord(c.Context(), c.Mem, rec, idx)
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
		if col >= 0 && col < in.NumFields() && arrow.TypeEqual(in.Field(col).Type, e.Type()) {
			// A column passed through keeps its metadata (a tensor's
			// shape), as logical.NewProject's schema does: a model call
			// above a pruning projection needs the image's shape.
			fields[i].Metadata = in.Field(col).Metadata
		}
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
			if xe := (*ExprError)(nil); errors.As(err, &xe) && xe.Expr == ev.String() {
				return nil, err // it names the expression already
			}
			return nil, &ExprError{Expr: ev.String(), Err: err}
		}
		cols[i] = a
	}
	return array.NewRecord(p.outSchema(cols), cols, rec.NumRows()), nil
}

// outSchema is the output schema, except that a column passed through as
// its input has it carries that input's type: a string column a Parquet
// scan passes on as dictionary codes (sources.ParquetScan.Codes) stays so.
func (p *Projection) outSchema(cols []arrow.Array) *arrow.Schema {
	var fs []arrow.Field
	for i, c := range p.cols {
		if c < 0 || arrow.TypeEqual(cols[i].DataType(), p.schema.Field(i).Type) {
			continue
		}
		if fs == nil {
			fs = append([]arrow.Field(nil), p.schema.Fields()...)
		}
		fs[i].Type = cols[i].DataType()
	}
	if fs == nil {
		return p.schema
	}
	return arrow.NewSchema(fs, nil)
}
