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
