package rel

import (
	"math"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
)

// Aggregate runs a HashAggregate as a dataflow operator: windows close when the
// input frontier (the event-time watermark) passes their end, and their rows are
// emitted at once, so a sink prints results as windows close.
type Aggregate struct {
	dataflow.Base
	spec  AggregateSpec
	in    *arrow.Schema
	fns   *functions.Registry
	h     *HashAggregate
	held  *dataflow.Capability
	stats *Stats
	where *eval.Predicate // a filter fused in (NewFilteredAggregate), or nil
	// procSeen is the latest processing time a row brought (a window over
	// PROCTIME(): WindowSpec.ProcTime).
	procSeen int64
	// last: a GROUP BY without a window answers at its last batch's
	// epoch (atLast).
	last lastEpoch
}

// NewAggregate makes an aggregation instance; stats may be nil.
func NewAggregate(spec AggregateSpec, in *arrow.Schema, fns *functions.Registry, stats *Stats) *Aggregate {
	return &Aggregate{spec: spec, in: in, fns: fns, stats: stats, procSeen: math.MinInt64}
}

// NewFilteredAggregate makes an aggregation instance that folds only the
// rows for which where is TRUE (HashAggregate.AddWhere): a filter and the
// aggregation above it as one operator, so the rows kept are not copied.
func NewFilteredAggregate(spec AggregateSpec, in *arrow.Schema, fns *functions.Registry, where *eval.Predicate, stats *Stats) *Aggregate {
	return &Aggregate{spec: spec, in: in, fns: fns, stats: stats, where: where.Clone(), procSeen: math.MinInt64}
}

func (a *Aggregate) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	h, err := NewHashAggregate(ctx.Allocator(), a.spec, a.in, a.fns)
	if err != nil {
		return err
	}
	a.h = h
	// A batch opening a window per row emits nothing until it ends: it
	// meets its query's turn between the windows it opens (#25).
	h.PauseWith(func() error { return dataflow.Yield(ctx.Context()) })
	if w := a.spec.Window; w != nil && w.ProcTime {
		// Processing-time windows all go out at the held epoch
		// (emitHeld): those closed together share records.
		h.SendAtOneEpoch(closedBatchRows)
	}
	// Its windows' and groups' state counts against the query's memory.
	if err := h.Charge(ctx.Memory()); err != nil {
		return err
	}
	a.held, err = cap.Retain()
	return err
}

func (a *Aggregate) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	if a.stats != nil {
		a.stats.RowsIn.Add(b.Record.NumRows())
	}
	a.last.take(b.Epoch)
	late, nulls := a.h.Late(), a.h.NullTimes()
	proc := a.spec.Window != nil && a.spec.Window.ProcTime
	var seen int64
	if proc {
		// Processing time: a row is late only behind the windows already
		// closed by the processing time rows carried (procSeen).
		a.h.JudgeAt(a.procSeen)
		var err error
		if seen, err = a.h.MaxTime(b.Record); err != nil {
			b.Record.Release()
			return err
		}
	} else {
		a.h.JudgeAt(a.behind(Watermark(b.Epoch)))
	}
	var err error
	if a.where != nil {
		err = a.h.AddWhere(b.Record, a.where)
	} else {
		err = a.h.Add(b.Record)
	}
	b.Record.Release()
	if a.stats != nil {
		a.stats.Late.Add(a.h.Late() - late)
		a.stats.NullTimes.Add(a.h.NullTimes() - nulls)
	}
	if err != nil || !proc || seen <= a.procSeen {
		return err
	}
	// The windows this batch's processing time passed close now, at the
	// epoch the operator holds: processing time has no epoch of its own.
	a.procSeen = seen
	recs, err := a.h.Advance(seen)
	if err != nil {
		return err
	}
	return a.emitHeld(ctx, recs)
}

// closedBatchRows is the most rows a record of processing-time windows
// closed together holds: a source batch's rows (exec.Options.BatchSize's
// default), so the records are no larger than those the query reads.
const closedBatchRows = 4096

// emitHeld sends recs at the held capability's epoch.
func (a *Aggregate) emitHeld(ctx *dataflow.Context, recs []arrow.Record) error {
	for i, rec := range recs {
		if a.stats != nil {
			a.stats.RowsOut.Add(rec.NumRows())
		}
		if err := ctx.Emit(0, a.held, rec); err != nil {
			releaseRecords(recs[i+1:])
			return err
		}
	}
	return nil
}

// OnFrontier closes the windows the new frontier completes.
func (a *Aggregate) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if w := a.spec.Window; w != nil && w.ProcTime {
		// Processing-time windows close as rows bring later times
		// (OnBatch); the input's end closes the rest.
		if f == dataflow.Closed {
			recs, err := a.h.Advance(math.MaxInt64)
			if err == nil {
				err = a.emitHeld(ctx, recs)
			}
			a.held.Drop()
			return err
		}
		if f > a.held.Epoch() {
			return a.held.Downgrade(f)
		}
		return nil
	}
	if a.spec.Window == nil {
		return a.atLast(ctx, f)
	}
	recs, err := a.h.Advance(a.behind(Watermark(f)))
	if err != nil {
		return err
	}
	for i, rec := range recs {
		if a.stats != nil {
			a.stats.RowsOut.Add(rec.NumRows())
		}
		if err := a.emitByEnd(ctx, rec); err != nil {
			releaseRecords(recs[i+1:])
			return err
		}
	}
	if f == dataflow.Closed {
		a.held.Drop()
		return nil
	}
	if f > a.held.Epoch() {
		return a.held.Downgrade(f)
	}
	return nil
}

// emitByEnd sends rec's windows each at the epoch of its end (plus the
// time's lag), so downstream (an ordered sink over parallel instances) can
// order results by window, and so a window goes out at the same epoch
// however the frontier stepped: sessions closed by one step come in one
// record (closeSessions, by end), and sending it at the latest end among
// them sent the earlier sessions later when a replay's frontier skipped
// more of them at once (written twice after a kill committed between the
// two ends: TestSessionRowsGoOutAtTheirSessionsEnd). A TUMBLE or HOP
// record is one window, a closing GROUP BY's one key grain: one piece.
func (a *Aggregate) emitByEnd(ctx *dataflow.Context, rec arrow.Record) error {
	defer rec.Release()
	n := int(rec.NumRows())
	for lo := 0; lo < n; {
		hi := n
		if w := a.spec.Window; !w.ByKey {
			ends := functions.Int64Values(rec.Column(len(a.spec.Group) + 1))
			for hi = lo + 1; hi < n && ends[hi] == ends[lo]; hi++ {
			}
		}
		piece := rec
		if lo > 0 || hi < n {
			piece = rec.NewSlice(int64(lo), int64(hi))
		} else {
			piece.Retain()
		}
		if e := a.windowEnd(piece); e > a.held.Epoch() && e < dataflow.Closed {
			if err := a.held.Downgrade(e); err != nil {
				piece.Release()
				return err
			}
		}
		if err := ctx.Emit(0, a.held, piece); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// atLast is OnFrontier for a GROUP BY without a window: its groups answer
// when the input ends, at the epoch of the last batch it took (lastEpoch).
func (a *Aggregate) atLast(ctx *dataflow.Context, f dataflow.Epoch) error {
	if f != dataflow.Closed {
		return a.last.follow(a.held, f)
	}
	if err := a.last.reach(a.held); err != nil {
		return err
	}
	recs, err := a.h.Advance(math.MaxInt64)
	if err == nil {
		err = a.emitHeld(ctx, recs)
	}
	a.held.Drop()
	return err
}

func (a *Aggregate) Close(ctx *dataflow.Context) error {
	if a.held != nil {
		a.held.Drop()
	}
	if a.h != nil {
		// Run as steps of the query: a query failing with its windows
		// open drops them at shutdown, outside any step.
		a.h.ReleaseWith(dataflow.HelperOf(ctx.Context()).Do)
	}
	return nil
}

// behind is the watermark of the window's time column at watermark wm:
// wm less the column's lag (WindowSpec.Lag).
func (a *Aggregate) behind(wm int64) int64 {
	if a.spec.Window == nil || wm == math.MaxInt64 || wm == math.MinInt64 {
		return wm
	}
	return wm - a.spec.Window.Lag.Microseconds()
}

// windowEnd is the latest window_end in rec plus the time column's lag: the
// epoch the window's rows go out at (0 when not windowed).
func (a *Aggregate) windowEnd(rec arrow.Record) dataflow.Epoch {
	if a.spec.Window == nil || rec.NumRows() == 0 {
		return 0
	}
	var m int64
	if w := a.spec.Window; w.ByKey {
		// The window is the key's TUMBLE window (a record is one window).
		m = functions.Int64Values(rec.Column(w.Key))[0]
		size := int64(w.Size / time.Microsecond)
		m = floorDiv(m, size)*size + size
	} else {
		ends := functions.Int64Values(rec.Column(len(a.spec.Group) + 1))
		m = ends[0]
		for _, e := range ends {
			m = max(m, e)
		}
	}
	return EpochOf(m + a.spec.Window.Lag.Microseconds())
}
