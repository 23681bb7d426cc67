package rel

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// SpillPartitions is how many files a spilling aggregation spreads its
// groups over: the final phase holds one file's groups at a time, about
// 1/SpillPartitions of them.
const SpillPartitions = 32

// SpillAggregate is a GROUP BY without a window whose state stays under a
// memory limit. It folds rows into partial states (Partial: the first phase
// of a two-phase aggregation, count, sum, min, max, avg as a sum and a
// count) and, whenever the groups it holds would take more than Limit
// bytes, writes them out as Arrow IPC, spread over SpillPartitions files by
// a hash of their keys, and starts again with none. When the input ends,
// each file is combined by Final on its own: all partial rows of a key are
// in one file, so no group is split between two.
type SpillAggregate struct {
	dataflow.Base
	partial, final AggregateSpec
	in             *arrow.Schema
	fns            *functions.Registry
	limit          int64
	stats          *SpillStats

	mem   memory.Allocator
	acct  *dataflow.Account // the query's budget's share of this instance
	h     *HashAggregate
	mid   *arrow.Schema // the partial states' schema
	dir   string
	parts []*spillFile
	held  *dataflow.Capability
	last  lastEpoch // the answer goes out at its last batch's epoch
}

// SpillStats count what spilling aggregations wrote.
type SpillStats struct {
	Spills atomic.Int64 // times a partial state went to disk
	Rows   atomic.Int64 // partial rows written
}

// NewSpillAggregate makes an instance over rows of schema in that keeps its
// partial states under limit bytes; stats may be nil.
func NewSpillAggregate(partial, final AggregateSpec, in *arrow.Schema, fns *functions.Registry, limit int64, stats *SpillStats) *SpillAggregate {
	return &SpillAggregate{partial: partial, final: final, in: in, fns: fns, limit: limit, stats: stats}
}

func (a *SpillAggregate) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	if a.partial.Window != nil || a.final.Window != nil {
		return fmt.Errorf("%w: a spilling aggregation has no window", ErrPlan)
	}
	a.mem, a.acct = ctx.Allocator(), ctx.Memory()
	h, err := NewHashAggregate(a.mem, a.partial, a.in, a.fns)
	if err != nil {
		return err
	}
	if err := h.Charge(a.acct); err != nil {
		return err
	}
	a.h, a.mid = h, h.Schema()
	a.held, err = cap.Retain()
	return err
}

func (a *SpillAggregate) OnBatch(_ *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	rec := b.Record
	defer func() { rec.Release() }()
	a.last.take(b.Epoch)
	for spilled := false; ; spilled = true {
		err := a.h.Add(rec)
		if !errors.Is(err, dataflow.ErrMemory) {
			if err != nil || !a.over() {
				return err
			}
			return a.spill()
		}
		// The query's budget refused the state: to disk with it. A
		// refusal before some rows were folded in (the table's growth is
		// charged first, chunk by chunk) leaves those rows to add to the
		// emptied state; one after it (HashAggregate.track) was folded
		// and spills with it. An emptied state that refuses the first
		// rows again can do no better: the query is past its budget.
		var nf *notFoldedError
		switch {
		case !errors.As(err, &nf):
			return a.spill()
		case spilled && nf.at == 0:
			return err
		}
		if err := a.spill(); err != nil {
			return err
		}
		if nf.at > 0 {
			rest := rec.NewSlice(int64(nf.at), rec.NumRows())
			rec.Release()
			rec = rest
		}
	}
}

// over reports whether the state goes to disk: past its limit, or when
// the rest of its query holds more than the budget leaves it beside that
// limit (a scan's read-ahead, the records between operators). The limit
// is the state's part of the budget; the others' part is what is left,
// and when they overrun it the state is what can give memory back: kept,
// the next charge anywhere in the query (a scan's next batch) is refused
// and fails the query, as a DISTINCT under 10 MiB did with its state at
// 4.8 of its 5 MiB.
func (a *SpillAggregate) over() bool {
	state := a.h.StateBytes()
	if state > a.limit {
		return true
	}
	used, budget := a.acct.Budget()
	return state > 0 && a.limit > 0 && budget > a.limit && used-state > budget-a.limit
}

// spill writes the partial states held to the partition files and starts
// a new partial aggregation.
func (a *SpillAggregate) spill() error {
	recs, err := a.h.Advance(math.MaxInt64)
	a.h.Release()
	if err == nil {
		a.h, err = NewHashAggregate(a.mem, a.partial, a.in, a.fns)
	}
	if err == nil {
		err = a.h.Charge(a.acct)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if err != nil {
		return err
	}
	if a.parts == nil {
		if a.dir, err = os.MkdirTemp("", "tierflow-spill-*"); err != nil {
			return fmt.Errorf("spill: %w", err)
		}
		for i := range SpillPartitions {
			p, err := createSpillFile(a.dir, fmt.Sprintf("%s/%d.arrow", a.dir, i), a.mid, a.mem)
			if err != nil {
				return err
			}
			a.parts = append(a.parts, p)
		}
	}
	keys := make([]int, len(a.partial.Group))
	for i := range keys {
		keys[i] = i
	}
	part := dataflow.HashColumns(keys...)
	for _, rec := range recs {
		dst := make([]uint32, rec.NumRows())
		if len(keys) > 0 {
			if err := part(rec, SpillPartitions, dst); err != nil {
				return err
			}
		}
		if err := writeSplit(a.mem, a.parts, rec, dst); err != nil {
			return err
		}
		if a.stats != nil {
			a.stats.Rows.Add(rec.NumRows())
		}
	}
	if a.stats != nil {
		a.stats.Spills.Add(1)
	}
	return nil
}

// OnFrontier emits the result when the input ends.
func (a *SpillAggregate) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if f != dataflow.Closed {
		return a.last.follow(a.held, f)
	}
	if err := a.last.reach(a.held); err != nil {
		return err
	}
	if a.parts == nil {
		// Nothing went to disk: the final phase takes the partial states.
		recs, err := a.h.Advance(math.MaxInt64)
		if err != nil {
			return err
		}
		if err := a.combine(ctx, func(add func(arrow.Record) error) error {
			for i, r := range recs {
				if err := add(r); err != nil {
					releaseAll(recs[i:])
					return err
				}
				r.Release()
			}
			return nil
		}); err != nil {
			return err
		}
		a.held.Drop()
		return nil
	}
	if err := a.spill(); err != nil {
		return err
	}
	for _, p := range a.parts {
		if err := p.finish(); err != nil {
			return err
		}
	}
	for _, p := range a.parts {
		err := a.combine(ctx, func(add func(arrow.Record) error) error { return readSpill(a.mem, p.f, add) })
		if err != nil {
			return err
		}
		if len(a.final.Group) == 0 {
			break // no key: every partial row went to the first file
		}
	}
	a.held.Drop()
	return nil
}

// combine runs the final phase over the partial rows feed gives and emits
// its result.
func (a *SpillAggregate) combine(ctx *dataflow.Context, feed func(add func(arrow.Record) error) error) error {
	fh, err := NewHashAggregate(a.mem, a.final, a.mid, a.fns)
	if err != nil {
		return err
	}
	defer fh.Release()
	if err := fh.Charge(a.acct); err != nil {
		return err
	}
	if err := feed(fh.Add); err != nil {
		return err
	}
	recs, err := fh.Advance(math.MaxInt64)
	if err != nil {
		return err
	}
	for i, rec := range recs {
		if err := ctx.Emit(0, a.held, rec); err != nil {
			releaseAll(recs[i+1:])
			return err
		}
	}
	return nil
}

func releaseAll(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

func (a *SpillAggregate) Close(*dataflow.Context) error {
	if a.held != nil {
		a.held.Drop()
	}
	if a.h != nil {
		a.h.Release()
	}
	for _, p := range a.parts {
		p.f.Close()
	}
	if a.dir != "" {
		os.RemoveAll(a.dir)
	}
	return nil
}

// StateBytes estimates the memory the groups held take: per group its key
// values and hash table entry, 16 bytes per aggregate, and the bytes of its
// string keys (kept in the builder and in the table).
func (h *HashAggregate) StateBytes() int64 {
	var n int64
	for _, w := range h.windows {
		g := int64(w.keys.n)
		n += g * int64(32+16*len(w.accs)+8*len(w.keys.keys))
		for _, b := range w.keys.keys {
			if sb, ok := b.(*array.StringBuilder); ok {
				n += 2 * int64(sb.DataLen())
			}
		}
	}
	return n
}
