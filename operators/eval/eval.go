package eval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// ErrCompile is the kind of every compilation error.
var ErrCompile = errors.New("cannot compile expression")

// ErrOutOfRange: a CAST whose value does not fit the target type. As in
// DuckDB the query fails, naming the expression; it never wraps or clamps.
var ErrOutOfRange = errors.New("value out of range")

// ErrConversion is a text a cast cannot read ('abc'::TIMESTAMP).
var ErrConversion = errors.New("cannot convert")

// ExprError is the failure of one sub-expression on a batch, named as bound
// (CAST(a AS INT), (i + 1)), so that a wrong value points at what made it.
type ExprError struct {
	Expr string
	Err  error
}

func (e *ExprError) Error() string { return e.Expr + ": " + e.Err.Error() }
func (e *ExprError) Unwrap() error { return e.Err }

// QueryError blames the query (runtime/deploy's QueryError): an
// expression that fails on a batch fails on it wherever it runs, so the
// query fails at once with the reason and is never recovered onto another
// worker; a coordinator waiting to see whether a lost worker caused the
// failure held every such query 4 s. Not when the expression was refused
// memory (a limit, which blames the query as such) or was stopped.
func (e *ExprError) QueryError() bool {
	return !errors.Is(e.Err, dataflow.ErrMemory) && !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, context.DeadlineExceeded)
}

// Evaluator is a compiled expression. It is immutable and safe to share between
// operator instances.
type Evaluator struct {
	root node
	typ  arrow.DataType
	src  expr.Expr
}

// node evaluates to an array of the batch's length or to a scalar (literals and
// expressions of literals). The caller releases the datum.
type node interface {
	eval(c *functions.Ctx, rec arrow.Record) (compute.Datum, error)
}

// Compile compiles e against input schema (nil skips column type checks).
func Compile(e expr.Expr, schema *arrow.Schema, fns *functions.Registry) (*Evaluator, error) {
	c := compiler{schema: schema, fns: fns}
	n, err := c.compile(e)
	if err != nil {
		return nil, err
	}
	return &Evaluator{root: n, typ: e.Type(), src: e}, nil
}

// Type is the result type.
func (ev *Evaluator) Type() arrow.DataType { return ev.typ }

// String renders the source expression.
func (ev *Evaluator) String() string { return ev.src.String() }

// Eval computes the expression over rec; the result has rec.NumRows() rows and
// belongs to the caller.
func (ev *Evaluator) Eval(c *functions.Ctx, rec arrow.Record) (arrow.Array, error) {
	d, err := ev.root.eval(c, rec)
	if err != nil {
		return nil, err
	}
	return datumToArray(c, d, int(rec.NumRows()))
}

// EvalDatum is Eval without broadcasting a constant result.
func (ev *Evaluator) EvalDatum(c *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	return ev.root.eval(c, rec)
}

func datumToArray(c *functions.Ctx, d compute.Datum, n int) (arrow.Array, error) {
	defer d.Release()
	switch d := d.(type) {
	case *compute.ArrayDatum:
		return d.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(d.Value, n, c.Mem)
	}
	return nil, fmt.Errorf("eval: unexpected datum %s", d)
}

type compiler struct {
	schema *arrow.Schema
	fns    *functions.Registry
}

func (c *compiler) compile(e expr.Expr) (node, error) {
	switch e := e.(type) {
	case *expr.Column:
		if c.schema != nil {
			if e.Index < 0 || e.Index >= c.schema.NumFields() {
				return nil, fmt.Errorf("%w: column %s index %d out of range (%d columns)", ErrCompile, e, e.Index, c.schema.NumFields())
			}
			if got := c.schema.Field(e.Index).Type; !arrow.TypeEqual(got, e.DataType) {
				return nil, fmt.Errorf("%w: column %s is %s in the input, bound as %s", ErrCompile, e, got, e.DataType)
			}
		}
		return columnNode(e.Index), nil
	case *expr.Literal:
		s, err := functions.ScalarOf(e.Value, e.DataType)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCompile, err)
		}
		return literalNode{s}, nil
	case *expr.Cast:
		in, err := c.compile(e.Expr)
		if err != nil {
			return nil, err
		}
		return &castNode{in: in, from: e.Expr.Type(), to: e.To, src: e}, nil
	case *expr.Call:
		fn, err := c.fns.Scalar(e.Func)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCompile, err)
		}
		args, err := c.all(e.Args)
		if err != nil {
			return nil, err
		}
		return &callNode{fn: fn, args: args, ret: e.DataType, src: e}, nil
	case *expr.Logic:
		args, err := c.all(e.Args)
		if err != nil {
			return nil, err
		}
		k := "and_kleene"
		if e.Op == expr.OpOr {
			k = "or_kleene"
		}
		return &kernelChain{kernel: k, args: args}, nil
	case *expr.Not:
		in, err := c.compile(e.Expr)
		if err != nil {
			return nil, err
		}
		return &notNode{in: in}, nil
	case *expr.IsNull:
		in, err := c.compile(e.Expr)
		if err != nil {
			return nil, err
		}
		return &isNullNode{in: in, negated: e.Negated}, nil
	case *expr.Between:
		args, err := c.all([]expr.Expr{e.Expr, e.Lo, e.Hi})
		if err != nil {
			return nil, err
		}
		ge, _ := c.fns.Scalar("greater_equal")
		le, _ := c.fns.Scalar("less_equal")
		var n node = &kernelChain{kernel: "and_kleene", args: []node{
			&callNode{fn: ge, args: []node{args[0], args[1]}, ret: expr.Bool},
			&callNode{fn: le, args: []node{args[0], args[2]}, ret: expr.Bool},
		}}
		if e.Negated {
			n = &notNode{in: n}
		}
		return n, nil
	case *expr.In:
		return c.compileIn(e)
	case *expr.Like:
		return c.compileLike(e)
	case *expr.Case:
		return c.compileCase(e)
	case *expr.Aggregate:
		return nil, fmt.Errorf("%w: aggregate %s outside GROUP BY evaluation", ErrCompile, e)
	}
	return nil, fmt.Errorf("%w: unsupported expression %T", ErrCompile, e)
}

func (c *compiler) all(es []expr.Expr) ([]node, error) {
	out := make([]node, len(es))
	for i, e := range es {
		n, err := c.compile(e)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

type columnNode int

func (n columnNode) eval(_ *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	return compute.NewDatum(rec.Column(int(n))), nil
}

type literalNode struct{ s scalar.Scalar }

func (n literalNode) eval(*functions.Ctx, arrow.Record) (compute.Datum, error) {
	return compute.NewDatum(n.s), nil
}

type castNode struct {
	in       node
	from, to arrow.DataType
	src      *expr.Cast
}

func (n *castNode) eval(c *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	d, err := n.in.eval(c, rec)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if expr.IsNullType(n.from) {
		return compute.NewDatum(scalar.MakeNullScalar(n.to)), nil
	}
	if sd, ok := d.(*compute.ScalarDatum); ok {
		// A constant casts as a column would (arrow's scalar CastTo
		// truncates and wraps where the array cast checks).
		a, err := scalar.MakeArrayFromScalar(sd.Value, 1, c.Mem)
		if err != nil {
			return nil, err
		}
		ad := compute.NewDatum(a)
		a.Release()
		defer ad.Release()
		out, err := n.cast(c, ad)
		if err != nil {
			return nil, err
		}
		defer out.Release()
		oa := out.(*compute.ArrayDatum).MakeArray()
		defer oa.Release()
		s, err := scalar.GetScalar(oa, 0)
		if err != nil {
			return nil, err
		}
		return compute.NewDatum(s), nil
	}
	return n.cast(c, d)
}

func (n *castNode) cast(c *functions.Ctx, d compute.Datum) (compute.Datum, error) {
	out, err := n.castStrict(c, d)
	if err == nil || !n.src.Try {
		return out, err
	}
	// TRY_CAST: the batch holds a value that does not convert. Cast row by
	// row (only on this path) and make those rows NULL.
	a := d.(*compute.ArrayDatum).MakeArray()
	defer a.Release()
	var parts []arrow.Array
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for i := 0; i < a.Len(); i++ {
		one := array.NewSlice(a, int64(i), int64(i+1))
		od := compute.NewDatum(one)
		one.Release()
		r, err := n.castStrict(c, od)
		od.Release()
		if err != nil {
			parts = append(parts, array.MakeArrayOfNull(c.Mem, n.to, 1))
			continue
		}
		parts = append(parts, r.(*compute.ArrayDatum).MakeArray())
		r.Release()
	}
	res, err := array.Concatenate(parts, c.Mem)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	return compute.NewDatum(res), nil
}

func (n *castNode) castStrict(c *functions.Ctx, d compute.Datum) (compute.Datum, error) {
	if n.from.ID() == arrow.STRING && n.to.ID() == arrow.TIMESTAMP {
		a := d.(*compute.ArrayDatum).MakeArray()
		defer a.Release()
		out, err := castStringToTimestamp(c.Mem, a, n.to)
		if err != nil {
			return nil, &ExprError{Expr: n.src.String(), Err: err}
		}
		defer out.Release()
		return compute.NewDatum(out), nil
	}
	if expr.IsDecimal(n.from) || expr.IsDecimal(n.to) || n.from.ID() == arrow.DATE32 || n.to.ID() == arrow.DATE32 {
		a := d.(*compute.ArrayDatum).MakeArray()
		defer a.Release()
		out, ok, err := castTemporalOrDecimal(c.Mem, a, n.to)
		if err != nil {
			return nil, &ExprError{Expr: n.src.String(), Err: err}
		}
		if ok {
			defer out.Release()
			return compute.NewDatum(out), nil
		}
	}
	if formatsAsDuckDB(n.from, n.to) {
		a := d.(*compute.ArrayDatum).MakeArray()
		defer a.Release()
		out := castToString(c.Mem, a)
		defer out.Release()
		return compute.NewDatum(out), nil
	}
	if isFloatType(n.from) && arrow.IsInteger(n.to.ID()) {
		a := d.(*compute.ArrayDatum).MakeArray()
		defer a.Release()
		_, literal := n.src.Expr.(*expr.Literal)
		out, err := roundToInteger(c.Mem, a, n.to, !literal)
		if err != nil {
			return nil, &ExprError{Expr: n.src.String(), Err: err}
		}
		defer out.Release()
		return compute.NewDatum(out), nil
	}
	out, err := compute.CastDatum(c.Context(), d, compute.SafeCastOptions(n.to))
	if err != nil {
		if errors.Is(err, arrow.ErrInvalid) && strings.Contains(err.Error(), "not in range") {
			err = fmt.Errorf("%w: %v", ErrOutOfRange, err)
		}
		return nil, &ExprError{Expr: n.src.String(), Err: err}
	}
	return out, nil
}

type callNode struct {
	fn   functions.ScalarFunc
	args []node
	ret  arrow.DataType
	src  *expr.Call
}

func evalAll(c *functions.Ctx, rec arrow.Record, ns []node) ([]compute.Datum, error) {
	out := make([]compute.Datum, 0, len(ns))
	for _, n := range ns {
		d, err := n.eval(c, rec)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func releaseAll(ds []compute.Datum) {
	for _, d := range ds {
		d.Release()
	}
}

func allScalar(ds []compute.Datum) bool {
	for _, d := range ds {
		if _, ok := d.(*compute.ScalarDatum); !ok {
			return false
		}
	}
	return true
}

func (n *callNode) eval(c *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	args, err := evalAll(c, rec, n.args)
	if err != nil {
		return nil, err
	}
	defer releaseAll(args)
	rows := int(rec.NumRows())
	if allScalar(args) {
		// Constant folding at run time: compute one row, keep it a scalar.
		rows = 1
	}
	a, err := n.fn(c, n.ret, args, rows)
	if err != nil {
		if errors.Is(err, functions.ErrOverflow) {
			return nil, &ExprError{Expr: n.src.String(), Err: err}
		}
		return nil, err
	}
	defer a.Release()
	if rows == 1 && allScalar(args) {
		s, err := scalar.GetScalar(a, 0)
		if err != nil {
			return nil, err
		}
		return compute.NewDatum(s), nil
	}
	return compute.NewDatum(a), nil
}

// kernelChain folds its arguments left to right with a compute kernel (the
// Kleene AND/OR).
type kernelChain struct {
	kernel string
	args   []node
}

func (n *kernelChain) eval(c *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	acc, err := n.args[0].eval(c, rec)
	if err != nil {
		return nil, err
	}
	for _, a := range n.args[1:] {
		d, err := a.eval(c, rec)
		if err != nil {
			acc.Release()
			return nil, err
		}
		next, err := compute.CallFunction(c.Context(), n.kernel, nil, acc, d)
		acc.Release()
		d.Release()
		if err != nil {
			return nil, err
		}
		acc = next
	}
	return acc, nil
}

type isNullNode struct {
	in      node
	negated bool
}

func (n *isNullNode) eval(c *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	d, err := n.in.eval(c, rec)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if sd, ok := d.(*compute.ScalarDatum); ok {
		return compute.NewDatum(scalar.NewBooleanScalar(sd.Value.IsValid() == n.negated)), nil
	}
	a := d.(*compute.ArrayDatum).MakeArray()
	defer a.Release()
	b := array.NewBooleanBuilder(c.Mem)
	defer b.Release()
	arrowx.Reserve(b, a.Len())
	isNullType := a.DataType().ID() == arrow.NULL
	for i := 0; i < a.Len(); i++ {
		null := isNullType || a.IsNull(i)
		b.UnsafeAppend(null != n.negated)
	}
	out := b.NewArray()
	defer out.Release()
	return compute.NewDatum(out), nil
}

// likeRegexp translates a SQL LIKE pattern ('%', '_', '\' escape) to an anchored
// regular expression.
func likeRegexp(pattern string, fold bool) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("(?s)")
	if fold {
		b.WriteString("(?i)")
	}
	b.WriteString("^")
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\\':
			if i+1 < len(rs) {
				i++
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			} else {
				b.WriteString(`\\`)
			}
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// notNode inverts the value bits and keeps the validity bitmap, so NOT NULL is
// NULL. (arrow/go's compute has no invert kernel.)
type notNode struct{ in node }

func (n *notNode) eval(c *functions.Ctx, rec arrow.Record) (compute.Datum, error) {
	d, err := n.in.eval(c, rec)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if sd, ok := d.(*compute.ScalarDatum); ok {
		b, ok := sd.Value.(*scalar.Boolean)
		if !ok || !b.Valid {
			return compute.NewDatum(scalar.MakeNullScalar(expr.Bool)), nil
		}
		return compute.NewDatum(scalar.NewBooleanScalar(!b.Value)), nil
	}
	in := d.(*compute.ArrayDatum).Value
	bufs := in.Buffers()
	vals := memory.NewResizableBuffer(c.Mem)
	nbytes := int(bitutil.BytesForBits(int64(in.Offset() + in.Len())))
	vals.Resize(nbytes)
	src, dst := bufs[1].Bytes(), vals.Bytes()
	for i := 0; i < nbytes; i++ {
		dst[i] = ^src[i]
	}
	nd := array.NewData(expr.Bool, in.Len(), []*memory.Buffer{bufs[0], vals}, nil, in.NullN(), in.Offset())
	vals.Release()
	return &compute.ArrayDatum{Value: nd}, nil
}
