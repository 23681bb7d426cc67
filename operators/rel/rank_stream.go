package rel

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/logical"
)

// StreamRank is Flink's Top-N on a stream: ROW_NUMBER() OVER (PARTITION BY
// k ORDER BY x) with WHERE rn <= N above it, the best N rows of every key
// (N = 1 is deduplication: the first or the last row per key). Its result is
// a table that keeps changing, so it goes out as a changelog: the input's
// columns, rn, then the op column (changelog.go). When a key's top N
// changes, every rank whose row changed says so: +I for a rank that had no
// row, -U of the rank's old row and +U of its new one, -D for a rank left
// empty.
//
// Determinism: rows are taken an epoch at a time, once the epoch is
// complete, and the changes of the epoch go out as one step (only the net
// change of each rank, as Flink's mini-batch). A row displaces a kept one
// only when it sorts strictly before it; rows equal in the ORDER BY are
// ranked by their other columns, never by their epochs: a row's epoch is its
// source batch's, which the batch sizes and the partitioning move (ranked by
// epoch first, Nexmark's q19 over 3 partitions kept other tied bids than
// over one file). So the final table follows from the data alone, and the
// changelog from the data and its epochs, whatever the arrival order or
// number of upstream instances.
//
// State: at most N rows per key, in record segments that are compacted when
// they hold more dead rows than live ones; with a TTL (event time, in the
// epochs' microseconds) a key that saw no row for that long is forgotten,
// silently, as Flink's table.exec.state.ttl forgets it. What it keeps is
// charged to the operator's memory account.
type StreamRank struct {
	dataflow.Base
	n          int64
	part       []*eval.Evaluator
	partSorted bool // the partition keys' encodings sort as their values
	order      []*eval.Evaluator
	desc       []bool
	nullsFirst []bool
	in, out    *arrow.Schema
	ttl        int64
	c          opCtx
	pending    map[dataflow.Epoch][]arrow.Record
	keys       map[string]*rankKey
	segs       map[*rankSeg]struct{}
	segRows    int64 // rows of the live segments, dead or alive
	liveRows   int64
	stateBytes int64 // keys' and rows' Go bytes
	lastSweep  int64
	stats      *Stats
}

// rankSeg is a record some kept rows live in.
type rankSeg struct {
	rec  arrow.Record
	live int
}

// rankRow is one kept row: where it lives and its ORDER BY key.
type rankRow struct {
	seg  *rankSeg
	i    int
	sort []byte
	tie  []byte // the whole row's encoding, made when a tie needs it
}

// rankKey is one partition's top rows, best first.
type rankKey struct {
	key  string
	rows []*rankRow
	last dataflow.Epoch // the epoch of its latest row, for the TTL
}

// Go bytes the state costs beside the segments' buffers.
const (
	rankKeyGoBytes = 120
	rankRowGoBytes = 96
)

// IsStreamRank reports whether funcs are one row_number, the form StreamRank
// runs.
func IsStreamRank(funcs []*logical.WindowFunc) bool {
	return len(funcs) == 1 && funcs[0].Func == "row_number"
}

// NewStreamRank keeps the best n rows per partition of f (a row_number) over
// rows of in, forgetting keys idle for ttl microseconds of event time (0:
// never); stats may be nil.
func NewStreamRank(f *logical.WindowFunc, name string, n int64, ttl int64, in *arrow.Schema, fns *functions.Registry, stats *Stats) (*StreamRank, error) {
	if f.Func != "row_number" {
		return nil, fmt.Errorf("%w: %s on a stream: only row_number ranks an updating top N", ErrStreamOver, f.Func)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: row_number on a stream keeps at most %d rows per key: nothing", ErrStreamOver, n)
	}
	if len(f.Order) == 0 {
		return nil, fmt.Errorf("%w: row_number OVER (...) on a stream needs an ORDER BY (which rows are the top ones)", ErrStreamOver)
	}
	o := &StreamRank{n: n, ttl: ttl, in: in, stats: stats, pending: map[dataflow.Epoch][]arrow.Record{},
		keys: map[string]*rankKey{}, segs: map[*rankSeg]struct{}{}}
	for _, p := range f.Partition {
		ev, err := eval.Compile(p, in, fns)
		if err != nil {
			return nil, err
		}
		o.part = append(o.part, ev)
	}
	o.partSorted = true
	for _, p := range f.Partition {
		o.partSorted = o.partSorted && orderable(p.Type())
	}
	for _, k := range f.Order {
		if !orderable(k.Expr.Type()) {
			return nil, fmt.Errorf("%w: row_number on a stream cannot order by %s (a %s)", ErrStreamOver, k.Expr, k.Expr.Type())
		}
		ev, err := eval.Compile(k.Expr, in, fns)
		if err != nil {
			return nil, err
		}
		o.order = append(o.order, ev)
		o.desc = append(o.desc, k.Desc)
		o.nullsFirst = append(o.nullsFirst, k.NullsFirst)
	}
	fs := append([]arrow.Field(nil), in.Fields()...)
	fs = append(fs, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}, OpField())
	o.out = arrow.NewSchema(fs, nil)
	return o, nil
}

// Schema is the output: the input's columns, rn, op.
func (o *StreamRank) Schema() *arrow.Schema { return o.out }

// OnBatch keeps the batch until its epoch is complete.
func (o *StreamRank) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if o.stats != nil {
		o.stats.RowsIn.Add(b.Record.NumRows())
	}
	if _, ok := o.pending[b.Epoch]; !ok {
		if err := ctx.NotifyAt(cap, b.Epoch); err != nil {
			b.Record.Release()
			return err
		}
	}
	o.pending[b.Epoch] = append(o.pending[b.Epoch], b.Record)
	return ctx.Memory().Grow(recordGoBytes(b.Record))
}

// better reports whether row a ranks before row b.
func (o *StreamRank) better(a, b *rankRow) bool {
	if c := bytes.Compare(a.sort, b.sort); c != 0 {
		return c < 0
	}
	return bytes.Compare(o.tieOf(a), o.tieOf(b)) < 0
}

func (o *StreamRank) tieOf(r *rankRow) []byte {
	if r.tie == nil {
		r.tie = encodeKey(make([]byte, 0, 64), r.seg.rec.Columns(), r.i)
	}
	return r.tie
}

// change is one changelog row: op of row at rank rn.
type change struct {
	op  string
	row *rankRow
	rn  int64
}

// OnNotify takes a complete epoch's rows into the state and emits the net
// change.
func (o *StreamRank) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	e := cap.Epoch()
	recs := o.pending[e]
	delete(o.pending, e)
	ctx.Memory().Shrink(recordsGoBytes(recs))
	c := o.c.get(ctx)
	batch, err := concatRecords(c, o.in, recs)
	releaseRecords(recs)
	if err != nil || batch == nil {
		return err
	}
	seg := &rankSeg{rec: batch}
	o.segs[seg] = struct{}{}
	o.segRows += batch.NumRows()
	partCols, err := evalKeys(c, o.part, batch)
	if err != nil {
		return err
	}
	defer releaseArrays(partCols)
	orderCols, err := evalKeys(c, o.order, batch)
	if err != nil {
		return err
	}
	defer releaseArrays(orderCols)

	before := map[*rankKey][]*rankRow{} // the top rows of each key this epoch touched, as they were
	var touched []*rankKey
	var kbuf, sbuf []byte
	for i := 0; i < int(batch.NumRows()); i++ {
		sbuf = sbuf[:0]
		for k, col := range orderCols {
			if sbuf, err = appendSortKey(sbuf, col, i, o.desc[k], o.nullsFirst[k]); err != nil {
				return err
			}
		}
		if kbuf, err = o.partKey(kbuf[:0], partCols, i); err != nil {
			return err
		}
		k := o.keys[string(kbuf)]
		if k == nil {
			k = &rankKey{key: string(kbuf)}
			o.keys[k.key] = k
			o.stateBytes += rankKeyGoBytes + int64(len(k.key))
		}
		k.last = e
		cand := &rankRow{seg: seg, i: i, sort: sbuf}
		full := int64(len(k.rows)) >= o.n
		if full && !o.better(cand, k.rows[len(k.rows)-1]) {
			continue
		}
		cand.sort = slices.Clone(sbuf)
		if _, ok := before[k]; !ok {
			before[k] = slices.Clone(k.rows)
			touched = append(touched, k)
		}
		at := sort.Search(len(k.rows), func(j int) bool { return o.better(cand, k.rows[j]) })
		k.rows = slices.Insert(k.rows, at, cand)
		o.keep(cand)
		if int64(len(k.rows)) > o.n {
			o.drop(k.rows[len(k.rows)-1])
			k.rows = k.rows[:len(k.rows)-1]
		}
	}
	// Keys in the order of their encodings: the changelog of an epoch is
	// the same whatever order its rows came in.
	sort.Slice(touched, func(a, b int) bool { return touched[a].key < touched[b].key })
	var out []change
	for _, k := range touched {
		old := before[k]
		for r := 0; r < max(len(old), len(k.rows)); r++ {
			var was, is *rankRow
			if r < len(old) {
				was = old[r]
			}
			if r < len(k.rows) {
				is = k.rows[r]
			}
			switch {
			case was == is:
			case was == nil:
				out = append(out, change{OpInsert, is, int64(r + 1)})
			case is == nil:
				out = append(out, change{OpDelete, was, int64(r + 1)})
			default:
				out = append(out, change{OpUpdateBefore, was, int64(r + 1)}, change{OpUpdateAfter, is, int64(r + 1)})
			}
		}
	}
	var rec arrow.Record
	if len(out) > 0 {
		rec = o.build(c, out)
	}
	// Rows evicted this epoch were needed until the changes were built.
	o.release()
	o.expire(e)
	if err := o.compact(c); err != nil {
		if rec != nil {
			rec.Release()
		}
		return err
	}
	if err := ctx.Memory().Resize(o.goBytes()); err != nil {
		if rec != nil {
			rec.Release()
		}
		return fmt.Errorf("top %d per key, %d keys: %w", o.n, len(o.keys), err)
	}
	if rec == nil {
		return nil
	}
	if o.stats != nil {
		o.stats.RowsOut.Add(rec.NumRows())
	}
	return ctx.Emit(0, cap, rec)
}

// partKey encodes row i's partition, in the keys' order where they have one
// (so an epoch's changelog lists its keys in order).
func (o *StreamRank) partKey(buf []byte, cols []arrow.Array, i int) ([]byte, error) {
	if !o.partSorted {
		return encodeKey(buf, cols, i), nil
	}
	var err error
	for _, c := range cols {
		if buf, err = appendSortKey(buf, c, i, false, false); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func (o *StreamRank) keep(r *rankRow) {
	r.seg.live++
	o.liveRows++
	o.stateBytes += rankRowGoBytes + int64(len(r.sort))
}

func (o *StreamRank) drop(r *rankRow) {
	r.seg.live--
	o.liveRows--
	o.stateBytes -= rankRowGoBytes + int64(len(r.sort))
}

// release lets go of the segments no kept row lives in.
func (o *StreamRank) release() {
	for s := range o.segs {
		if s.live == 0 {
			o.segRows -= s.rec.NumRows()
			s.rec.Release()
			delete(o.segs, s)
		}
	}
}

// expire forgets the keys that saw no row for the TTL, checked each time the
// watermark moved half a TTL (so a sweep's cost is shared by that many rows).
func (o *StreamRank) expire(e dataflow.Epoch) {
	wm := Watermark(e)
	if o.ttl <= 0 || wm-o.lastSweep < o.ttl/2 {
		return
	}
	o.lastSweep = wm
	for key, k := range o.keys {
		if Watermark(k.last) < wm-o.ttl {
			for _, r := range k.rows {
				o.drop(r)
			}
			o.stateBytes -= rankKeyGoBytes + int64(len(key))
			delete(o.keys, key)
		}
	}
	o.release()
}

// compact moves the kept rows into one segment once the segments hold more
// dead rows than live ones (and enough to be worth it), so memory follows
// the kept rows, not the rows that went by.
func (o *StreamRank) compact(c *functions.Ctx) error {
	if o.segRows <= 2*o.liveRows+4096 {
		return nil
	}
	// One walk over the keys fixes every row's place (a map's order is
	// not the same twice).
	var rows []*rankRow
	idx := map[*rankSeg][]int32{}
	var order []*rankSeg
	for _, k := range o.keys {
		for _, r := range k.rows {
			if _, ok := idx[r.seg]; !ok {
				order = append(order, r.seg)
			}
			idx[r.seg] = append(idx[r.seg], int32(r.i))
			rows = append(rows, r)
		}
	}
	parts := make([]arrow.Record, 0, len(order))
	defer func() { releaseRecords(parts) }()
	base := map[*rankSeg]int{}
	n := 0
	for _, s := range order {
		g, err := eval.GatherRecord(c.Context(), c.Mem, s.rec, idx[s])
		if err != nil {
			return err
		}
		parts = append(parts, g)
		base[s] = n
		n += len(idx[s])
	}
	var all arrow.Record
	if n > 0 {
		var err error
		if all, err = concatRecords(c, o.in, parts); err != nil {
			return err
		}
	}
	next := &rankSeg{rec: all}
	seen := map[*rankSeg]int{}
	for _, r := range rows {
		s := r.seg
		r.seg, r.i = next, base[s]+seen[s]
		seen[s]++
		next.live++
	}
	for s := range o.segs {
		s.rec.Release()
		delete(o.segs, s)
	}
	o.segRows = 0
	if all != nil {
		o.segs[next] = struct{}{}
		o.segRows = all.NumRows()
	}
	return nil
}

func (o *StreamRank) goBytes() int64 {
	return o.stateBytes + int64(len(o.segs))*(64+160*int64(o.in.NumFields())+64) + int64(len(o.pending))*64
}

// build makes the changelog record of out.
func (o *StreamRank) build(c *functions.Ctx, out []change) arrow.Record {
	bs := make([]array.Builder, o.out.NumFields())
	for i, f := range o.out.Fields() {
		bs[i] = array.NewBuilder(c.Mem, f.Type)
		arrowx.Reserve(bs[i], len(out))
	}
	nin := o.in.NumFields()
	for _, ch := range out {
		rec := ch.row.seg.rec
		for col := 0; col < nin; col++ {
			appendValue(bs[col], rec.Column(col), ch.row.i)
		}
		bs[nin].(*array.Int64Builder).Append(ch.rn)
		bs[nin+1].(*array.StringBuilder).Append(ch.op)
	}
	cols := make([]arrow.Array, len(bs))
	for i, b := range bs {
		cols[i] = b.NewArray()
		b.Release()
	}
	defer releaseArrays(cols)
	return array.NewRecord(o.out, cols, int64(len(out)))
}

func (o *StreamRank) Close(*dataflow.Context) error {
	for e, recs := range o.pending {
		releaseRecords(recs)
		delete(o.pending, e)
	}
	for s := range o.segs {
		s.rec.Release()
		delete(o.segs, s)
	}
	o.keys = map[string]*rankKey{}
	return nil
}
