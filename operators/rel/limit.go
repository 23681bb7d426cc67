package rel

import (
	"github.com/tierflow/tierflow/dataflow"
)

// Limit passes the first N rows (in arrival order) and drops the rest.
type Limit struct {
	dataflow.Base
	left int64
	// stop: this limit bounds the whole query's result, so once full it
	// ends the sources (an endless stream would otherwise run on for
	// nothing). A limit inside a branch must not: the other branches
	// still have rows to give.
	stop, stopped bool
}

// NewLimit makes a limit instance; run it with parallelism 1.
func NewLimit(n int64) *Limit { return &Limit{left: n} }

// NewFinalLimit is a limit on the query's result: once it has its rows it
// stops the run's sources (dataflow.Context.StopSources).
func NewFinalLimit(n int64) *Limit { return &Limit{left: n, stop: true} }

func (l *Limit) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	rec := b.Record
	if l.left <= 0 {
		rec.Release()
		l.full(ctx)
		return nil
	}
	if rec.NumRows() > l.left {
		out := rec.NewSlice(0, l.left)
		rec.Release()
		rec = out
	}
	l.left -= rec.NumRows()
	if err := ctx.Emit(0, cap, rec); err != nil {
		return err
	}
	if l.left <= 0 {
		l.full(ctx)
	}
	return nil
}

func (l *Limit) full(ctx *dataflow.Context) {
	if l.stop && !l.stopped {
		l.stopped = true
		ctx.StopSources()
	}
}
