package rel

import (
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

// Sort orders rows within each epoch: on a bounded input (one epoch) that is a
// total order; after a windowed aggregation it orders each batch of closed
// windows. Rows are held until their epoch completes.
type Sort struct {
	dataflow.Base
	keys    []SortKey
	evs     []*eval.Evaluator
	in      *arrow.Schema
	fns     *functions.Registry
	c       opCtx
	pending map[dataflow.Epoch][]arrow.Record
}

// NewSort compiles the sort keys against the input schema.
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

func (s *Sort) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if _, ok := s.pending[b.Epoch]; !ok {
		if err := ctx.NotifyAt(cap, b.Epoch); err != nil {
			b.Record.Release()
			return err
		}
	}
	s.pending[b.Epoch] = append(s.pending[b.Epoch], b.Record)
	return nil
}

func (s *Sort) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	recs := s.pending[cap.Epoch()]
	delete(s.pending, cap.Epoch())
	if len(recs) == 0 {
		return nil
	}
	out, err := SortRecords(s.c.get(ctx), s.in, recs, s.evs, s.keys)
	for _, r := range recs {
		r.Release()
	}
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
	for _, rs := range s.pending {
		for _, r := range rs {
			r.Release()
		}
	}
	s.pending = nil
	return nil
}
