package rel

import (
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// MergeAggregate is the final phase of a windowed aggregation split in two
// (a partial aggregation per input instance, then this): it combines the
// partial rows of each window, grouped by the partial's keys and its
// window_start and window_end as plain columns (spec has no window).
//
// Every partial instance emits a window's rows at one epoch, the window's
// end plus its time's lag (Aggregate.OnFrontier), the epoch a one-phase
// aggregation emits that window at. So this operator keeps the partial rows
// by the epoch they came at and, once its input frontier passes an epoch
// (no instance can send more rows of it), emits that epoch's combined rows
// at that same epoch: downstream sees each window's rows at the epoch the
// one-phase aggregation would have sent them, and judges lateness by data
// alone. Nothing here is ever late: a partial row's epoch is its window's.
type MergeAggregate struct {
	dataflow.Base
	spec  AggregateSpec
	in    *arrow.Schema
	fns   *functions.Registry
	stats *Stats
	held  *dataflow.Capability
	// h keeps the partial rows of every pending epoch, each epoch's
	// groups apart (newEpochAggregate).
	h *HashAggregate
}

// NewMergeAggregate makes a merge instance over partial rows of schema in;
// stats (nil: none) counts the rows it sends (the partial phase counts the
// rows in and the late ones).
func NewMergeAggregate(spec AggregateSpec, in *arrow.Schema, fns *functions.Registry, stats *Stats) *MergeAggregate {
	return &MergeAggregate{spec: spec, in: in, fns: fns, stats: stats}
}

func (m *MergeAggregate) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	h, err := newEpochAggregate(ctx.Allocator(), m.spec, m.in, m.fns)
	if err != nil {
		return err
	}
	m.h = h
	// The pending epochs' groups count against the query's memory.
	if err := h.Charge(ctx.Memory()); err != nil {
		return err
	}
	m.held, err = cap.Retain()
	return err
}

func (m *MergeAggregate) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	defer b.Record.Release()
	if b.Epoch > math.MaxInt64 {
		return fmt.Errorf("final aggregate: rows at epoch %d, past the last", b.Epoch)
	}
	return m.h.addEpoch(b.Record, int64(b.Epoch))
}

// OnFrontier emits the combined rows of every epoch the frontier passed, in
// epoch order, each at its own epoch.
func (m *MergeAggregate) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	through := int64(math.MaxInt64) // every epoch before f
	if f != dataflow.Closed && f <= math.MaxInt64 {
		through = int64(f) - 1
	}
	recs, epochs := m.h.closeEpochs(through)
	for i, rec := range recs {
		if e := dataflow.Epoch(epochs[i]); e > m.held.Epoch() {
			if err := m.held.Downgrade(e); err != nil {
				releaseRecords(recs[i:])
				return err
			}
		}
		if m.stats != nil {
			m.stats.RowsOut.Add(rec.NumRows())
		}
		if err := ctx.Emit(0, m.held, rec); err != nil {
			releaseRecords(recs[i+1:])
			return err
		}
	}
	if f == dataflow.Closed {
		m.held.Drop()
		return nil
	}
	if f > m.held.Epoch() {
		return m.held.Downgrade(f)
	}
	return nil
}

func (m *MergeAggregate) Close(ctx *dataflow.Context) error {
	if m.held != nil {
		m.held.Drop()
	}
	if m.h != nil {
		m.h.ReleaseWith(dataflow.HelperOf(ctx.Context()).Do)
	}
	return nil
}
