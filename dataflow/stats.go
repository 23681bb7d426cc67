package dataflow

import (
	"sync/atomic"
	"time"
)

// InstanceStats are one operator instance's counters, the measured side of
// a plan's estimates (rates and selectivities per operator). Emitted rows
// count once per Emit, however many edges or receivers they fan out to.
type InstanceStats struct {
	Operator    string `json:"operator"`
	OperatorID  int    `json:"operator_id"`
	Index       int    `json:"index"`
	Worker      int    `json:"worker"`
	BatchesIn   int64  `json:"batches_in"`
	RowsIn      int64  `json:"rows_in"`
	BatchesOut  int64  `json:"batches_out"`
	RowsOut     int64  `json:"rows_out"`
	Notified    int64  `json:"notifications"`
	Finished    bool   `json:"finished"`
	QueueLength int    `json:"queue_length"`
	// With Config.Timing: BusyNs is the time the instance spent in its callbacks (batches,
	// frontiers, notifications, wake-ups; not a source's Produce, which may
	// wait for input), and BatchLatency the time of each callback that
	// emitted output (for an operator without outputs, a sink: of each
	// input batch).
	BusyNs       int64     `json:"busy_ns"`
	BatchLatency Histogram `json:"batch_latency,omitzero"`
	// EndToEnd is, for an operator without outputs (a sink), the end-to-end
	// latency of every row it wrote: from the ingest time its batch was
	// stamped with at the source to the end of the sink's callback (see
	// Config.Latency; independent of Config.Timing). SLOMissRows counts the
	// rows over Config.LatencySLO.
	EndToEnd    Histogram `json:"end_to_end,omitzero"`
	SLOMissRows int64     `json:"slo_miss_rows,omitempty"`
	// First and Last are when the instance first and last received a batch
	// (a source: emitted one), in Unix nanoseconds, 0 before any: the span a
	// query's data was in flight, without its deployment and teardown.
	First int64 `json:"first_ns,omitempty"`
	Last  int64 `json:"last_ns,omitempty"`
	// Counters are the operator's own measurements (a Counting operator's).
	Counters map[string]int64 `json:"counters,omitempty"`
	// Attributes are what the operator says about itself (an Attributed
	// operator's): a model call's variant and device, say.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Attributed is an operator that describes itself for InstanceStats. The map
// must not change once the operator runs.
type Attributed interface {
	Attributes() map[string]string
}

// Counting is an operator with measurements of its own for InstanceStats
// (rows whose prediction matched their label, say). Counters is called from
// other goroutines while the operator runs: it must read atomics.
type Counting interface {
	Counters() map[string]int64
}

// Busy is BusyNs as a duration.
func (s InstanceStats) Busy() time.Duration { return time.Duration(s.BusyNs) }

type counters struct {
	batchesIn, rowsIn, batchesOut, rowsOut, notified atomic.Int64
	finished                                         atomic.Bool
	busyNs                                           atomic.Int64
	batch                                            histCounters
	e2e                                              histCounters
	sloMiss                                          atomic.Int64
	first, last                                      atomic.Int64
}

func countersOf(op Operator) map[string]int64 {
	if c, ok := op.(Counting); ok {
		return c.Counters()
	}
	return nil
}

func attributesOf(op Operator) map[string]string {
	if a, ok := op.(Attributed); ok {
		return a.Attributes()
	}
	return nil
}

// touch records data passing at ns (Unix nanoseconds).
func (c *counters) touch(ns int64) {
	c.last.Store(ns)
	if c.first.Load() == 0 {
		c.first.CompareAndSwap(0, ns)
	}
}

// Stats snapshots the counters of every local instance. It is safe to call
// while the worker runs.
func (w *Worker) Stats() []InstanceStats {
	out := make([]InstanceStats, 0, len(w.insts))
	for _, in := range w.insts {
		out = append(out, InstanceStats{
			Operator:     in.info.Operator,
			OperatorID:   in.info.OperatorID,
			Index:        in.info.Index,
			Worker:       in.info.Worker,
			BatchesIn:    in.stats.batchesIn.Load(),
			RowsIn:       in.stats.rowsIn.Load(),
			BatchesOut:   in.stats.batchesOut.Load(),
			RowsOut:      in.stats.rowsOut.Load(),
			Notified:     in.stats.notified.Load(),
			Finished:     in.stats.finished.Load(),
			QueueLength:  in.q.len(),
			BusyNs:       in.stats.busyNs.Load(),
			BatchLatency: in.stats.batch.snapshot(),
			EndToEnd:     in.stats.e2e.snapshot(),
			SLOMissRows:  in.stats.sloMiss.Load(),
			First:        in.stats.first.Load(),
			Last:         in.stats.last.Load(),
			Counters:     countersOf(in.op),
			Attributes:   attributesOf(in.op),
		})
	}
	return out
}
