package rel

import (
	"math"
	"sync/atomic"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// Watermark converts a frontier epoch to event-time microseconds; Closed is
// math.MaxInt64 (everything is complete).
func Watermark(e dataflow.Epoch) int64 {
	if e >= dataflow.Epoch(math.MaxInt64) {
		return math.MaxInt64
	}
	return int64(e)
}

// EpochOf is the epoch of an event-time watermark in microseconds (times
// before 1970 clamp to epoch 0).
func EpochOf(us int64) dataflow.Epoch {
	if us < 0 {
		return 0
	}
	return dataflow.Epoch(us)
}

// Stats are counters an operator shares with whoever reports on the query; safe
// to read while the dataflow runs.
type Stats struct {
	RowsIn    atomic.Int64
	RowsOut   atomic.Int64
	Late      atomic.Int64 // rows dropped because their window had closed
	NullTimes atomic.Int64 // rows dropped for a NULL event time
}

// opCtx caches the functions context for the engine's allocator.
type opCtx struct{ f *functions.Ctx }

func (o *opCtx) get(ctx *dataflow.Context) *functions.Ctx {
	if o.f == nil {
		o.f = functions.NewCtx(ctx.Allocator())
	}
	return o.f
}

// lastEpoch is the latest epoch of the batches an operator took, for one
// that answers when its input ends (a GROUP BY without a window, a join of
// two bounded inputs): it answers at that epoch, which the data decide, and
// never at the frontier's last step before the end, which follows from how
// progress came. A recovered query's replay, its frontier skipping to the
// end at once, sent such answers at an earlier epoch than the first run,
// and the client, which keeps of a replay only the epochs its sinks had not
// committed, dropped them as written (TestGroupByAtTheEndGoesOutAtTheLastEpoch).
type lastEpoch struct {
	e  dataflow.Epoch
	ok bool // a batch came
}

func (l *lastEpoch) take(e dataflow.Epoch) { l.e, l.ok = max(l.e, e), true }

// follow moves held with the frontier f, but no further than the last
// batch taken: every batch still to come is at or past f, so the last one
// is too, and held never passes the epoch the answer goes out at. Before
// any batch came it follows f alone (a two-phase aggregation's final
// phase takes its partial rows only at the end, and holding it back
// stalled every commit downstream until then: Nexmark's q4 committed
// nothing before its end). With no batch at all, no data decide: an
// aggregate without GROUP BY over an empty input answers (count 0) where
// the frontier last stood.
func (l *lastEpoch) follow(held *dataflow.Capability, f dataflow.Epoch) error {
	e := f
	if l.ok {
		e = min(f, l.e)
	}
	if f != dataflow.Closed && e > held.Epoch() {
		return held.Downgrade(e)
	}
	return nil
}

// reach moves held to the last batch's epoch, where the answer goes out
// (it stays where it is when no batch came).
func (l *lastEpoch) reach(held *dataflow.Capability) error {
	if l.ok && l.e > held.Epoch() {
		return held.Downgrade(l.e)
	}
	return nil
}
