package rel

import (
	"math"
	"slices"

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
	spec    AggregateSpec
	in      *arrow.Schema
	fns     *functions.Registry
	stats   *Stats
	held    *dataflow.Capability
	pending map[dataflow.Epoch]*HashAggregate
}

// NewMergeAggregate makes a merge instance over partial rows of schema in;
// stats (nil: none) counts the rows it sends (the partial phase counts the
// rows in and the late ones).
func NewMergeAggregate(spec AggregateSpec, in *arrow.Schema, fns *functions.Registry, stats *Stats) *MergeAggregate {
	return &MergeAggregate{spec: spec, in: in, fns: fns, stats: stats, pending: map[dataflow.Epoch]*HashAggregate{}}
}

func (m *MergeAggregate) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	// Compile once so that a spec that does not fit fails at open.
	h, err := NewHashAggregate(ctx.Allocator(), m.spec, m.in, m.fns)
	if err != nil {
		return err
	}
	h.Release()
	m.held, err = cap.Retain()
	return err
}

func (m *MergeAggregate) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	defer b.Record.Release()
	h := m.pending[b.Epoch]
	if h == nil {
		var err error
		if h, err = NewHashAggregate(ctx.Allocator(), m.spec, m.in, m.fns); err != nil {
			return err
		}
		// Each epoch's groups count against the query's memory.
		if err := h.Charge(ctx.Memory()); err != nil {
			h.Release()
			return err
		}
		m.pending[b.Epoch] = h
	}
	return h.Add(b.Record)
}

// OnFrontier emits the combined rows of every epoch the frontier passed, in
// epoch order, each at its own epoch.
func (m *MergeAggregate) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	var due []dataflow.Epoch
	for e := range m.pending {
		if e < f || f == dataflow.Closed {
			due = append(due, e)
		}
	}
	slices.Sort(due)
	for _, e := range due {
		h := m.pending[e]
		delete(m.pending, e)
		recs, err := h.Advance(math.MaxInt64)
		h.Release()
		if err == nil && e > m.held.Epoch() {
			err = m.held.Downgrade(e)
		}
		if err != nil {
			releaseRecords(recs)
			return err
		}
		for i, rec := range recs {
			if m.stats != nil {
				m.stats.RowsOut.Add(rec.NumRows())
			}
			if err := ctx.Emit(0, m.held, rec); err != nil {
				releaseRecords(recs[i+1:])
				return err
			}
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

func (m *MergeAggregate) Close(*dataflow.Context) error {
	if m.held != nil {
		m.held.Drop()
	}
	for e, h := range m.pending {
		h.Release()
		delete(m.pending, e)
	}
	return nil
}
