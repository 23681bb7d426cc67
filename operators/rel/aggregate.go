package rel

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// ErrPlan is the kind of errors in an operator's description (not its data).
var ErrPlan = errors.New("invalid operator")

// WindowSpec is a GROUP BY window over the event-time expression Time (a
// TIMESTAMP). Size is the length (TUMBLE, HOP), Slide the hop (HOP), Gap the
// inactivity gap (SESSION).
type WindowSpec struct {
	Type  expr.WindowType
	Time  expr.Expr
	Size  time.Duration
	Slide time.Duration
	Gap   time.Duration
	// Lag is how far the epochs of the rows run ahead of Time's value (0 for
	// a source's event time; an upstream window's size for its
	// window_start): windows close, and rows are judged late, that much
	// later, and a window's rows go out at the epoch of its end plus Lag.
	Lag time.Duration
	// ByKey: the window is a TUMBLE over group key Key, so its groups
	// close once the watermark passes their key's window (plus Lag), and
	// window_start and window_end are not output (a closing GROUP BY).
	ByKey bool
	Key   int
	// ProcTime: Time is processing time (PROCTIME()), which no watermark
	// follows: a window closes when a row brings a processing time at or
	// past its end, or when the input ends (Aggregate.OnBatch).
	ProcTime bool
}

// windowColumns reports whether the output has window_start and
// window_end.
func (s *AggregateSpec) windowColumns() bool { return s.Window != nil && !s.Window.ByKey }

// AggregateSpec describes a (windowed) hash aggregation. Output columns: the
// group keys, then window_start and window_end when windowed, then the
// aggregates.
type AggregateSpec struct {
	Group      []expr.Expr
	GroupNames []string
	Window     *WindowSpec
	Aggs       []*expr.Aggregate
	AggNames   []string
}

// OutputSchema is the schema of the aggregation's results.
func (s *AggregateSpec) OutputSchema() *arrow.Schema {
	var fs []arrow.Field
	for i, g := range s.Group {
		fs = append(fs, arrow.Field{Name: s.GroupNames[i], Type: g.Type(), Nullable: true})
	}
	if s.windowColumns() {
		fs = append(fs, arrow.Field{Name: "window_start", Type: expr.Timestamp}, arrow.Field{Name: "window_end", Type: expr.Timestamp})
	}
	for i, a := range s.Aggs {
		fs = append(fs, arrow.Field{Name: s.AggNames[i], Type: a.Type(), Nullable: true})
	}
	return arrow.NewSchema(fs, nil)
}

// HashAggregate is the aggregation kernel: Add folds batches in, Advance closes
// the windows a watermark completes and returns their rows.
type HashAggregate struct {
	mem     memory.Allocator
	fctx    *functions.Ctx
	spec    AggregateSpec
	schema  *arrow.Schema
	groupEv []*eval.Evaluator
	timeEv  *eval.Evaluator
	argEv   []*eval.Evaluator // nil entry for count(*)
	newAccs func() ([]functions.Accumulator, error)

	windows map[int64]*aggWindow // the one global group set (no window)
	cur     *aggWindow           // last window touched
	// slabs holds a TUMBLE or HOP aggregation's windows (window_slabs.go).
	slabs *windowSlabs

	sess *sessionState

	closed int64 // every window ending at or before closed has been emitted
	// at is the watermark the rows being added are judged by (JudgeAt):
	// their batch's epoch, the watermark of the rows before them in the
	// stream. A row whose every window ends at or before it is late even
	// while the window is still open here, so which rows are late follows
	// from the data, not from how far the frontier had moved when the
	// batch was processed.
	at    int64
	late  int64
	nulls int64

	gids []uint32
	ws   []int64

	inPlace int8 // foldsInPlace's answer: 0 not yet asked, 1 yes, -1 no

	// oneEpoch, when positive, is the most rows a record of closed TUMBLE
	// or HOP windows holds, several windows a record: the caller sends
	// all the windows an Advance closes at one epoch (SendAtOneEpoch).
	oneEpoch int

	// goBytes estimates what the open windows keep beside their Arrow
	// key builders (which the allocator counts): each window's tables and
	// accumulators, each group's hash entry and aggregate values, string
	// keys' copies (GoStateBytes).
	goBytes     int64
	sessBytes   int64
	acct        *dataflow.Account
	emptyWindow int64 // newWindowBytes, once known

	// pause, when set, is called after every windowsPerPause windows
	// opened (PauseWith): a batch that opens a window per row emits
	// nothing until its end, and pause is where its step meets its
	// query's turn.
	pause  func() error
	opened int
}

// windowsPerPause is how many windows a batch opens between two pauses:
// a few tenths of a millisecond of work each (opening one takes 2-5 us:
// its key table, builders and accumulators), so a pause comes well within
// a slice and costs nothing beside the windows (Yield is two atomic loads
// when nothing is due).
const windowsPerPause = 64

// PauseWith has Add call pause between windows it opens (see pause):
// dataflow.Yield under a shared worker. An error from pause ends the Add.
func (h *HashAggregate) PauseWith(pause func() error) { h.pause = pause }

type aggWindow struct {
	start, end int64
	keys       *keyTable
	accs       []functions.Accumulator
	// goBytes is this window's share of HashAggregate.goBytes.
	goBytes int64
}

// Per-window and per-group costs of GoStateBytes: a window's key table,
// builders and accumulator objects; a group's hash table entry and
// 16 bytes of each aggregate's state.
const (
	windowOverheadBytes = 512 + windowMapBytes
	// windowMapBytes is a window's entry in the map of open windows (key,
	// pointer, slack at the map's load factor and while it doubles).
	windowMapBytes   = 64
	accOverheadBytes = 128
	groupEntryBytes  = 32
	groupAccBytes    = 16
	// keyBuilderBytes is what an empty window's key builders take at
	// their first append (a builder reserves 32 values; Arrow pads a
	// buffer to 64 bytes), charged with the window before it is made.
	keyBuilderBytes = 512
)

// newWindowBytes is what opening one window costs before any key is in
// it: charged before the window is made (window). A TUMBLE or HOP window
// is a slot in the slabs, an id in their heap of ends and an entry in
// their map of open windows.
func (h *HashAggregate) newWindowBytes() int64 {
	if h.slabs != nil {
		return slabWindowBytes + windowEndBytes + windowMapBytes
	}
	if h.emptyWindow == 0 {
		t := newGroupKeyTable(h.mem, groupTypes(h.spec.Group))
		h.emptyWindow = int64(windowOverheadBytes+accOverheadBytes*len(h.spec.Aggs)) + t.goBytes() +
			int64(keyBuilderBytes*len(h.spec.Group))
		t.release()
	}
	return h.emptyWindow
}

// windowGoBytes is what w keeps beside its builders' buffers: its key
// table's slots as allocated (keyTable.goBytes), not per key, since a
// table is made with room and doubles.
func (h *HashAggregate) windowGoBytes(w *aggWindow) int64 {
	n := int64(windowOverheadBytes+accOverheadBytes*len(w.accs)) + w.keys.goBytes()
	n += int64(w.keys.n)*int64(groupAccBytes*len(w.accs)) + accStateBytes(w.accs)
	for _, b := range w.keys.keys {
		if sb, ok := b.(*array.StringBuilder); ok {
			n += int64(sb.DataLen()) // the hash table's copy of the key
		}
	}
	return n
}

// accStateBytes is what accs hold beyond their slots (a DISTINCT's sets,
// a quantile's values: functions.Sizer).
func accStateBytes(accs []functions.Accumulator) int64 {
	var n int64
	for _, a := range accs {
		if s, ok := a.(functions.Sizer); ok {
			n += s.StateBytes()
		}
	}
	return n
}

// sizerRowBytes bounds what one row adds to a Sizer accumulator (a set
// entry or a value and its slice's slack), beside a string's bytes.
const sizerRowBytes = 96

// rowsBound is at most what rows [from, to) add to w's accumulators
// beyond their slots: reserved before they are folded in (addTo).
func rowsBound(w *aggWindow, rows int) int64 {
	var n int64
	for _, a := range w.accs {
		if _, ok := a.(functions.Sizer); ok {
			n += int64(rows) * sizerRowBytes
		}
	}
	return n
}

// GoStateBytes estimates the memory the aggregation's open windows (or
// sessions) hold outside Arrow buffers: what its operator charges to the
// query's budget (dataflow.Context.Memory). Kept as rows arrive, so it
// costs nothing to read, however many windows are open.
func (h *HashAggregate) GoStateBytes() int64 { return h.goBytes + h.sessBytes }

// sessionGoBytes estimates what the open sessions keep: per session id its
// aggregate values and session record, per key its hash entry and list.
func (h *HashAggregate) sessionGoBytes() int64 {
	st := h.sess
	if st == nil {
		return 0
	}
	return int64(cap(st.sess))*int64(sessionBytes+groupAccBytes*len(st.accs)) + int64(st.keys.t.n)*(groupEntryBytes+48) + accStateBytes(st.accs)
}

// trackSessions charges the sessions' change since the last call.
func (h *HashAggregate) trackSessions() error {
	b := h.sessionGoBytes()
	if err := h.charge(b - h.sessBytes); err != nil {
		return err
	}
	h.sessBytes = b
	return nil
}

// track updates goBytes after w changed, and charges the difference to
// the account (Charge): a refusal is the aggregation's error.
func (h *HashAggregate) track(w *aggWindow) error {
	b := h.windowGoBytes(w)
	d := b - w.goBytes
	if err := h.charge(d); err != nil {
		return err // what was refused is not counted as charged
	}
	h.goBytes += d
	w.goBytes = b
	return nil
}

// reserve charges n more to w before it grows (track settles it after).
func (h *HashAggregate) reserve(w *aggWindow, n int64) error {
	if err := h.charge(n); err != nil {
		return err
	}
	w.goBytes += n
	h.goBytes += n
	return nil
}

// charge grows (or shrinks) the account by d.
func (h *HashAggregate) charge(d int64) error {
	if h.acct == nil {
		return nil
	}
	if d < 0 {
		h.acct.Shrink(-d)
		return nil
	}
	if err := h.acct.Grow(d); err != nil {
		return fmt.Errorf("%d open windows: %w", h.openWindows(), err)
	}
	return nil
}

// openWindows is the number of windows open.
func (h *HashAggregate) openWindows() int {
	if h.slabs != nil {
		return h.slabs.open()
	}
	return len(h.windows)
}

// trackSlabs charges the slabs' change since the last call (or reserve).
func (h *HashAggregate) trackSlabs() error {
	d := h.slabs.goBytes() - h.goBytes
	if err := h.charge(d); err != nil {
		return err
	}
	h.goBytes += d
	return nil
}

// Charge has the aggregation charge its state (GoStateBytes) to a, as it
// grows, window by window: past the budget, the batch that grows it fails
// with a dataflow.ErrMemory naming the operator (or, for a spilling
// aggregation, spills).
func (h *HashAggregate) Charge(a *dataflow.Account) error {
	h.acct = a
	return a.Resize(h.GoStateBytes())
}

// NewHashAggregate compiles spec against the input schema.
func NewHashAggregate(mem memory.Allocator, spec AggregateSpec, in *arrow.Schema, fns *functions.Registry) (*HashAggregate, error) {
	h := &HashAggregate{mem: mem, fctx: functions.NewCtx(mem), spec: spec, schema: spec.OutputSchema(),
		windows: map[int64]*aggWindow{}, closed: math.MinInt64, at: math.MinInt64}
	for _, g := range spec.Group {
		ev, err := eval.Compile(g, in, fns)
		if err != nil {
			return nil, err
		}
		h.groupEv = append(h.groupEv, ev)
	}
	if w := spec.Window; w != nil {
		if !expr.IsTemporal(w.Time.Type()) {
			return nil, fmt.Errorf("%w: window time %s is %s, want TIMESTAMP", ErrPlan, w.Time, expr.TypeName(w.Time.Type()))
		}
		switch {
		case w.Type == expr.Tumble && w.Size <= 0,
			w.Type == expr.Hop && (w.Size <= 0 || w.Slide <= 0),
			w.Type == expr.Session && w.Gap <= 0:
			return nil, fmt.Errorf("%w: %s window needs positive sizes", ErrPlan, w.Type)
		}
		ev, err := eval.Compile(w.Time, in, fns)
		if err != nil {
			return nil, err
		}
		h.timeEv = ev
	}
	type accMaker struct {
		name     string
		distinct bool
		arg, ret arrow.DataType
		params   []any // constant arguments after the first (quantile's q)
	}
	var makers []accMaker
	for _, a := range spec.Aggs {
		if a.Filter != nil {
			return nil, fmt.Errorf("%w: %s: FILTER (WHERE ...) on aggregates is not supported yet", ErrPlan, a)
		}
		m := accMaker{name: a.Func, distinct: a.Distinct, ret: a.DataType}
		if len(a.Args) > 0 {
			ev, err := eval.Compile(a.Args[0], in, fns)
			if err != nil {
				return nil, err
			}
			h.argEv = append(h.argEv, ev)
			m.arg = a.Args[0].Type()
			for _, p := range a.Args[1:] {
				v, ok := constValue(p)
				if !ok {
					return nil, fmt.Errorf("%w: %s: argument %s must be a constant", ErrPlan, a, p)
				}
				m.params = append(m.params, v)
			}
		} else {
			h.argEv = append(h.argEv, nil)
		}
		if _, err := fns.NewAccumulator(m.name, m.distinct, m.arg, m.ret, m.params...); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrPlan, a, err)
		}
		makers = append(makers, m)
	}
	h.newAccs = func() ([]functions.Accumulator, error) {
		out := make([]functions.Accumulator, len(makers))
		for i, m := range makers {
			acc, err := fns.NewAccumulator(m.name, m.distinct, m.arg, m.ret, m.params...)
			if err != nil {
				return nil, err
			}
			out[i] = acc
		}
		return out, nil
	}
	if spec.Window != nil && spec.Window.Type == expr.Session {
		accs, err := h.newAccs()
		if err != nil {
			return nil, err
		}
		h.sess = &sessionState{keys: &keyChunks{t: newGroupKeyTable(mem, groupTypes(spec.Group)), mem: mem}, accs: accs, byKey: map[uint32]uint32{}}
	} else if spec.Window != nil {
		slabs, err := h.freshSlabs()
		if err != nil {
			return nil, err
		}
		h.slabs, h.goBytes = slabs, slabs.goBytes()
	}
	return h, nil
}

func groupTypes(g []expr.Expr) []arrow.DataType {
	out := make([]arrow.DataType, len(g))
	for i, e := range g {
		out[i] = e.Type()
	}
	return out
}

// Schema is the output schema.
func (h *HashAggregate) Schema() *arrow.Schema { return h.schema }

// JudgeAt sets the watermark the rows of the next Add are judged late by:
// the epoch of the batch they came in (see HashAggregate.at).
func (h *HashAggregate) JudgeAt(watermark int64) { h.at = watermark }

// lateBy is the watermark a row's windows must end after to be on time.
func (h *HashAggregate) lateBy() int64 { return max(h.closed, h.at) }

// MaxTime is the latest window time among rec's rows (math.MinInt64 when
// none has one).
func (h *HashAggregate) MaxTime(rec arrow.Record) (int64, error) {
	m := int64(math.MinInt64)
	if h.timeEv == nil {
		return m, nil
	}
	a, err := h.timeEv.Eval(h.fctx, rec)
	if err != nil {
		return m, err
	}
	defer a.Release()
	for i, t := range functions.Int64Values(a) {
		if a.IsValid(i) {
			m = max(m, t)
		}
	}
	return m, nil
}

// Late is the number of rows dropped because their window had already closed.
func (h *HashAggregate) Late() int64 { return h.late }

// NullTimes is the number of rows dropped for a NULL event time.
func (h *HashAggregate) NullTimes() int64 { return h.nulls }

// releaseInputs releases what evalInputs made (any of them may be nil).
func releaseInputs(keys, args []arrow.Array, ts arrow.Array) {
	for _, a := range append(append(keys, args...), ts) {
		if a != nil {
			a.Release()
		}
	}
}

// growScratch makes the per-row group and window scratch hold n rows.
func (h *HashAggregate) growScratch(n int) {
	if cap(h.gids) < n {
		h.gids = make([]uint32, n)
		h.ws = make([]int64, n)
	}
}

// evalInputs computes the key, argument and time columns of rec.
func (h *HashAggregate) evalInputs(rec arrow.Record) (keys, args []arrow.Array, ts arrow.Array, err error) {
	release := func() { releaseInputs(keys, args, ts) }
	for _, ev := range h.groupEv {
		a, e := ev.Eval(h.fctx, rec)
		if e != nil {
			release()
			return nil, nil, nil, e
		}
		keys = append(keys, a)
	}
	for _, ev := range h.argEv {
		if ev == nil {
			args = append(args, nil)
			continue
		}
		a, e := ev.Eval(h.fctx, rec)
		if e != nil {
			release()
			return nil, nil, nil, e
		}
		args = append(args, a)
	}
	if h.timeEv != nil {
		a, e := h.timeEv.Eval(h.fctx, rec)
		if e == nil && !arrow.TypeEqual(a.DataType(), expr.Timestamp) {
			var c arrow.Array
			c, e = compute.CastArray(h.fctx.Context(), a, compute.SafeCastOptions(expr.Timestamp))
			a.Release()
			a = c
		}
		if e != nil {
			release()
			return nil, nil, nil, e
		}
		ts = a
	}
	return keys, args, ts, nil
}

// Add folds rec into the open windows.
func (h *HashAggregate) Add(rec arrow.Record) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	keys, args, ts, err := h.evalInputs(rec)
	if err != nil {
		return err
	}
	defer releaseInputs(keys, args, ts)
	h.growScratch(n)
	w := h.spec.Window
	switch {
	case w == nil:
		return h.addTo(0, 0, keys, args, nil, 0, n)
	case w.Type == expr.Tumble:
		return h.addWindows(keys, args, ts, int64(w.Size/time.Microsecond), int64(w.Size/time.Microsecond), 0)
	case w.Type == expr.Hop:
		size, slide := int64(w.Size/time.Microsecond), int64(w.Slide/time.Microsecond)
		if err := h.chargeHops(ts, size, slide); err != nil {
			return err
		}
		for j := int64(0); j*slide < size; j++ {
			if err := h.addWindows(keys, args, ts, size, slide, j); err != nil {
				return err
			}
		}
		return nil
	default:
		if err := h.addSessions(keys, args, ts, int64(w.Gap/time.Microsecond)); err != nil {
			return err
		}
		return h.trackSessions()
	}
}

// chargeHops refuses, before folding any row, a batch whose HOP windows
// could not all be opened within the budget: each row is in size/slide
// windows, and the batch needs every window from the one before its
// earliest row's to its latest row's (less those open already). Without
// it a window an hour long every millisecond would open its 3.6 million
// windows one by one, each pass over the whole batch, until the run time
// limit, not the memory it needs, ended it.
func (h *HashAggregate) chargeHops(ts arrow.Array, size, slide int64) error {
	if h.acct == nil || ts.Len() == ts.NullN() {
		return nil
	}
	tv := functions.Int64Values(ts)
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, t := range tv {
		if !ts.IsNull(i) {
			lo, hi = min(lo, t), max(hi, t)
		}
	}
	first := floorDiv(lo-size, slide) + 1 // the earliest window holding lo
	if late := h.lateBy(); late != math.MinInt64 {
		// Windows ending at or before the watermark take no rows.
		first = max(first, floorDiv(late-size, slide)+1)
	}
	last := floorDiv(hi, slide)
	need := last - first + 1 - int64(h.openWindows())
	if need <= 0 {
		return nil
	}
	b := h.newWindowBytes()
	if need > math.MaxInt64/b {
		need = math.MaxInt64 / b
	}
	if err := h.charge(need * b); err != nil {
		return fmt.Errorf("HOP(%s, %s) over rows %s apart needs %d windows open: %w",
			time.Duration(size)*time.Microsecond, time.Duration(slide)*time.Microsecond,
			time.Duration(hi-lo)*time.Microsecond, need, err)
	}
	_ = h.charge(-need * b) // the windows charge themselves as they open
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// addWindows assigns each row to the j-th window (counting back) that contains
// it, and folds runs of rows that share a window. For TUMBLE j is 0 and
// slide = size.
func (h *HashAggregate) addWindows(keys, args []arrow.Array, ts arrow.Array, size, slide, j int64) error {
	tv := functions.Int64Values(ts)
	n := ts.Len()
	ws := h.ws[:n]
	lateRow := func(i int) bool { return ws[i] == math.MinInt64 }
	for i := 0; i < n; i++ {
		if ts.IsNull(i) {
			if j == 0 {
				h.nulls++
			}
			ws[i] = math.MinInt64
			continue
		}
		start := floorDiv(tv[i], slide)*slide - j*slide
		if start+size <= tv[i] {
			ws[i] = math.MinInt64 // this HOP offset has no window holding the row
			continue
		}
		if start+size <= h.lateBy() {
			// j == 0 is the row's latest window: when it is closed, all are,
			// and the row is late (counted once).
			if j == 0 {
				h.late++
			}
			ws[i] = math.MinInt64
			continue
		}
		ws[i] = start
	}
	for i := 0; i < n; {
		if lateRow(i) {
			i++
			continue
		}
		k := i + 1
		for k < n && ws[k] == ws[i] {
			k++
		}
		if err := h.addTo(ws[i], ws[i]+size, keys, args, nil, i, k); err != nil {
			return err
		}
		i = k
	}
	return nil
}

// addTo folds rows [from, to) into the window [start, end), a chunk at a
// time (chunkRows). A refusal of the budget is a notFoldedError naming the
// first row not folded: the rows before it are in the state.
func (h *HashAggregate) addTo(start, end int64, keys, args []arrow.Array, _ []uint32, from, to int) error {
	if h.slabs != nil {
		return h.addToSlabs(start, end, keys, args, from, to)
	}
	w, err := h.window(start, end)
	if err != nil {
		return &notFoldedError{err: err, at: from}
	}
	for from < to {
		c := chunkRows(w, to-from)
		if err := h.reserveRows(w, c); err != nil {
			return &notFoldedError{err: err, at: from}
		}
		gids := h.gids[:c]
		w.keys.lookupBatch(keys, from, from+c, gids)
		for k, acc := range w.accs {
			acc.Grow(int(w.keys.n))
			acc.Update(gids, args[k], from)
			if err := accErr(acc, h.spec.Aggs[k]); err != nil {
				return err
			}
		}
		if err := h.track(w); err != nil {
			return err
		}
		from += c
	}
	return nil
}

// addToSlabs is addTo for a TUMBLE or HOP window (window_slabs.go).
func (h *HashAggregate) addToSlabs(start, end int64, keys, args []arrow.Array, from, to int) error {
	s := h.slabs
	w, err := h.slabWindow(start, end)
	if err != nil {
		return &notFoldedError{err: err, at: from}
	}
	for from < to {
		c := min(to-from, max(foldChunkRows, int(s.wins[w].n)))
		r := s.growBound(c)
		if err := h.charge(r); err != nil {
			return &notFoldedError{err: err, at: from}
		}
		h.goBytes += r
		gids := h.gids[:c]
		s.lookup(w, keys, from, from+c, gids)
		for k, acc := range s.accs {
			acc.Update(gids, args[k], from)
			if err := accErr(acc, h.spec.Aggs[k]); err != nil {
				return err
			}
		}
		if err := h.trackSlabs(); err != nil {
			return err
		}
		from += c
	}
	return nil
}

// slabWindow is the slot of the open window [start, end), made (and
// charged before it is made, as window does) when new.
func (h *HashAggregate) slabWindow(start, end int64) (uint32, error) {
	if w, ok := h.slabs.bySt[start]; ok {
		return w, nil
	}
	if h.opened++; h.pause != nil && h.opened%windowsPerPause == 0 {
		if err := h.pause(); err != nil {
			return 0, err
		}
	}
	b := h.newWindowBytes()
	if err := h.charge(b); err != nil {
		return 0, err
	}
	h.goBytes += b
	w, _ := h.slabs.window(start, end)
	return w, h.trackSlabs()
}

// foldChunkRows is the fewest rows folded under one reservation (a
// variable only so that BenchmarkFoldChunks can fold whole batches).
var foldChunkRows = 2048

// chunkRows is how many of the left rows the next fold into w takes: as
// many as w holds groups, at least foldChunkRows. The rows may each be a
// new group, so what is reserved before folding them (reserveRows) is at
// most about what w holds already: the reservation grows geometrically
// with the state, as the state's own tables do, instead of asking for a
// whole batch of new groups at once (a 122,880-row batch of TPC-H Q1's
// eight aggregates asked for 15 MiB to make 4 groups).
func chunkRows(w *aggWindow, left int) int {
	return min(left, max(foldChunkRows, int(w.keys.n)))
}

// reserveRows charges what rows more rows could add to w: the key table's
// growth and a slot per aggregate for each as a new group, and what the
// accumulators keep per row. track gives back what they did not take.
func (h *HashAggregate) reserveRows(w *aggWindow, rows int) error {
	return h.reserve(w, w.keys.growBound(rows)+int64(rows*groupAccBytes*len(w.accs))+rowsBound(w, rows))
}

// window is the open window [start, end), made when new.
func (h *HashAggregate) window(start, end int64) (*aggWindow, error) {
	w := h.cur
	if w == nil || w.start != start {
		w = h.windows[start]
		if w == nil {
			if h.opened++; h.pause != nil && h.opened%windowsPerPause == 0 {
				if err := h.pause(); err != nil {
					return nil, err
				}
			}
			// Charged before it is made: a query opening windows past
			// its budget is refused at the first one over, having
			// allocated nothing for it.
			b := h.newWindowBytes()
			if err := h.charge(b); err != nil {
				return nil, err
			}
			accs, err := h.newAccs()
			if err != nil {
				_ = h.charge(-b)
				return nil, err
			}
			w = &aggWindow{start: start, end: end, keys: newGroupKeyTable(h.mem, groupTypes(h.spec.Group)), accs: accs, goBytes: b}
			h.goBytes += b
			h.windows[start] = w
			if err := h.track(w); err != nil {
				return nil, err
			}
		}
		h.cur = w
	}
	return w, nil
}

// accErr is the failure of an accumulator that can fail (an integer sum
// that overflowed), naming the aggregate.
func accErr(acc functions.Accumulator, agg *expr.Aggregate) error {
	if f, ok := acc.(functions.Failer); ok {
		if err := f.Err(); err != nil {
			return &eval.ExprError{Expr: agg.String(), Err: err}
		}
	}
	return nil
}

// Advance closes every window that ends at or before watermark (math.MaxInt64
// closes all, including a non-windowed aggregation) and returns one record per
// closed window, in order of window end (sessions: one record; TUMBLE and HOP
// after SendAtOneEpoch: several windows a record). The caller owns the records.
func (h *HashAggregate) Advance(watermark int64) ([]arrow.Record, error) {
	if watermark <= h.closed || (h.spec.Window == nil && watermark != math.MaxInt64) {
		// A non-windowed aggregation over a stream has no end but the input's.
		return nil, nil
	}
	h.closed = watermark
	if h.sess != nil {
		out, err := h.closeSessions(watermark)
		_ = h.trackSessions()
		return out, err
	}
	if h.slabs != nil {
		out, _ := h.closeSlabs(watermark)
		return out, nil
	}
	if watermark == math.MaxInt64 && h.spec.Window == nil && len(h.spec.Group) == 0 && len(h.windows) == 0 {
		// An aggregate without GROUP BY has one row even over no rows
		// (count 0, the others NULL), as in SQL.
		accs, err := h.newAccs()
		if err != nil {
			return nil, err
		}
		w := &aggWindow{keys: newKeyTable(h.mem, nil), accs: accs}
		w.keys.n = 1
		for _, acc := range accs {
			acc.Grow(1)
		}
		h.windows[0] = w
	}
	var due []*aggWindow
	for _, w := range h.windows {
		if w.end <= watermark || watermark == math.MaxInt64 {
			due = append(due, w)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		return due[i].end < due[j].end || (due[i].end == due[j].end && due[i].start < due[j].start)
	})
	var out []arrow.Record
	for _, w := range due {
		delete(h.windows, w.start)
		h.goBytes -= w.goBytes
		_ = h.charge(-w.goBytes)
		if h.cur == w {
			h.cur = nil
		}
		rec := h.finishWindow(w)
		if rec != nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// SendAtOneEpoch tells h that its caller sends all the windows an Advance
// closes at one epoch (processing-time windows: Aggregate.emitHeld), so
// TUMBLE and HOP windows closed together come in records of up to rows
// rows, not one a window (#25).
func (h *HashAggregate) SendAtOneEpoch(rows int) { h.oneEpoch = rows }

// closeSlabs is Advance for a TUMBLE or HOP aggregation (or
// closeEpochs): the records of the windows ending at or before
// watermark and the windows' starts. The windows' rows are built as one
// record (windowSlabs.finishAll) and cut into a slice per window, which
// share its buffers: each window still leaves in a record of its own, at
// the epoch of its end (Aggregate.OnFrontier, MergeAggregate), which LIMIT
// and ORDER BY per window, the ordered sink and the merge of a two-phase
// aggregation read as the window. With oneEpoch set the caller sends them
// all at one epoch, and the slices are cut at most oneEpoch rows each,
// several windows a record (whole windows, in the same order).
func (h *HashAggregate) closeSlabs(watermark int64) (out []arrow.Record, starts []int64) {
	s := h.slabs
	due := s.due(watermark)
	rec, rows := s.finishAll(due, h.schema, h.spec.windowColumns())
	if rec != nil {
		out, starts = h.cut(rec, due, rows)
	}
	if s.open() == 0 && len(s.gkey) > 0 {
		// Nothing open: start again with empty slabs, so that what the
		// last windows grew them to is not kept.
		if fresh, err := h.freshSlabs(); err == nil {
			s.release()
			h.slabs = fresh
		}
	} else {
		s.compactIfDue()
	}
	_ = h.trackSlabs()
	return out, starts
}

// cut cuts rec, the rows of windows due (rows[i] of due[i]), into the
// records closeSlabs returns, and releases it; starts are the first
// window's start of each.
func (h *HashAggregate) cut(rec arrow.Record, due []uint32, rows []int) (out []arrow.Record, starts []int64) {
	var at, from int64
	for i, n := range rows {
		if n == 0 {
			continue
		}
		if h.oneEpoch > 0 && at > from && at-from+int64(n) <= int64(h.oneEpoch) {
			at += int64(n) // this window joins the record being cut
			continue
		}
		if at > from {
			out = append(out, rec.NewSlice(from, at))
		}
		from = at
		at += int64(n)
		starts = append(starts, h.slabs.wins[due[i]].start)
	}
	if from == 0 {
		return append(out, rec), starts // one record: rec itself
	}
	out = append(out, rec.NewSlice(from, at))
	rec.Release()
	return out, starts
}

// freshSlabs is empty slabs for h's groups, with accumulators of their own.
func (h *HashAggregate) freshSlabs() (*windowSlabs, error) {
	accs, err := h.newAccs()
	if err != nil {
		return nil, err
	}
	return newWindowSlabs(h.mem, groupTypes(h.spec.Group), accs), nil
}

// newEpochAggregate is a HashAggregate of spec (no window) that keeps
// apart the groups of each epoch its rows come at, all in one set of
// slabs (window_slabs.go, an epoch as a window): MergeAggregate's state,
// where a HashAggregate per pending epoch was a few dozen heap objects
// an epoch, and a window per millisecond an epoch per millisecond.
func newEpochAggregate(mem memory.Allocator, spec AggregateSpec, in *arrow.Schema, fns *functions.Registry) (*HashAggregate, error) {
	if spec.Window != nil {
		return nil, fmt.Errorf("%w: an aggregation by epoch has no window", ErrPlan)
	}
	h, err := NewHashAggregate(mem, spec, in, fns)
	if err != nil {
		return nil, err
	}
	if h.slabs, err = h.freshSlabs(); err != nil {
		return nil, err
	}
	h.goBytes = h.slabs.goBytes()
	return h, nil
}

// addEpoch folds rec into the groups of epoch e (newEpochAggregate).
func (h *HashAggregate) addEpoch(rec arrow.Record, e int64) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	keys, args, _, err := h.evalInputs(rec)
	if err != nil {
		return err
	}
	defer releaseInputs(keys, args, nil)
	h.growScratch(n)
	return h.addToSlabs(e, e, keys, args, 0, n)
}

// closeEpochs returns the records of every epoch at or before e, in
// order, and their epochs (newEpochAggregate).
func (h *HashAggregate) closeEpochs(e int64) ([]arrow.Record, []int64) { return h.closeSlabs(e) }

func (h *HashAggregate) finishWindow(w *aggWindow) arrow.Record {
	defer w.keys.release()
	n := int(w.keys.n)
	if n == 0 {
		return nil
	}
	gids := make([]uint32, n)
	for i := range gids {
		gids[i] = uint32(i)
	}
	cols := w.keys.finishKeys()
	if h.spec.windowColumns() {
		cols = append(cols, constTimestamp(h.mem, w.start, n), constTimestamp(h.mem, w.end, n))
	}
	for _, acc := range w.accs {
		cols = append(cols, acc.Finish(h.mem, gids))
	}
	rec := array.NewRecord(h.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func constTimestamp(mem memory.Allocator, us int64, n int) arrow.Array {
	b := array.NewTimestampBuilder(mem, expr.Timestamp.(*arrow.TimestampType))
	defer b.Release()
	arrowx.Reserve(b, n)
	for i := 0; i < n; i++ {
		b.UnsafeAppend(arrow.Timestamp(us))
	}
	return b.NewArray()
}

// Release frees all state (windows not yet closed are dropped).
func (h *HashAggregate) Release() { h.ReleaseWith(nil) }

// windowsPerRelease is how many open windows ReleaseWith drops in one
// piece: a few hundred microseconds of work.
const windowsPerRelease = 256

// ReleaseWith is Release with the dropping of the open windows run in
// pieces through do (nil: on the caller): dataflow.Helper's Do, so that a
// query ending with tens of thousands of windows open (45,000 took 0.1-0.3
// s to drop) drops them as steps of its own, at its turn, not on the
// worker's processors ungated.
func (h *HashAggregate) ReleaseWith(do func(func())) {
	if do == nil {
		do = func(f func()) { f() }
	}
	if s := h.slabs; s != nil {
		// A few slabs, dropped at once however many windows are open.
		do(s.release)
		if fresh, err := h.freshSlabs(); err == nil {
			h.slabs = fresh
		}
	}
	open := make([]*aggWindow, 0, len(h.windows))
	for _, w := range h.windows {
		open = append(open, w)
	}
	for len(open) > 0 {
		part := open[:min(len(open), windowsPerRelease)]
		open = open[len(part):]
		do(func() {
			for _, w := range part {
				w.keys.release()
			}
		})
	}
	h.windows = map[int64]*aggWindow{}
	h.cur = nil
	_ = h.charge(-h.goBytes)
	h.goBytes = 0
	if h.sess != nil {
		h.sess.keys.release()
		h.sess = nil
		_ = h.trackSessions()
	}
}

// constValue is the value of a constant argument: a literal, or a cast of
// one (the binder coerces 1 to 1.0 with a Cast).
func constValue(e expr.Expr) (any, bool) {
	switch x := e.(type) {
	case *expr.Literal:
		if d, ok := x.Value.(decimal128.Num); ok {
			// A constant argument (quantile_cont(x, 0.9)) as the number
			// the accumulator takes.
			return expr.DecimalFloat64(d, x.DataType.(*arrow.Decimal128Type).Scale), true
		}
		return x.Value, x.Value != nil
	case *expr.Cast:
		v, ok := constValue(x.Expr)
		if !ok {
			return nil, false
		}
		if i, isInt := v.(int64); isInt && x.To.ID() == arrow.FLOAT64 {
			return float64(i), true
		}
		return v, true
	}
	return nil, false
}

// notFoldedError is a refusal (of the budget, mostly) that came before row
// at of the batch was folded in: the rows before it are in the state, the
// rest is still to be added (a spilling aggregation, which has no window,
// adds them after spilling).
type notFoldedError struct {
	err error
	at  int
}

func (e *notFoldedError) Error() string { return e.err.Error() }
func (e *notFoldedError) Unwrap() error { return e.err }
