package rel

import (
	"fmt"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// SortKey is one ORDER BY item. NULLs sort last ascending and first descending
// (PostgreSQL's default).
type SortKey struct {
	Expr expr.Expr
	Desc bool
}

// Sort orders rows. Over a windowed aggregation it orders each epoch: the
// aggregation emits each window at the epoch of its end, so that is each
// window's rows (NewSort). Anywhere else the order is the whole input's, so
// the rows are held until the input ends (NewSortAtEnd): sorting per epoch
// there would give the first epoch's order, not the query's.
type Sort struct {
	dataflow.Base
	keys    []SortKey
	evs     []*eval.Evaluator
	in      *arrow.Schema
	fns     *functions.Registry
	c       opCtx
	pending map[dataflow.Epoch][]arrow.Record
	// atEnd: hold every row (under held, at the first epoch) until the
	// input frontier closes.
	atEnd bool
	held  *dataflow.Capability
	// spill: sorted runs on disk past a limit (NewSortAtEndWithin), or nil.
	spill *sortSpill
}

// NewSort orders each epoch's rows; it compiles the keys against the input
// schema.
func NewSort(keys []SortKey, in *arrow.Schema, fns *functions.Registry) (*Sort, error) {
	s := &Sort{keys: keys, in: in, fns: fns, pending: map[dataflow.Epoch][]arrow.Record{}}
	for _, k := range keys {
		ev, err := eval.Compile(k.Expr, in, fns)
		if err != nil {
			return nil, err
		}
		s.evs = append(s.evs, ev)
	}
	return s, nil
}

// NewSortAtEnd orders all the rows of its input, emitted once the input has
// ended (a table, or a stream's end-of-stream).
func NewSortAtEnd(keys []SortKey, in *arrow.Schema, fns *functions.Registry) (*Sort, error) {
	s, err := NewSort(keys, in, fns)
	if err != nil {
		return nil, err
	}
	s.atEnd = true
	return s, nil
}

func (s *Sort) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	if !s.atEnd {
		return nil
	}
	var err error
	s.held, err = cap.Retain()
	return err
}

func (s *Sort) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if s.atEnd {
		s.pending[0] = append(s.pending[0], b.Record)
		if err := ctx.Memory().Grow(recordGoBytes(b.Record)); err != nil {
			return err
		}
		if over, err := s.took(ctx, b.Record); over || err != nil {
			if err != nil {
				return err
			}
			return s.spillRun(ctx)
		}
		return nil
	}
	if _, ok := s.pending[b.Epoch]; !ok {
		if err := ctx.NotifyAt(cap, b.Epoch); err != nil {
			b.Record.Release()
			return err
		}
	}
	s.pending[b.Epoch] = append(s.pending[b.Epoch], b.Record)
	return ctx.Memory().Grow(recordGoBytes(b.Record))
}

// sortIndexBytes is what sorting rows costs beside the rows: their
// indexes and the key comparisons' scratch.
const sortIndexBytes = 16

// sortCharged is SortRecords with the index it builds charged to the
// operator's account while it sorts.
func sortCharged(ctx *dataflow.Context, c *functions.Ctx, in *arrow.Schema, recs []arrow.Record, evs []*eval.Evaluator, keys []SortKey) (arrow.Record, error) {
	acct := ctx.Memory()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if err := acct.Grow(sortIndexBytes * rows); err != nil {
		return nil, fmt.Errorf("sorting %d rows: %w", rows, err)
	}
	defer acct.Shrink(sortIndexBytes * rows)
	return SortRecords(c, in, recs, evs, keys)
}

func (s *Sort) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	recs := s.pending[cap.Epoch()]
	delete(s.pending, cap.Epoch())
	return s.emit(ctx, cap, recs)
}

// OnFrontier emits the whole sorted input when it has ended (NewSortAtEnd).
func (s *Sort) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if !s.atEnd || f != dataflow.Closed || s.held == nil {
		return nil
	}
	var err error
	if s.spill != nil && len(s.spill.runs) > 0 {
		err = s.emitSpilled(ctx, s.held)
	} else {
		recs := s.pending[0]
		delete(s.pending, 0)
		s.spill.dropKeys(ctx.Memory()) // sorted in memory: no run needs them
		err = s.emit(ctx, s.held, recs)
	}
	s.held.Drop()
	s.held = nil
	return err
}

func (s *Sort) emit(ctx *dataflow.Context, cap *dataflow.Capability, recs []arrow.Record) error {
	if len(recs) == 0 {
		return nil
	}
	held := recordsGoBytes(recs) // charged as they came
	out, err := sortCharged(ctx, s.c.get(ctx), s.in, recs, s.evs, s.keys)
	for _, r := range recs {
		r.Release()
	}
	ctx.Memory().Shrink(held)
	if err != nil || out == nil {
		return err
	}
	return ctx.Emit(0, cap, out)
}

// SortRecords concatenates recs and returns their rows sorted by keys (stable).
func SortRecords(c *functions.Ctx, schema *arrow.Schema, recs []arrow.Record, evs []*eval.Evaluator, keys []SortKey) (arrow.Record, error) {
	tbl := array.NewTableFromRecords(schema, recs)
	defer tbl.Release()
	cols := make([]arrow.Array, schema.NumFields())
	for i := range cols {
		a, err := array.Concatenate(tbl.Column(i).Data().Chunks(), c.Mem)
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
		cols[i] = a
	}
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	all := array.NewRecord(schema, cols, n)
	releaseArrays(cols)
	defer all.Release()
	if n == 0 {
		return nil, nil
	}
	karr, err := evalKeys(c, evs, all)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(karr)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		for k, arr := range karr {
			c := compareRows(arr, idx[a], idx[b])
			if c == 0 {
				continue
			}
			if keys[k].Desc {
				return c > 0
			}
			return c < 0
		}
		return false
	})
	sel := make([]int32, n)
	for k, i := range idx {
		sel[k] = int32(i)
	}
	return eval.GatherRecord(c.Context(), c.Mem, all, sel)
}

// compareRows orders two rows of one array; NULL is greater than any value, so
// it sorts last ascending and first descending.
func compareRows(a arrow.Array, i, j int) int {
	ni, nj := a.IsNull(i), a.IsNull(j)
	switch {
	case ni && nj:
		return 0
	case ni:
		return 1
	case nj:
		return -1
	}
	switch a := a.(type) {
	case *array.Int64:
		return cmpOrdered(a.Value(i), a.Value(j))
	case *array.Int32:
		return cmpOrdered(a.Value(i), a.Value(j))
	case *array.Float64:
		return cmpOrdered(a.Value(i), a.Value(j))
	case *array.Float32:
		return cmpOrdered(a.Value(i), a.Value(j))
	case *array.String:
		return cmpOrdered(a.Value(i), a.Value(j))
	case *array.Timestamp:
		return cmpOrdered(a.Value(i), a.Value(j))
	case *array.Decimal128:
		return functions.CompareDecimal(a.Value(i), a.Value(j))
	case *array.Date32:
		return cmpOrdered(int32(a.Value(i)), int32(a.Value(j)))
	case *array.Int16:
		return cmpOrdered(int32(a.Value(i)), int32(a.Value(j)))
	case *array.Int8:
		return cmpOrdered(int32(a.Value(i)), int32(a.Value(j)))
	case *array.Duration:
		return cmpOrdered(int64(a.Value(i)), int64(a.Value(j)))
	case *array.Boolean:
		x, y := a.Value(i), a.Value(j)
		if x == y {
			return 0
		}
		if !x {
			return -1
		}
		return 1
	}
	return cmpOrdered(a.ValueStr(i), a.ValueStr(j))
}

func cmpOrdered[T int32 | int64 | float32 | float64 | string | arrow.Timestamp](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func (s *Sort) Close(*dataflow.Context) error {
	if s.held != nil {
		s.held.Drop()
	}
	for _, rs := range s.pending {
		for _, r := range rs {
			r.Release()
		}
	}
	s.pending = nil
	s.spill.close()
	return nil
}
