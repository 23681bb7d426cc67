package dataflow

import "sync/atomic"

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
}

type counters struct {
	batchesIn, rowsIn, batchesOut, rowsOut, notified atomic.Int64
	finished                                         atomic.Bool
}

// Stats snapshots the counters of every local instance. It is safe to call
// while the worker runs.
func (w *Worker) Stats() []InstanceStats {
	out := make([]InstanceStats, 0, len(w.insts))
	for _, in := range w.insts {
		out = append(out, InstanceStats{
			Operator:    in.info.Operator,
			OperatorID:  in.info.OperatorID,
			Index:       in.info.Index,
			Worker:      in.info.Worker,
			BatchesIn:   in.stats.batchesIn.Load(),
			RowsIn:      in.stats.rowsIn.Load(),
			BatchesOut:  in.stats.batchesOut.Load(),
			RowsOut:     in.stats.rowsOut.Load(),
			Notified:    in.stats.notified.Load(),
			Finished:    in.stats.finished.Load(),
			QueueLength: in.q.len(),
		})
	}
	return out
}
