package rel

import (
	"cmp"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
)

// TopN is ORDER BY keys LIMIT n in one operator: instead of holding and
// sorting every row it keeps the best n seen so far, and a row that does not
// beat the n-th best is dropped as it arrives, so it costs a key comparison
// per row and memory for about 2n rows. Its answer is exactly the stable
// sort's first n rows: ties keep their arrival order, because a row enters
// only when strictly better than the n-th best and candidates are re-sorted
// stably in arrival order.
//
// Like Sort it works per epoch (NewTopN: over a windowed aggregation, each
// window's top n) or over the whole input, emitted when the input ends
// (NewTopNAtEnd).
type TopN struct {
	dataflow.Base
	n      int64
	keys   []SortKey
	evs    []*eval.Evaluator
	in     *arrow.Schema
	c      opCtx
	states map[dataflow.Epoch]*topState
	atEnd  bool
	held   *dataflow.Capability
	fns    *functions.Registry
	// within: a top n at the end that spills (NewTopNAtEndWithin), or
	// nil; sorted, once its rows passed its memory, the spilling sort it
	// hands them to.
	within *topWithin
	sorted *Sort
}

// topWithin is where a top n at the end hands its rows to a spilling sort:
// when the rows it holds are over its budget as a sort's are (overBudget).
type topWithin struct {
	limit int64
	stats *SpillStats
}

// topState is the best rows of one epoch: candidate records in arrival
// order (the last compaction's survivors first) and, once n rows survived a
// compaction, the n-th best row's keys as the bar a new row must beat.
type topState struct {
	pool    []arrow.Record
	rows    int64
	bar     []arrow.Array // key arrays of the compacted record
	barRow  int
	compact arrow.Record // owns bar's rows
	// acct and charged: the pool's record headers, charged to the
	// operator's account.
	acct    *dataflow.Account
	charged int64
}

// recharge sets what st charges to its pool's headers now.
func (st *topState) recharge() error {
	n := recordsGoBytes(st.pool)
	if d := n - st.charged; d > 0 {
		if err := st.acct.Grow(d); err != nil {
			return err
		}
	} else {
		st.acct.Shrink(-d)
	}
	st.charged = n
	return nil
}

// NewTopN keeps each epoch's first n rows in key order.
func NewTopN(n int64, keys []SortKey, in *arrow.Schema, fns *functions.Registry) (*TopN, error) {
	t := &TopN{n: n, keys: keys, in: in, fns: fns, states: map[dataflow.Epoch]*topState{}}
	for _, k := range keys {
		ev, err := eval.Compile(k.Expr, in, fns)
		if err != nil {
			return nil, err
		}
		t.evs = append(t.evs, ev)
	}
	return t, nil
}

// NewTopNAtEnd keeps the whole input's first n rows in key order and emits
// them once the input has ended.
func NewTopNAtEnd(n int64, keys []SortKey, in *arrow.Schema, fns *functions.Registry) (*TopN, error) {
	t, err := NewTopN(n, keys, in, fns)
	if err != nil {
		return nil, err
	}
	t.atEnd = true
	return t, nil
}

// NewTopNAtEndWithin is NewTopNAtEnd whose rows, when n of them pass half
// limit bytes (0: only when its query's budget is a third full), go to a
// sort in runs on disk that keeps a run's first n rows and merges to the
// first n (a deep page: ORDER BY ... LIMIT 10 OFFSET 2500000); stats count
// the runs, and may be nil. Keys that do not encode never spill.
func NewTopNAtEndWithin(n int64, keys []SortKey, in *arrow.Schema, fns *functions.Registry, limit int64, stats *SpillStats) (*TopN, error) {
	t, err := NewTopNAtEnd(n, keys, in, fns)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if !orderable(k.Expr.Type()) {
			return t, nil
		}
	}
	t.within = &topWithin{limit: limit, stats: stats}
	return t, nil
}

func (t *TopN) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	if !t.atEnd {
		return nil
	}
	var err error
	t.held, err = cap.Retain()
	return err
}

func (t *TopN) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	e := b.Epoch
	if t.atEnd {
		e = 0
	}
	st := t.states[e]
	if st == nil {
		if !t.atEnd {
			if err := ctx.NotifyAt(cap, e); err != nil {
				b.Record.Release()
				return err
			}
		}
		st = &topState{acct: ctx.Memory()}
		t.states[e] = st
	}
	if t.sorted != nil {
		return t.sorted.OnBatch(ctx, 0, b, cap)
	}
	if err := t.add(ctx, t.c.get(ctx), st, b.Record); err != nil {
		return err
	}
	if w := t.within; w != nil && w.over(ctx.Memory(), st) {
		return t.spillTo(ctx, st)
	}
	return nil
}

// over reports whether the rows st holds go to a sort on disk.
func (w *topWithin) over(acct *dataflow.Account, st *topState) bool {
	if _, budget := acct.Budget(); w.limit <= 0 && budget <= 0 {
		return false
	}
	var held int64
	for _, r := range st.pool {
		held += arrowx.RecordBytes(r)
	}
	return overBudget(acct, w.limit, held)
}

// spillTo hands the rows st holds to a spilling sort (newTopSort), which
// takes every row from now on.
func (t *TopN) spillTo(ctx *dataflow.Context, st *topState) error {
	s, err := newTopSort(t)
	if err != nil {
		return err
	}
	t.sorted = s
	pool := st.pool
	st.pool, st.rows = nil, 0
	_ = st.recharge()
	st.dropBar()
	for i, r := range pool {
		if err := s.OnBatch(ctx, 0, dataflow.Batch{Record: r}, nil); err != nil {
			releaseAll(pool[i+1:])
			return err
		}
	}
	if len(s.pending[0]) > 0 {
		return s.spillRun(ctx)
	}
	return nil
}

// add takes rec's rows that beat the bar into the pool (rec is consumed),
// compacting the pool to the best n once it holds twice that.
func (t *TopN) add(ctx *dataflow.Context, c *functions.Ctx, st *topState, rec arrow.Record) error {
	if t.n <= 0 || rec.NumRows() == 0 {
		rec.Release()
		return nil
	}
	if st.bar != nil {
		karr, err := evalKeys(c, t.evs, rec)
		if err != nil {
			rec.Release()
			return err
		}
		sel := t.beating(karr, st, int(rec.NumRows()))
		releaseArrays(karr)
		switch {
		case len(sel) == 0:
			rec.Release()
			return nil
		case len(sel) < int(rec.NumRows()):
			g, err := eval.GatherRecord(c.Context(), c.Mem, rec, sel)
			rec.Release()
			if err != nil {
				return err
			}
			rec = g
		}
	}
	st.pool = append(st.pool, rec)
	st.rows += rec.NumRows()
	if err := ctx.Memory().Grow(recordGoBytes(rec)); err != nil {
		return err
	}
	st.charged += recordGoBytes(rec)
	if st.rows >= max(2*t.n, 1024) || (st.bar == nil && st.rows >= t.n) {
		return t.compact(ctx, c, st)
	}
	return nil
}

// beating lists the rows of a batch (its key arrays) strictly before the bar.
func (t *TopN) beating(karr []arrow.Array, st *topState, n int) []int32 {
	cmps := make([]func(i int) int, len(karr))
	for k, a := range karr {
		f := rowVsBar(a, st.bar[k], st.barRow)
		if t.keys[k].Desc {
			cmps[k] = func(i int) int { return -f(i) }
		} else {
			cmps[k] = f
		}
	}
	var sel []int32
	for i := 0; i < n; i++ {
		for _, f := range cmps {
			if c := f(i); c != 0 {
				if c < 0 {
					sel = append(sel, int32(i))
				}
				break
			}
		}
	}
	return sel
}

// compact sorts the pool stably and keeps its first n rows; with n rows
// kept, the last one is the new bar.
func (t *TopN) compact(ctx *dataflow.Context, c *functions.Ctx, st *topState) error {
	sorted, err := sortCharged(ctx, c, t.in, st.pool, t.evs, t.keys)
	for _, r := range st.pool {
		r.Release()
	}
	st.pool, st.rows = nil, 0
	_ = st.recharge() // the old pool's headers go
	st.dropBar()
	if err != nil || sorted == nil {
		return err
	}
	if sorted.NumRows() > t.n {
		s := sorted.NewSlice(0, t.n)
		sorted.Release()
		sorted = s
	}
	st.pool, st.rows = []arrow.Record{sorted}, sorted.NumRows()
	if err := st.recharge(); err != nil {
		return err
	}
	if sorted.NumRows() == t.n {
		karr, err := evalKeys(c, t.evs, sorted)
		if err != nil {
			return err
		}
		sorted.Retain()
		st.bar, st.barRow, st.compact = karr, int(t.n-1), sorted
	}
	return nil
}

func (st *topState) dropBar() {
	releaseArrays(st.bar)
	st.bar = nil
	if st.compact != nil {
		st.compact.Release()
		st.compact = nil
	}
}

func (st *topState) release() {
	st.dropBar()
	for _, r := range st.pool {
		r.Release()
	}
	st.pool = nil
	_ = st.recharge()
}

func (t *TopN) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	st := t.states[cap.Epoch()]
	delete(t.states, cap.Epoch())
	return t.emit(ctx, cap, st)
}

// OnFrontier emits the whole input's top rows when it has ended
// (NewTopNAtEnd).
func (t *TopN) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if !t.atEnd || f != dataflow.Closed || t.held == nil {
		return nil
	}
	st := t.states[0]
	delete(t.states, 0)
	var err error
	if t.sorted != nil {
		if st != nil {
			st.release()
		}
		err = t.sorted.emitSpilled(ctx, t.held)
	} else {
		err = t.emit(ctx, t.held, st)
	}
	t.held.Drop()
	t.held = nil
	return err
}

func (t *TopN) emit(ctx *dataflow.Context, cap *dataflow.Capability, st *topState) error {
	if st == nil {
		return nil
	}
	defer st.release()
	if len(st.pool) == 0 {
		return nil
	}
	if err := t.compact(ctx, t.c.get(ctx), st); err != nil || len(st.pool) == 0 {
		return err
	}
	out := st.pool[0]
	out.Retain()
	return ctx.Emit(0, cap, out)
}

func (t *TopN) Close(*dataflow.Context) error {
	if t.held != nil {
		t.held.Drop()
		t.held = nil
	}
	for _, st := range t.states {
		st.release()
	}
	t.states = nil
	if t.sorted != nil {
		_ = t.sorted.Close(nil)
	}
	return nil
}

// rowVsBar compares row i of a batch's key array with row j of the bar's,
// with compareRows's order (NULL after every value). The type switch runs
// once per batch, not per row.
func rowVsBar(a, bar arrow.Array, j int) func(i int) int {
	if bar.IsNull(j) {
		return func(i int) int {
			if a.IsNull(i) {
				return 0
			}
			return -1
		}
	}
	nullable := a.NullN() > 0
	typed := func(f func(i int) int) func(i int) int {
		if !nullable {
			return f
		}
		return func(i int) int {
			if a.IsNull(i) {
				return 1
			}
			return f(i)
		}
	}
	switch x := a.(type) {
	case *array.Int64:
		v := bar.(*array.Int64).Value(j)
		return typed(func(i int) int { return cmp.Compare(x.Value(i), v) })
	case *array.Int32:
		v := bar.(*array.Int32).Value(j)
		return typed(func(i int) int { return cmp.Compare(x.Value(i), v) })
	case *array.Float64:
		v := bar.(*array.Float64).Value(j)
		return typed(func(i int) int { return cmpOrdered(x.Value(i), v) })
	case *array.Float32:
		v := bar.(*array.Float32).Value(j)
		return typed(func(i int) int { return cmpOrdered(x.Value(i), v) })
	case *array.String:
		v := bar.(*array.String).Value(j)
		return typed(func(i int) int { return cmp.Compare(x.Value(i), v) })
	case *array.Timestamp:
		v := bar.(*array.Timestamp).Value(j)
		return typed(func(i int) int { return cmp.Compare(x.Value(i), v) })
	case *array.Decimal128:
		v := bar.(*array.Decimal128).Value(j)
		return typed(func(i int) int { return functions.CompareDecimal(x.Value(i), v) })
	case *array.Date32:
		v := bar.(*array.Date32).Value(j)
		return typed(func(i int) int { return cmp.Compare(x.Value(i), v) })
	}
	// Other types: the sort's own comparison, across the two arrays.
	return typed(func(i int) int {
		return cmp.Compare(a.ValueStr(i), bar.ValueStr(j))
	})
}
