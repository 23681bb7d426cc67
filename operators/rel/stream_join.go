package rel

import (
	"fmt"
	"math"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// StreamJoin is Flink's regular join of two streams: every row of each side
// is kept, and each new row joins the rows the other side keeps. An inner
// join's result only grows (plain rows). A LEFT JOIN's does not: a left row
// goes out with NULLs for the right while nothing matches it, and when a
// right row matches it later that row is taken back, so its result is a
// changelog (the join's columns, then op): +I of (l, NULLs), then -D of it
// and +I of (l, r) when its first match comes.
//
// Determinism: rows are taken an epoch at a time, once the epoch is
// complete; the epoch's new rows join the other side's kept rows and each
// other, then join the state. So which pairs meet follows from the data and
// its epochs alone, never from batch sizes or arrival order.
//
// State is bounded three ways (docs/language.md, "Joins of two streams"):
//   - by time: an ON conjunct that bounds the other side's event time by
//     this row (B.dateTime <= A.expires bounds every later bid's time by
//     the auction's expires) makes the row useless once the watermark
//     passes that bound (plus how far the other side's time trails its
//     watermark), as Flink's interval join; Until lists those bounds;
//   - by TTL (SET exec.state_ttl, in event time): a row kept that long past
//     its epoch is forgotten, silently, as Flink's table.exec.state.ttl;
//   - by the query's memory budget, to which everything kept is charged: a
//     join without either grows until the budget stops it, with the
//     operator named.
//
// A row that comes behind the watermark (a late row) may find partners
// already forgotten; which ones follows from the epochs, so the answer is
// still the same every run.
type StreamJoin struct {
	dataflow.Base
	spec     StreamJoinSpec
	sides    [2]*arrow.Schema
	out      *arrow.Schema
	pairs    *arrow.Schema // left ++ right, what the residual reads
	keyEv    [2][]*eval.Evaluator
	untilEv  [2][]*eval.Evaluator
	residual *eval.Predicate
	c        opCtx
	pending  map[dataflow.Epoch]*[2][]arrow.Record
	state    [2]*joinSide
	waiting  int64 // Go bytes of the pending records
	stats    *Stats
}

// StreamJoinSpec is a regular join of two streams.
type StreamJoinSpec struct {
	// Join is the condition: Kind InnerJoin or LeftJoin, keys per side and
	// a residual over left ++ right.
	Join JoinSpec
	// Until[s] are TIMESTAMP expressions over side s's rows, each with the
	// lag (µs) of the other side's time it bounds: a kept row of side s is
	// forgotten once the watermark passes bound + lag.
	Until [2][]Bound
	// TTL forgets a kept row this many µs of event time after its epoch
	// (0: never).
	TTL int64
}

// Bound is one time bound of a side's rows (StreamJoinSpec.Until).
type Bound struct {
	Expr expr.Expr
	Lag  int64
}

// joinSide is what one side keeps: its rows in segments (an epoch's rows
// each) and an index from join key to the rows with it.
type joinSide struct {
	segs     []*joinSeg
	index    map[string][]joinRef
	refs     int64 // index entries, some of them dead
	live     int64 // rows of the live segments
	released int64 // rows of segments released since the index was last swept
	keyBytes int64
}

type joinSeg struct {
	rec     arrow.Record // nil once released
	epoch   dataflow.Epoch
	until   []int64 // each row's last useful watermark
	matched []int32 // an outer side's rows' matches so far
	last    int64   // the largest of until: the segment's end
	// gatherGen and gatherAt number the segment in a gather of output
	// rows (gatherRefsFixed): its stamp and its index there.
	gatherGen uint64
	gatherAt  int32
}

type joinRef struct {
	seg *joinSeg
	i   int32
}

// Go bytes the state costs beside the records' buffers.
const (
	joinKeyGoBytes = 64 // a map entry and a slice header
	joinRefGoBytes = 16
	joinSegGoBytes = 96
)

// NewStreamJoin compiles spec over the two sides' schemas; stats may be
// nil.
func NewStreamJoin(spec StreamJoinSpec, left, right *arrow.Schema, fns *functions.Registry, stats *Stats) (*StreamJoin, error) {
	if spec.Join.Kind != InnerJoin && spec.Join.Kind != LeftJoin {
		return nil, fmt.Errorf("%w: a %s join of two streams (inner and LEFT joins are supported)", ErrPlan, spec.Join.Kind)
	}
	if len(spec.Join.LeftKeys) != len(spec.Join.RightKeys) {
		return nil, fmt.Errorf("%w: %d left keys, %d right", ErrPlan, len(spec.Join.LeftKeys), len(spec.Join.RightKeys))
	}
	j := &StreamJoin{spec: spec, sides: [2]*arrow.Schema{left, right}, pairs: JoinSchema(left, right), stats: stats,
		pending: map[dataflow.Epoch]*[2][]arrow.Record{}}
	for s := range j.state {
		j.state[s] = &joinSide{index: map[string][]joinRef{}}
	}
	for i := range spec.Join.LeftKeys {
		lk, rk := spec.Join.LeftKeys[i], spec.Join.RightKeys[i]
		ct, ok := expr.CommonType(lk.Type(), rk.Type())
		if !ok {
			return nil, fmt.Errorf("%w: join keys %s and %s do not compare", ErrPlan, lk, rk)
		}
		for s, k := range []expr.Expr{expr.CastTo(lk, ct), expr.CastTo(rk, ct)} {
			ev, err := eval.Compile(k, j.sides[s], fns)
			if err != nil {
				return nil, err
			}
			j.keyEv[s] = append(j.keyEv[s], ev)
		}
	}
	for s := range spec.Until {
		for _, b := range spec.Until[s] {
			if b.Expr.Type().ID() != arrow.TIMESTAMP {
				return nil, fmt.Errorf("%w: join time bound %s is %s, want TIMESTAMP", ErrPlan, b.Expr, expr.TypeName(b.Expr.Type()))
			}
			ev, err := eval.Compile(expr.CastTo(b.Expr, expr.Timestamp), j.sides[s], fns)
			if err != nil {
				return nil, err
			}
			j.untilEv[s] = append(j.untilEv[s], ev)
		}
	}
	if spec.Join.Residual != nil {
		p, err := eval.NewPredicate(spec.Join.Residual, j.pairs, fns)
		if err != nil {
			return nil, err
		}
		j.residual = p
	}
	j.out = j.pairs
	if spec.Join.Kind == LeftJoin {
		j.out = arrow.NewSchema(append(append([]arrow.Field(nil), j.pairs.Fields()...), OpField()), nil)
	}
	return j, nil
}

// Schema is the output: left ++ right, and op for a LEFT JOIN.
func (j *StreamJoin) Schema() *arrow.Schema { return j.out }

// OnBatch keeps the batch until its epoch is complete.
func (j *StreamJoin) OnBatch(ctx *dataflow.Context, input int, b dataflow.Batch, cap *dataflow.Capability) error {
	if j.stats != nil {
		j.stats.RowsIn.Add(b.Record.NumRows())
	}
	p := j.pending[b.Epoch]
	if p == nil {
		if err := ctx.NotifyAt(cap, b.Epoch); err != nil {
			b.Record.Release()
			return err
		}
		p = &[2][]arrow.Record{}
		j.pending[b.Epoch] = p
	}
	p[input] = append(p[input], b.Record)
	j.waiting += recordGoBytes(b.Record)
	return ctx.Memory().Grow(recordGoBytes(b.Record))
}

// OnNotify joins a complete epoch's rows: the new right rows join the
// kept left rows, the new left rows join every right row kept and new,
// then both sides keep their new rows and forget what the watermark or
// the TTL let go.
func (j *StreamJoin) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	e := cap.Epoch()
	p := j.pending[e]
	delete(j.pending, e)
	if p == nil {
		return nil
	}
	j.waiting -= recordsGoBytes(p[0]) + recordsGoBytes(p[1])
	ctx.Memory().Shrink(recordsGoBytes(p[0]) + recordsGoBytes(p[1]))
	c := j.c.get(ctx)
	wm := Watermark(e)
	var segs [2]*joinSeg
	var keys [2][]string
	for s := range p {
		rec, err := concatRecords(c, j.sides[s], p[s])
		releaseRecords(p[s])
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		if segs[s], keys[s], err = j.newSeg(c, s, rec, e); err != nil {
			rec.Release()
			return err
		}
	}
	var out joinOut
	// New right rows against the left rows kept before this epoch.
	if segs[1] != nil {
		out.probe(j.state[0], segs[1], keys[1], wm, true)
		j.add(1, segs[1], keys[1])
	}
	// New left rows against every right row, kept or new.
	if segs[0] != nil {
		out.probe(j.state[1], segs[0], keys[0], wm, false)
	}
	rec, err := j.emit(c, &out, segs[0])
	if segs[0] != nil {
		j.add(0, segs[0], keys[0])
	}
	if err != nil {
		return err
	}
	for s := range j.state {
		j.expire(s, wm)
	}
	if err := ctx.Memory().Resize(j.goBytes()); err != nil {
		if rec != nil {
			rec.Release()
		}
		return fmt.Errorf("join of two streams keeping %d left and %d right rows: %w", j.state[0].live, j.state[1].live, err)
	}
	if rec == nil {
		return nil
	}
	if j.stats != nil {
		j.stats.RowsOut.Add(rec.NumRows())
	}
	return ctx.Emit(0, cap, rec)
}

// newSeg makes side s's segment of an epoch's rows, with each row's key
// ("" and no entry for a NULL key, which matches nothing) and last useful
// watermark.
func (j *StreamJoin) newSeg(c *functions.Ctx, s int, rec arrow.Record, e dataflow.Epoch) (*joinSeg, []string, error) {
	n := int(rec.NumRows())
	seg := &joinSeg{rec: rec, epoch: e, until: make([]int64, n), last: math.MinInt64}
	if j.spec.Join.Kind == LeftJoin && s == 0 {
		seg.matched = make([]int32, n)
	}
	ttl := int64(math.MaxInt64)
	if j.spec.TTL > 0 && Watermark(e) < math.MaxInt64-j.spec.TTL {
		ttl = Watermark(e) + j.spec.TTL
	}
	for i := range seg.until {
		seg.until[i] = ttl
	}
	for k, ev := range j.untilEv[s] {
		a, err := ev.Eval(c, rec)
		if err != nil {
			return nil, nil, err
		}
		tv := functions.Int64Values(a)
		lag := j.spec.Until[s][k].Lag
		for i := range seg.until {
			if a.IsNull(i) {
				continue // no bound from a NULL: the condition fails for it anyway
			}
			if b := tv[i] + lag; b < seg.until[i] {
				seg.until[i] = b
			}
		}
		a.Release()
	}
	for _, u := range seg.until {
		seg.last = max(seg.last, u)
	}
	cols, err := evalKeys(c, j.keyEv[s], rec)
	if err != nil {
		return nil, nil, err
	}
	defer releaseArrays(cols)
	keys := make([]string, n)
	var buf []byte
	for i := range keys {
		if anyNullAt(cols, i) {
			keys[i] = nullJoinKey
			continue
		}
		buf = encodeKey(buf[:0], cols, i)
		keys[i] = string(buf)
	}
	return seg, keys, nil
}

// nullJoinKey stands for a key with a NULL in it: such a row matches
// nothing (an encoded key is never empty unless there are no keys, and
// then no key is NULL).
const nullJoinKey = "\x00null"

// add keeps a segment's rows in side s's state.
func (j *StreamJoin) add(s int, seg *joinSeg, keys []string) {
	st := j.state[s]
	st.segs = append(st.segs, seg)
	st.live += seg.rec.NumRows()
	for i, k := range keys {
		if k == nullJoinKey && len(j.keyEv[s]) > 0 {
			continue
		}
		refs, ok := st.index[k]
		if !ok {
			st.keyBytes += joinKeyGoBytes + int64(len(k))
		}
		st.index[k] = append(refs, joinRef{seg, int32(i)})
		st.refs++
	}
}

// joinOut is an epoch's output being gathered: pairs of rows (a nil right
// segment: NULLs), and the left rows whose NULL-padded row is taken back.
type joinOut struct {
	left, right []joinRef
	retract     []joinRef
}

// probe finds, for each row of seg, the kept rows of st with its key that
// are still of use at watermark wm (the epoch's own rows always are).
// newRight: seg is the right side.
func (o *joinOut) probe(st *joinSide, seg *joinSeg, keys []string, wm int64, newRight bool) {
	for i, k := range keys {
		if k == nullJoinKey {
			continue
		}
		for _, r := range st.index[k] {
			if r.seg.rec == nil || (r.seg.epoch != seg.epoch && r.seg.until[r.i] < wm) {
				continue
			}
			if newRight {
				o.left, o.right = append(o.left, r), append(o.right, joinRef{seg, int32(i)})
			} else {
				o.left, o.right = append(o.left, joinRef{seg, int32(i)}), append(o.right, r)
			}
		}
	}
}

// emit builds the epoch's output: the pairs that pass the residual, and for
// a LEFT JOIN the retractions and NULL-padded rows their matches call for.
func (j *StreamJoin) emit(c *functions.Ctx, o *joinOut, newLeft *joinSeg) (arrow.Record, error) {
	var pairs arrow.Record
	if len(o.left) > 0 {
		var err error
		if pairs, err = j.gatherPairs(c, o.left, o.right); err != nil {
			return nil, err
		}
		if j.residual != nil {
			sel, all, err := j.residual.Select(c, pairs)
			if err != nil {
				pairs.Release()
				return nil, err
			}
			if !all {
				kept, err := eval.GatherRecord(c.Context(), c.Mem, pairs, sel)
				pairs.Release()
				if err != nil {
					return nil, err
				}
				pairs = kept
				l := make([]joinRef, len(sel))
				for k, i := range sel {
					l[k] = o.left[i]
				}
				o.left = l
			}
		}
		if pairs.NumRows() == 0 {
			pairs.Release()
			pairs = nil
		}
	}
	if j.spec.Join.Kind != LeftJoin {
		return pairs, nil
	}
	// A kept left row's first match takes back its NULL-padded row; a new
	// left row that found none goes out NULL-padded.
	var retract, padded []joinRef
	for _, l := range o.left {
		if l.seg.matched[l.i] == 0 && l.seg != newLeft {
			retract = append(retract, l)
		}
		l.seg.matched[l.i]++
	}
	if newLeft != nil {
		for i, m := range newLeft.matched {
			if m == 0 {
				padded = append(padded, joinRef{newLeft, int32(i)})
			}
		}
	}
	var parts []arrow.Record
	defer func() { releaseRecords(parts) }()
	withOp := func(rec arrow.Record, op string) error {
		ops := array.NewStringBuilder(c.Mem)
		defer ops.Release()
		for i := int64(0); i < rec.NumRows(); i++ {
			ops.Append(op)
		}
		col := ops.NewArray()
		defer col.Release()
		cols := append(append([]arrow.Array(nil), rec.Columns()...), col)
		parts = append(parts, array.NewRecord(columnTypes(j.out, cols), cols, rec.NumRows()))
		return nil
	}
	for _, set := range []struct {
		rows []joinRef
		op   string
	}{{retract, OpDelete}, {padded, OpInsert}} {
		if len(set.rows) == 0 {
			continue
		}
		rec, err := j.gatherPairs(c, set.rows, make([]joinRef, len(set.rows)))
		if err != nil {
			if pairs != nil {
				pairs.Release()
			}
			return nil, err
		}
		err = withOp(rec, set.op)
		rec.Release()
		if err != nil {
			return nil, err
		}
		if set.op == OpDelete && pairs != nil {
			// The retractions go before the pairs that replace them.
			err = withOp(pairs, OpInsert)
			pairs.Release()
			pairs = nil
			if err != nil {
				return nil, err
			}
		}
	}
	if pairs != nil {
		err := withOp(pairs, OpInsert)
		pairs.Release()
		if err != nil {
			return nil, err
		}
	}
	return concatRecords(c, j.out, parts)
}

// gatherPairs is the rows (left[k], right[k]) as left ++ right (a nil
// segment gives NULLs).
func (j *StreamJoin) gatherPairs(c *functions.Ctx, left, right []joinRef) (arrow.Record, error) {
	var cols []arrow.Array
	defer func() { releaseArrays(cols) }()
	for s, refs := range [][]joinRef{left, right} {
		rec, err := gatherRefs(c, j.sides[s], refs)
		if err != nil {
			return nil, err
		}
		for _, a := range rec.Columns() {
			a.Retain()
			cols = append(cols, a)
		}
		rec.Release()
	}
	return array.NewRecord(columnTypes(j.pairs, cols), cols, int64(len(left))), nil
}

// gatherRefs takes the rows refs point at (NULLs for a nil segment), in
// order: each segment's rows are gathered at once, then put in order.
func gatherRefs(c *functions.Ctx, schema *arrow.Schema, refs []joinRef) (arrow.Record, error) {
	if widths, ok := fixedWidths(schema); ok {
		if rec, ok := gatherRefsFixed(c.Mem, schema, widths, refs); ok {
			return rec, nil
		}
	}
	type part struct {
		rows []int32
		base int
	}
	parts := map[*joinSeg]*part{}
	var order []*joinSeg
	for _, r := range refs {
		p := parts[r.seg]
		if p == nil {
			p = &part{}
			parts[r.seg] = p
			order = append(order, r.seg)
		}
		p.rows = append(p.rows, r.i)
	}
	if len(order) == 1 && order[0] != nil {
		return eval.GatherRecord(c.Context(), c.Mem, order[0].rec, parts[order[0]].rows)
	}
	var recs []arrow.Record
	defer func() { releaseRecords(recs) }()
	n := 0
	for _, s := range order {
		p := parts[s]
		p.base = n
		if s == nil {
			continue
		}
		g, err := eval.GatherRecord(c.Context(), c.Mem, s.rec, p.rows)
		if err != nil {
			return nil, err
		}
		recs = append(recs, g)
		n += len(p.rows)
	}
	perm := make([]int32, len(refs))
	seen := map[*joinSeg]int{}
	for k, r := range refs {
		if r.seg == nil {
			perm[k] = -1
			continue
		}
		perm[k] = int32(parts[r.seg].base + seen[r.seg])
		seen[r.seg]++
	}
	if len(recs) == 0 {
		// Every row NULL (the right of NULL-padded rows).
		cols := make([]arrow.Array, schema.NumFields())
		for i, f := range schema.Fields() {
			cols[i] = array.MakeArrayOfNull(c.Mem, f.Type, len(refs))
		}
		defer releaseArrays(cols)
		return array.NewRecord(schema, cols, int64(len(refs))), nil
	}
	all, err := concatRecords(c, schema, recs)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return eval.GatherRecord(c.Context(), c.Mem, all, perm)
}

// expire releases side s's segments whose every row is past its use at
// watermark wm, and sweeps the index of their rows once they are as many
// as half the rows kept (so a sweep's cost is shared by as many rows).
func (j *StreamJoin) expire(s int, wm int64) {
	st := j.state[s]
	keep := st.segs[:0]
	for _, seg := range st.segs {
		// An outer side's unmatched rows have gone out NULL-padded already:
		// forgetting them changes nothing that went out.
		if seg.last < wm {
			st.live -= seg.rec.NumRows()
			st.released += seg.rec.NumRows()
			seg.rec.Release()
			seg.rec = nil
			continue
		}
		keep = append(keep, seg)
	}
	for i := len(keep); i < len(st.segs); i++ {
		st.segs[i] = nil
	}
	st.segs = keep
	if st.released < 4096 || 2*st.released < st.live {
		return
	}
	st.released = 0
	for k, refs := range st.index {
		live := refs[:0]
		for _, r := range refs {
			if r.seg.rec != nil && r.seg.until[r.i] >= wm {
				live = append(live, r)
			}
		}
		st.refs -= int64(len(refs) - len(live))
		if len(live) == 0 {
			delete(st.index, k)
			st.keyBytes -= joinKeyGoBytes + int64(len(k))
			continue
		}
		st.index[k] = live
	}
}

// goBytes is what the state costs beside its records' buffers.
func (j *StreamJoin) goBytes() int64 {
	n := j.waiting + int64(len(j.pending))*64
	for _, st := range j.state {
		n += st.keyBytes + st.refs*joinRefGoBytes
		for _, seg := range st.segs {
			n += joinSegGoBytes + recordGoBytes(seg.rec) + int64(len(seg.until))*8 + int64(len(seg.matched))*4
		}
	}
	return n
}

// Close releases what is kept.
func (j *StreamJoin) Close(*dataflow.Context) error {
	es := make([]dataflow.Epoch, 0, len(j.pending))
	for e := range j.pending {
		es = append(es, e)
	}
	sort.Slice(es, func(a, b int) bool { return es[a] < es[b] })
	for _, e := range es {
		releaseRecords(j.pending[e][0])
		releaseRecords(j.pending[e][1])
		delete(j.pending, e)
	}
	for _, st := range j.state {
		for _, seg := range st.segs {
			if seg.rec != nil {
				seg.rec.Release()
				seg.rec = nil
			}
		}
		st.segs = nil
		st.index = map[string][]joinRef{}
	}
	return nil
}
