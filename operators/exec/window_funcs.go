package exec

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/planner/logical"
)

// windowFuncs builds the operator of a SELECT's window functions: per epoch
// over a windowed aggregation (each window's rows, as Flink evaluates them
// per window), over the whole input when it is bounded, and on a stream as
// Flink's OVER aggregation (one output per row, when the watermark passes
// it).
func (b *builder) windowFuncs(n *logical.WindowFuncs, at func(error) error) (int, *arrow.Schema, error) {
	in, schema, err := b.node(n.Input)
	if err != nil {
		return 0, nil, err
	}
	fns := b.opts.Functions
	var mk func() (dataflow.Operator, error)
	switch {
	case windowed(n.Input):
		mk = func() (dataflow.Operator, error) { return rel.NewWindowFuncs(n.Funcs, n.Names, schema, fns) }
	case bounded(n.Input):
		// Past Options.MemoryLimit (or its query's budget a third full)
		// the rows go to disk by the functions' common PARTITION BY.
		limit, st := b.opts.MemoryLimit, b.q.windows
		mk = func() (dataflow.Operator, error) {
			return rel.NewWindowFuncsAtEndWithin(n.Funcs, n.Names, schema, fns, limit, st)
		}
	case streamRank(n):
		if mk, err = b.rankOp(n, schema, at); err != nil {
			return 0, nil, err
		}
	default:
		if err := rel.CheckStreamOver(n.Funcs, schema); err != nil {
			return 0, nil, atFunc(err, at)
		}
		st := &rel.Stats{}
		b.q.stats = append(b.q.stats, st)
		lag := timeLag(n.Input, n.Funcs[0].Order[0].Expr)
		grain := timeGrain(n.Input, n.Funcs[0].Order[0].Expr)
		mk = func() (dataflow.Operator, error) {
			o, err := rel.NewStreamOver(n.Funcs, n.Names, schema, fns, st)
			if err == nil {
				o.SetLag(lag)
				o.SetGrain(grain)
			}
			return o, err
		}
	}
	// Compile once here so that plan errors surface before anything runs.
	op0, err := mk()
	if err != nil {
		return 0, nil, at(err)
	}
	out := op0.(interface{ Schema() *arrow.Schema }).Schema()
	op := b.add("window", 1, mk)
	b.g.Connect(in, 0, op, 0)
	return op, out, nil
}

// atFunc places a *rel.WindowError at the call it blames, anything else at
// the node; either is also an ErrUnsupported (the query's fault, not the
// run's).
func atFunc(err error, at func(error) error) error {
	if we, ok := err.(*rel.WindowError); ok && we.Func.Pos.Line > 0 {
		err = fmt.Errorf("%s: %w", we.Func.Pos, err)
	} else {
		err = at(err)
	}
	return unsupported{err}
}

// unsupported reads as its error and is also ErrUnsupported.
type unsupported struct{ err error }

func (u unsupported) Error() string   { return u.err.Error() }
func (u unsupported) Unwrap() []error { return []error{ErrUnsupported, u.err} }
