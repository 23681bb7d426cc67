package rel

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// WindowJoinSpec joins two streams per TUMBLE window of Size on each side's
// event time (LeftTime, RightTime): rows join when their keys match and they
// fall in the same window (Flink's window join). A window is joined and
// forgotten when both inputs' frontiers pass its end.
type WindowJoinSpec struct {
	Join      JoinSpec
	LeftTime  expr.Expr
	RightTime expr.Expr
	Size      time.Duration
}

// WindowJoin is the windowed stream-stream join operator (input 0 left,
// input 1 right).
type WindowJoin struct {
	dataflow.Base
	spec        WindowJoinSpec
	left, right *arrow.Schema
	fns         *functions.Registry
	timeEv      [2]*eval.Evaluator
	c           opCtx
	windows     map[int64]*[2][]arrow.Record
	closed      int64
	held        *dataflow.Capability
	stats       *Stats
}

// NewWindowJoin makes a window join instance; stats may be nil.
func NewWindowJoin(spec WindowJoinSpec, left, right *arrow.Schema, fns *functions.Registry, stats *Stats) (*WindowJoin, error) {
	if spec.Size <= 0 {
		return nil, fmt.Errorf("%w: window join needs a positive window size", ErrPlan)
	}
	w := &WindowJoin{spec: spec, left: left, right: right, fns: fns, windows: map[int64]*[2][]arrow.Record{}, closed: math.MinInt64, stats: stats}
	for i, te := range []expr.Expr{spec.LeftTime, spec.RightTime} {
		if te.Type().ID() != arrow.TIMESTAMP {
			return nil, fmt.Errorf("%w: window join time %s is %s, want TIMESTAMP", ErrPlan, te, expr.TypeName(te.Type()))
		}
		ev, err := eval.Compile(te, []*arrow.Schema{left, right}[i], fns)
		if err != nil {
			return nil, err
		}
		w.timeEv[i] = ev
	}
	// Compile once up front so a bad spec fails at build time, not per window.
	if _, err := NewHashJoin(nil, spec.Join, left, right, fns); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *WindowJoin) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	w.held, err = cap.Retain()
	return err
}

func (w *WindowJoin) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, _ *dataflow.Capability) error {
	defer b.Record.Release()
	fc := w.c.get(ctx)
	ts, err := w.timeEv[input].Eval(fc, b.Record)
	if err != nil {
		return err
	}
	defer ts.Release()
	if u := ts.DataType().(*arrow.TimestampType).Unit; u != arrow.Microsecond {
		c, err := compute.CastArray(fc.Context(), ts, compute.SafeCastOptions(expr.Timestamp))
		if err != nil {
			return err
		}
		defer c.Release()
		ts = c
	}
	size := int64(w.spec.Size / time.Microsecond)
	tv := functions.Int64Values(ts)
	n := int(b.Record.NumRows())
	part := make([]uint32, n)
	index := map[int64]uint32{}
	var starts []int64
	dropped := uint32(math.MaxUint32)
	var late, nulls int64
	// A row is judged by its batch's epoch (the watermark of the rows
	// before it), not by how far the frontier had moved: the same rows are
	// late every run (docs/language.md, "Event time").
	lateBy := max(w.closed, Watermark(b.Epoch))
	for i := 0; i < n; i++ {
		if ts.IsNull(i) {
			nulls++ // no time, no window: dropped, and counted
			part[i] = dropped
			continue
		}
		s := floorDiv(tv[i], size) * size
		if s+size <= lateBy {
			late++
			part[i] = dropped
			continue
		}
		p, ok := index[s]
		if !ok {
			p = uint32(len(starts))
			index[s] = p
			starts = append(starts, s)
		}
		part[i] = p
	}
	if w.stats != nil {
		w.stats.RowsIn.Add(int64(n))
		w.stats.Late.Add(late)
		w.stats.NullTimes.Add(nulls)
	}
	sel := make([][]int32, len(starts))
	for i, p := range part {
		if p != dropped {
			sel[p] = append(sel[p], int32(i))
		}
	}
	for p, idx := range sel {
		var rec arrow.Record
		if len(idx) == n {
			rec = b.Record
			rec.Retain()
		} else if rec, err = eval.GatherRecord(fc.Context(), fc.Mem, b.Record, idx); err != nil {
			return err
		}
		st := w.windows[starts[p]]
		grow := recordGoBytes(rec)
		if st == nil {
			st = &[2][]arrow.Record{}
			w.windows[starts[p]] = st
			grow += windowOverheadBytes
		}
		st[input] = append(st[input], rec)
		// Held until both inputs pass the window: its records' and the
		// window's headers count (their buffers are counted where made).
		if err := ctx.Memory().Grow(grow); err != nil {
			return fmt.Errorf("%d open windows: %w", len(w.windows), err)
		}
	}
	return nil
}

// windowGoBytes is what Grow charged for a window's records.
func windowGoBytes(st *[2][]arrow.Record) int64 {
	return windowOverheadBytes + recordsGoBytes(st[0]) + recordsGoBytes(st[1])
}

// OnFrontier joins every window both inputs have completed.
func (w *WindowJoin) OnFrontier(ctx *dataflow.Context, _ int, _ dataflow.Epoch) error {
	f := ctx.Frontier()
	wm := Watermark(f)
	if wm <= w.closed {
		return nil
	}
	w.closed = wm
	size := int64(w.spec.Size / time.Microsecond)
	var due []int64
	for s := range w.windows {
		if s+size <= wm {
			due = append(due, s)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i] < due[j] })
	for _, s := range due {
		st := w.windows[s]
		delete(w.windows, s)
		held := windowGoBytes(st) // before joinWindow releases the records
		err := w.joinWindow(ctx, s+size, st)
		ctx.Memory().Shrink(held)
		if err != nil {
			return err
		}
	}
	if f == dataflow.Closed {
		w.held.Drop()
		return nil
	}
	if f > w.held.Epoch() {
		return w.held.Downgrade(f)
	}
	return nil
}

// joinWindow joins the window ending at end. Its pairs go out at the epoch
// of its end, as an aggregate's window does: never at the epoch the
// operator held when the frontier passed the end, where the frontier's
// previous step fell, which follows from how progress came, not from the
// data (a recovered query's replay, its frontier skipping many steps at
// once, sent them at earlier epochs than the first run, and the client
// dropped them as written: TestWindowJoinRowsGoOutAtTheirWindowsEnd). The
// window was open, so its end is past the epoch held (OnBatch drops the
// rows of windows the watermark closed), and due, so not past the
// frontier.
func (w *WindowJoin) joinWindow(ctx *dataflow.Context, end int64, st *[2][]arrow.Record) error {
	defer func() {
		for _, side := range st {
			for _, r := range side {
				r.Release()
			}
		}
	}()
	if len(st[0]) == 0 {
		return nil
	}
	if e := EpochOf(end); e > w.held.Epoch() {
		if err := w.held.Downgrade(e); err != nil {
			return err
		}
	}
	j, err := NewHashJoin(ctx.Allocator(), w.spec.Join, w.left, w.right, w.fns)
	if err != nil {
		return err
	}
	j.PauseWith(pauseOf(ctx))
	defer j.Release()
	if err := j.Build(st[1], w.right); err != nil {
		return err
	}
	acct := ctx.Memory()
	if err := acct.Grow(j.GoBytes()); err != nil {
		return err
	}
	defer acct.Shrink(j.GoBytes())
	for _, r := range st[0] {
		err := j.ProbeEach(r, func(out arrow.Record) error {
			if w.stats != nil {
				w.stats.RowsOut.Add(out.NumRows())
			}
			return ctx.Emit(0, w.held, out)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *WindowJoin) Close(*dataflow.Context) error {
	for _, st := range w.windows {
		for _, side := range st {
			for _, r := range side {
				r.Release()
			}
		}
	}
	w.windows = nil
	if w.held != nil {
		w.held.Drop()
	}
	return nil
}
