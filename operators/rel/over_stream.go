package rel

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// ErrStreamOver marks window functions a stream cannot evaluate row by row.
var ErrStreamOver = errors.New("window function not supported on a stream")

// WindowError is a window function that cannot run where it is, with the
// call to blame.
type WindowError struct {
	Func *logical.WindowFunc
	Msg  string
}

func (e *WindowError) Error() string { return e.Msg }
func (e *WindowError) Unwrap() error { return ErrStreamOver }

// CheckStreamOver reports whether funcs can run on an unbounded stream as
// Flink's OVER aggregation: aggregates (sum, count, avg, min, max) ordered by
// one TIMESTAMP column (the event time), over a frame that ends at the
// current row (ROWS n PRECEDING, RANGE INTERVAL ... PRECEDING, or from the
// partition's start). A frame reaching past the current row would wait for
// rows that have not arrived; ranking functions would rank them.
func CheckStreamOver(funcs []*logical.WindowFunc, in *arrow.Schema) error {
	var key string
	for _, f := range funcs {
		fail := func(format string, args ...any) error {
			return &WindowError{Func: f, Msg: fmt.Sprintf(format, args...)}
		}
		if !windowAggregate(f.Func) || f.Distinct {
			return fail("%s on a stream needs a window: apply it to the rows of GROUP BY TUMBLE(...) or HOP(...), or to a table (on a stream, OVER takes sum, count, avg, min or max)", f.Func)
		}
		if len(f.Order) != 1 || f.Order[0].Desc || !arrow.TypeEqual(f.Order[0].Expr.Type(), expr.Timestamp) {
			return fail("%s OVER (...) on a stream must ORDER BY its event time, one TIMESTAMP column ascending", f.Func)
		}
		if key == "" {
			key = f.Order[0].Expr.String()
		} else if key != f.Order[0].Expr.String() {
			return fail("the window functions of a stream query must all ORDER BY the same event time (%s and %s)", key, f.Order[0].Expr)
		}
		if f.Frame.End.Kind != logical.CurrentRow || f.Frame.Start.Kind != logical.OffsetPreceding && f.Frame.Start.Kind != logical.UnboundedPreceding {
			return fail("%s OVER (...) on a stream needs a frame that ends at the current row, e.g. RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW, ROWS BETWEEN 5 PRECEDING AND CURRENT ROW or the default (got %s)", f.Func, f.Frame)
		}
	}
	return nil
}

func windowAggregate(name string) bool {
	switch name {
	case "sum", "count", "avg", "min", "max":
		return true
	}
	return false
}

// StreamOver is Flink's OVER aggregation: every row gets its window
// functions' values over the rows before it in its partition (by event time),
// emitted once the watermark passes the row, when every row of its frame has
// arrived. A row older than the watermark when it arrives (the frontier's, or
// its batch's epoch) is late and dropped (as a closed window drops it), and so
// is a row without a time. It
// keeps only the rows later frames can reach: those within the largest
// RANGE interval of the watermark, and the last n rows per partition for
// ROWS n PRECEDING; a frame from the partition's start keeps a running
// aggregate per partition instead of rows.
type StreamOver struct {
	dataflow.Base
	w       *windowEval // every function: the output schema
	bounded *windowEval // the functions with bounded frames, or nil
	// at is each function's output position, by bounded then grow order.
	at      []int
	grow    []*growFunc
	ts      *eval.Evaluator
	c       opCtx
	held    *dataflow.Capability
	hist    arrow.Record   // rows already emitted that frames still need
	pending []arrow.Record // rows waiting for the watermark
	closed  int64          // the watermark rows were emitted up to (less lag)
	lag     int64          // µs the epochs run ahead of the ORDER BY time (SetLag)
	grain   int64          // µs of ORDER BY time that share an epoch (SetGrain), >= 1
	stats   *Stats
}

// SetLag makes the operator read its ORDER BY time as trailing the epochs
// by lag (a window's window_start, a closing GROUP BY's key: docs/language.md,
// "Event time"): rows are emitted, and judged late, that much later.
func (o *StreamOver) SetLag(lag time.Duration) { o.lag = lag.Microseconds() }

// SetGrain makes the rows whose ORDER BY times fall in one grain (whole
// multiples of it on the time's own axis) go out at one epoch: the grain's
// start plus the lag (due), and the operator holds its capability only at
// such epochs. A time that comes in grains (a closing GROUP BY's key: the
// groups whose keys fall in one grain go out together at the grain's end
// plus the key's lag) gains nothing from finer epochs: every row of a
// grain came at that one epoch, and its rows go out as they did before,
// when the watermark passes them. What changes is the records: one per
// grain, not one per distinct time (Nexmark's q6: 60,000 auctions, each
// expiring at its own millisecond). 0 or less keeps one epoch per time.
func (o *StreamOver) SetGrain(grain time.Duration) { o.grain = max(1, grain.Microseconds()) }

// due is the epoch a row with ORDER BY time t goes out at: the start of
// its grain plus the lag, never before the watermark could pass the row's
// grain (a row is emitted once the watermark passes t + lag, which is at
// or past it) and the same whatever the frontier's steps.
func (o *StreamOver) due(t int64) dataflow.Epoch {
	return EpochOf(floorDiv(t, o.grain)*o.grain + o.lag)
}

// behind is the ORDER BY time's watermark at watermark wm.
func (o *StreamOver) behind(wm int64) int64 {
	if wm == math.MaxInt64 || wm == math.MinInt64 {
		return wm
	}
	return wm - o.lag
}

// NewStreamOver builds the operator; stats may be nil.
func NewStreamOver(funcs []*logical.WindowFunc, names []string, in *arrow.Schema, fns *functions.Registry, stats *Stats) (*StreamOver, error) {
	if err := CheckStreamOver(funcs, in); err != nil {
		return nil, err
	}
	w, err := newWindowEval(funcs, names, in, fns)
	if err != nil {
		return nil, err
	}
	ts, err := eval.Compile(funcs[0].Order[0].Expr, in, fns)
	if err != nil {
		return nil, err
	}
	o := &StreamOver{w: w, ts: ts, closed: math.MinInt64, grain: 1, stats: stats}
	var bf []*logical.WindowFunc
	var bn []string
	for i, f := range funcs {
		if f.Frame.Start.Kind == logical.OffsetPreceding {
			bf, bn = append(bf, f), append(bn, names[i])
			o.at = append(o.at, i)
		}
	}
	for i, f := range funcs {
		if f.Frame.Start.Kind != logical.UnboundedPreceding {
			continue
		}
		g := &growFunc{f: f, acc: map[string]*runAcc{}}
		if len(f.Args) > 0 {
			if g.arg, err = eval.Compile(f.Args[0], in, fns); err != nil {
				return nil, err
			}
		}
		for _, p := range f.Partition {
			ev, err := eval.Compile(p, in, fns)
			if err != nil {
				return nil, err
			}
			g.part = append(g.part, ev)
		}
		o.grow = append(o.grow, g)
		o.at = append(o.at, i)
	}
	if len(bf) > 0 {
		if o.bounded, err = newWindowEval(bf, bn, in, fns); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// growFunc is an aggregate over a frame from its partition's start: a
// running aggregate per partition carries it from one watermark to the next.
type growFunc struct {
	f    *logical.WindowFunc
	arg  *eval.Evaluator // nil for count(*)
	part []*eval.Evaluator
	acc  map[string]*runAcc
}

// runAcc is one partition's running aggregate.
type runAcc struct {
	rows, n int64 // rows, and rows with a value
	isum    int64
	fsum    float64
	ext     any // min or max so far
}

// partitions counts the running aggregates' partitions.
func (o *StreamOver) partitions() int {
	n := 0
	for _, g := range o.grow {
		n += len(g.acc)
	}
	return n
}

// Schema is the output: the input's columns, then the functions'.
func (o *StreamOver) Schema() *arrow.Schema { return o.w.out }

func (o *StreamOver) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	o.held, err = cap.Retain()
	return err
}

// OnBatch drops late and timeless rows and keeps the rest until the
// watermark passes them.
func (o *StreamOver) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	defer b.Record.Release()
	if o.stats != nil {
		o.stats.RowsIn.Add(b.Record.NumRows())
	}
	c := o.c.get(ctx)
	ts, err := o.ts.Eval(c, b.Record)
	if err != nil {
		return err
	}
	defer ts.Release()
	tv := functions.Int64Values(ts)
	keep := make([]int32, 0, len(tv))
	// The batch's epoch is its source's watermark when it was sent: a row
	// older than that is late whether or not this operator has seen the
	// frontier move there yet, so which rows are late does not depend on
	// scheduling.
	closed := max(o.closed, o.behind(Watermark(b.Epoch)))
	for i := range tv {
		switch {
		case ts.IsNull(i):
			if o.stats != nil {
				o.stats.NullTimes.Add(1)
			}
		case tv[i] < closed:
			if o.stats != nil {
				o.stats.Late.Add(1)
			}
		default:
			keep = append(keep, int32(i))
		}
	}
	if len(keep) == 0 {
		return nil
	}
	r := b.Record
	if len(keep) == len(tv) {
		r.Retain()
	} else if r, err = eval.GatherRecord(c.Context(), c.Mem, b.Record, keep); err != nil {
		return err
	}
	o.pending = append(o.pending, r)
	return ctx.Memory().Grow(recordGoBytes(r))
}

// partitionGoBytes is a running aggregate's partition: its map entry, key
// and accumulator.
const partitionGoBytes = 160

// goBytes is what the operator keeps beside its records' buffers: the
// pending and history records' headers and the running aggregates'
// partitions.
func (o *StreamOver) goBytes() int64 {
	n := recordsGoBytes(o.pending)
	if o.hist != nil {
		n += recordGoBytes(o.hist)
	}
	for _, g := range o.grow {
		n += int64(len(g.acc)) * partitionGoBytes
	}
	return n
}

// OnFrontier emits the rows the watermark has passed.
func (o *StreamOver) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if o.held == nil {
		return nil
	}
	wm := o.behind(Watermark(f))
	if wm > o.closed {
		if err := o.advance(ctx, wm); err != nil {
			return err
		}
		o.closed = wm
		if err := ctx.Memory().Resize(o.goBytes()); err != nil {
			return fmt.Errorf("%d partitions: %w", o.partitions(), err)
		}
	}
	if f == dataflow.Closed {
		o.held.Drop()
		o.held = nil
		return nil
	}
	// Every row still to go out has time at or past the watermark (older
	// ones are late), so its epoch is at or past the watermark's own.
	if e := o.due(wm); e > o.held.Epoch() {
		return o.held.Downgrade(e)
	}
	return nil
}

func (o *StreamOver) advance(ctx *dataflow.Context, wm int64) error {
	c := o.c.get(ctx)
	// Split the pending rows into those the watermark passed and the rest.
	var ready, rest []arrow.Record
	defer func() { releaseRecords(ready) }()
	for i, r := range o.pending {
		// On an error, the records not yet split stay pending (Close
		// releases them), so none is released twice.
		fail := func(err error) error {
			o.pending = append(rest, o.pending[i:]...)
			return err
		}
		ts, err := o.ts.Eval(c, r)
		if err != nil {
			return fail(err)
		}
		tv := functions.Int64Values(ts)
		var now, later []int32
		for j, t := range tv {
			if t < wm {
				now = append(now, int32(j))
			} else {
				later = append(later, int32(j))
			}
		}
		ts.Release()
		switch {
		case len(later) == 0:
			ready = append(ready, r)
			continue
		case len(now) == 0:
			rest = append(rest, r)
			continue
		}
		a, err := eval.GatherRecord(c.Context(), c.Mem, r, now)
		if err != nil {
			return fail(err)
		}
		ready = append(ready, a)
		l, err := eval.GatherRecord(c.Context(), c.Mem, r, later)
		if err != nil {
			return fail(err)
		}
		rest = append(rest, l)
		r.Release()
	}
	o.pending = rest
	if len(ready) == 0 {
		return nil
	}
	var histN int64
	recs := ready
	if o.hist != nil {
		histN = o.hist.NumRows()
		recs = append([]arrow.Record{o.hist}, ready...)
	}
	all, err := concatRecords(c, o.w.in, recs)
	if err != nil {
		return err
	}
	defer all.Release()
	n := int(all.NumRows())
	rdy := all.NewSlice(histN, int64(n))
	defer rdy.Release()
	var res []arrow.Array
	defer func() { releaseArrays(res) }()
	if o.bounded != nil {
		retain := make([]bool, n)
		full, err := o.bounded.results(c, all, func(s *sorted) { o.retain(s, retain) })
		if err != nil {
			return err
		}
		for _, r := range full {
			res = append(res, array.NewSlice(r, histN, int64(n)))
		}
		releaseArrays(full)
		if err := o.keep(c, all, retain, wm); err != nil {
			return err
		}
	}
	for _, g := range o.grow {
		a, err := o.running(c, g, rdy)
		if err != nil {
			return err
		}
		res = append(res, a)
	}
	cols := make([]arrow.Array, len(o.w.out.Fields()))
	copy(cols, rdy.Columns())
	for k, r := range res {
		cols[len(rdy.Columns())+o.at[k]] = r
	}
	out := array.NewRecord(o.w.out, cols, rdy.NumRows())
	if o.stats != nil {
		o.stats.RowsOut.Add(out.NumRows())
	}
	return o.emitDue(ctx, c, rdy, out)
}

// emitDue sends each row of out (rdy's rows, with the functions' values) at
// the epoch its own time makes it due: its ORDER BY time (its grain's
// start: SetGrain) plus the lag, the first epoch past which the watermark
// has passed it, as a window's rows go out at its end. Never at the epoch the operator happens to hold when the
// frontier passes the row: that is where the frontier's previous step
// fell, which follows from how progress came, not from the data. A
// recovered query replays its streams, their progress comes coalesced, and
// the frontier skips many steps at once; its rows then went out at epochs
// earlier than the first run's, and the client, which keeps of a replay
// only the epochs its sinks had not committed, took them for rows already
// written (Nexmark's q6 after a kill: 1,182 rows of 1,200). A row kept is
// never behind the held epoch (OnBatch drops those behind the watermark it
// reached, less the lag), so the clamp to it only holds for the initial
// epoch, before any frontier came.
func (o *StreamOver) emitDue(ctx *dataflow.Context, c *functions.Ctx, rdy, out arrow.Record) error {
	defer out.Release()
	ts, err := o.ts.Eval(c, rdy)
	if err != nil {
		return err
	}
	n := len(functions.Int64Values(ts))
	due := make([]dataflow.Epoch, n)
	inOrder := true
	for i, t := range functions.Int64Values(ts) {
		due[i] = max(o.due(t), o.held.Epoch())
		inOrder = inOrder && (i == 0 || due[i] >= due[i-1])
	}
	ts.Release()
	if !inOrder {
		// One record per epoch: the rows in the order of their epochs.
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(i)
		}
		sort.SliceStable(idx, func(a, b int) bool { return due[idx[a]] < due[idx[b]] })
		byDue, err := eval.GatherRecord(c.Context(), c.Mem, out, idx)
		if err != nil {
			return err
		}
		defer byDue.Release()
		out = byDue
		sorted := make([]dataflow.Epoch, n)
		for k, i := range idx {
			sorted[k] = due[i]
		}
		due = sorted
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && due[hi] == due[lo] {
			hi++
		}
		if err := o.held.Downgrade(due[lo]); err != nil {
			return err
		}
		if err := ctx.Emit(0, o.held, out.NewSlice(int64(lo), int64(hi))); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// keep makes the rows of all that later frames can reach the history: those
// retain marked, and those within the widest RANGE interval of the watermark.
func (o *StreamOver) keep(c *functions.Ctx, all arrow.Record, retain []bool, wm int64) error {
	if span, ok := o.rangeSpan(); ok {
		ts, err := o.ts.Eval(c, all)
		if err != nil {
			return err
		}
		for i, t := range functions.Int64Values(ts) {
			if float64(t) >= float64(wm)-span {
				retain[i] = true
			}
		}
		ts.Release()
	}
	var idx []int32
	for i, k := range retain {
		if k {
			idx = append(idx, int32(i))
		}
	}
	if o.hist != nil {
		o.hist.Release()
		o.hist = nil
	}
	if len(idx) == 0 {
		return nil
	}
	h, err := eval.GatherRecord(c.Context(), c.Mem, all, idx)
	if err != nil {
		return err
	}
	o.hist = h
	return nil
}

// running evaluates a frame from the partition's start over the ready rows,
// in event-time order, from each partition's running aggregate. Under RANGE
// a row's peers (same partition, same time) are in its frame, so a run of
// equal times is added before any of it is read.
func (o *StreamOver) running(c *functions.Ctx, g *growFunc, rec arrow.Record) (arrow.Array, error) {
	n := int(rec.NumRows())
	ts, err := o.ts.Eval(c, rec)
	if err != nil {
		return nil, err
	}
	defer ts.Release()
	tv := functions.Int64Values(ts)
	parts, err := evalKeys(c, g.part, rec)
	defer releaseArrays(parts)
	if err != nil {
		return nil, err
	}
	var arg arrow.Array
	var ints []int64
	var floats []float64
	if g.arg != nil {
		if arg, err = g.arg.Eval(c, rec); err != nil {
			return nil, err
		}
		defer arg.Release()
		if g.f.Func == "sum" || g.f.Func == "avg" {
			ints, floats = numbers(arg)
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tv[order[a]] < tv[order[b]] })
	accs := make([]*runAcc, n)
	var kb strings.Builder
	for i := range accs {
		kb.Reset()
		for _, p := range parts {
			fmt.Fprintf(&kb, "%T:%v|", functions.ValueAt(p, i), functions.ValueAt(p, i))
		}
		a, ok := g.acc[kb.String()]
		if !ok {
			a = &runAcc{}
			g.acc[kb.String()] = a
		}
		accs[i] = a
	}
	add := func(i int) {
		a := accs[i]
		a.rows++
		if arg == nil || arg.IsNull(i) {
			return
		}
		a.n++
		switch {
		case ints != nil:
			a.isum += ints[i]
		case floats != nil:
			a.fsum += floats[i]
		default:
			v := functions.ValueAt(arg, i)
			if a.ext == nil || (cmpValues(v, a.ext) > 0) == (g.f.Func == "max") && cmpValues(v, a.ext) != 0 {
				a.ext = v
			}
		}
	}
	out := make([]any, n)
	value := func(i int) {
		a := accs[i]
		switch g.f.Func {
		case "count":
			if arg == nil && g.arg == nil {
				out[i] = a.rows
			} else {
				out[i] = a.n
			}
		case "sum", "avg":
			if a.n == 0 {
				return
			}
			v := a.fsum
			if floats == nil {
				v = float64(a.isum)
			}
			switch {
			case g.f.Func == "avg":
				out[i] = v / float64(a.n)
			case floats == nil:
				out[i] = a.isum
			default:
				out[i] = v
			}
		default:
			out[i] = a.ext
		}
	}
	rows := g.f.Frame.Unit == logical.FrameRows
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && tv[order[hi]] == tv[order[lo]] {
			hi++
		}
		for _, i := range order[lo:hi] {
			add(i)
			if rows {
				value(i)
			}
		}
		if !rows {
			for _, i := range order[lo:hi] {
				value(i)
			}
		}
		lo = hi
	}
	return functions.ArrayOf(c.Mem, g.f.DataType, out)
}

// cmpValues orders two non-NULL values of one type (functions.ValueAt's).
func cmpValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		return cmpOrdered(x, b.(int64))
	case float64:
		return cmpOrdered(x, b.(float64))
	case string:
		return cmpOrdered(x, b.(string))
	case time.Time:
		return x.Compare(b.(time.Time))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	return cmpOrdered(fmt.Sprint(a), fmt.Sprint(b))
}

// retain marks, for the ROWS frames sorted by s, each partition's last n
// rows: the n PRECEDING of the next row to come.
func (o *StreamOver) retain(s *sorted, keep []bool) {
	var rows int64
	for _, cw := range o.bounded.funcs {
		if cw.f.Frame.Unit != logical.FrameRows {
			continue
		}
		rows = max(rows, int64(cw.f.Frame.Start.Offset))
	}
	if rows == 0 {
		return
	}
	for k := range s.perm {
		if int64(s.partEnd[k])-int64(k) <= rows {
			keep[s.perm[k]] = true
		}
	}
}

// rangeSpan is the widest RANGE interval of the functions.
func (o *StreamOver) rangeSpan() (float64, bool) {
	span, ok := 0.0, false
	for _, cw := range o.bounded.funcs {
		if cw.f.Frame.Unit == logical.FrameRange {
			span, ok = max(span, cw.f.Frame.Start.Offset), true
		}
	}
	return span, ok
}

func (o *StreamOver) Close(*dataflow.Context) error {
	if o.held != nil {
		o.held.Drop()
	}
	if o.hist != nil {
		o.hist.Release()
		o.hist = nil
	}
	releaseRecords(o.pending)
	o.pending = nil
	return nil
}

func releaseRecords(rs []arrow.Record) {
	for _, r := range rs {
		r.Release()
	}
}
