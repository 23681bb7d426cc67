package rel

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
)

// Limit passes the first N rows (in arrival order) and drops the rest; per
// epoch (NewLimitPerWindow) it passes the first N rows of each epoch.
type Limit struct {
	dataflow.Base
	n, left int64
	// stop: this limit bounds the whole query's result, so once full it
	// ends the sources (an endless stream would otherwise run on for
	// nothing). A limit inside a branch must not: the other branches
	// still have rows to give.
	stop, stopped bool
	// perEpoch: rows left by epoch. Over a windowed aggregation an epoch
	// is a window (it is emitted at the epoch of its end), so a query's
	// ORDER BY ... LIMIT n is the top n of every window.
	perEpoch map[dataflow.Epoch]int64
	// skip: OFFSET, the rows dropped before the first one passed (per
	// epoch with perEpoch); skipLeft counts them down.
	skip, skipLeft int64
	skipEpoch      map[dataflow.Epoch]int64
}

// Skip makes l drop the first k rows (of each epoch, per window) before it
// passes any: OFFSET k.
func (l *Limit) Skip(k int64) *Limit {
	l.skip, l.skipLeft = k, k
	if l.perEpoch != nil {
		l.skipEpoch = map[dataflow.Epoch]int64{}
	}
	return l
}

// skipRows drops the OFFSET's rows from the front of rec; nil when none are
// left.
func (l *Limit) skipRows(rec arrow.Record, left *int64) arrow.Record {
	if *left <= 0 {
		return rec
	}
	if rec.NumRows() <= *left {
		*left -= rec.NumRows()
		rec.Release()
		return nil
	}
	out := rec.NewSlice(*left, rec.NumRows())
	rec.Release()
	*left = 0
	return out
}

// NewLimit makes a limit instance; run it with parallelism 1.
func NewLimit(n int64) *Limit { return &Limit{n: n, left: n} }

// NewFinalLimit is a limit on the query's result: once it has its rows it
// stops the run's sources (dataflow.Context.StopSources).
func NewFinalLimit(n int64) *Limit { return &Limit{n: n, left: n, stop: true} }

// NewLimitPerWindow passes the first n rows of each epoch, which over a
// windowed aggregation is each window. It never stops the sources: every
// window has its own rows to give.
func NewLimitPerWindow(n int64) *Limit {
	return &Limit{n: n, left: n, perEpoch: map[dataflow.Epoch]int64{}}
}

func (l *Limit) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if l.perEpoch != nil {
		return l.onEpochBatch(ctx, b, cap)
	}
	rec := b.Record
	if l.left <= 0 {
		rec.Release()
		l.full(ctx)
		return nil
	}
	if rec = l.skipRows(rec, &l.skipLeft); rec == nil {
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

func (l *Limit) onEpochBatch(ctx *dataflow.Context, b dataflow.Batch, cap *dataflow.Capability) error {
	left, ok := l.perEpoch[b.Epoch]
	if !ok {
		left = l.n
		// Epochs the frontier has passed get no more rows: forget them.
		f := ctx.Frontier()
		for e := range l.perEpoch {
			if e < f {
				delete(l.perEpoch, e)
			}
		}
	}
	rec := b.Record
	if left <= 0 {
		rec.Release()
		return nil
	}
	if l.skip > 0 {
		sk, seen := l.skipEpoch[b.Epoch]
		if !seen {
			sk = l.skip
			f := ctx.Frontier()
			for e := range l.skipEpoch {
				if e < f {
					delete(l.skipEpoch, e)
				}
			}
		}
		rec = l.skipRows(rec, &sk)
		l.skipEpoch[b.Epoch] = sk
		if rec == nil {
			return nil
		}
	}
	if rec.NumRows() > left {
		out := rec.NewSlice(0, left)
		rec.Release()
		rec = out
	}
	l.perEpoch[b.Epoch] = left - rec.NumRows()
	return ctx.Emit(0, cap, rec)
}

func (l *Limit) full(ctx *dataflow.Context) {
	if l.stop && !l.stopped {
		l.stopped = true
		ctx.StopSources()
	}
}
