package rel

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// WindowFuncs evaluates window functions (f(...) OVER (PARTITION BY ...
// ORDER BY ... frame)) with DuckDB's semantics: its output is each input row
// with one column per function appended, in the input's row order.
//
// Rows are sorted once per distinct (PARTITION BY, ORDER BY); ranking and
// offset functions read the sorted positions; sum, count and avg use prefix
// sums (a running sum when every frame starts at its partition's start) and
// min and max a monotonic deque over the sliding frames, so those frames cost
// O(1) amortised whatever their width; any other aggregate folds each
// distinct frame through its accumulator. Window ORDER BY puts NULLs last in
// both directions (DuckDB's default null order) unless NULLS FIRST.
//
// Over a windowed aggregation each epoch is one window's rows, and functions
// are evaluated per epoch (NewWindowFuncs), as Flink evaluates them per
// window; anywhere else the input is held to its end (NewWindowFuncsAtEnd).
type WindowFuncs struct {
	dataflow.Base
	w       *windowEval
	c       opCtx
	pending map[dataflow.Epoch][]arrow.Record
	atEnd   bool
	held    *dataflow.Capability
	// spill: the rows by partition on disk past a limit
	// (NewWindowFuncsAtEndWithin), or nil.
	spill *windowSpill
}

// windowEval is the compiled functions over one input schema.
type windowEval struct {
	in    *arrow.Schema
	out   *arrow.Schema
	funcs []*compiledWindow
}

type compiledWindow struct {
	f     *logical.WindowFunc
	args  []*eval.Evaluator
	part  []*eval.Evaluator
	order []*eval.Evaluator
	// group is the index of the first function with the same PARTITION BY
	// and ORDER BY, whose sort this one shares.
	group int
	// n is ntile's bucket count, lag's and lead's offset, nth_value's n.
	n int64
	// newAcc makes the accumulator of an aggregate that has no running
	// form here (anything but sum, count, avg, min and max, or DISTINCT).
	newAcc func() (functions.Accumulator, error)
}

// windowOnly are the functions that are not aggregates.
var windowOnly = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true, "ntile": true,
	"lag": true, "lead": true, "first_value": true, "last_value": true, "nth_value": true,
}

// runningAggregate reports whether f has the prefix-sum and deque forms.
func runningAggregate(f *logical.WindowFunc) bool {
	switch f.Func {
	case "sum", "count", "avg", "min", "max":
		return !f.Distinct
	}
	return false
}

func newWindowEval(funcs []*logical.WindowFunc, names []string, in *arrow.Schema, fns *functions.Registry) (*windowEval, error) {
	w := &windowEval{in: in}
	fs := append([]arrow.Field(nil), in.Fields()...)
	seen := map[string]int{}
	for i, f := range funcs {
		cw := &compiledWindow{f: f}
		compile := func(es []expr.Expr) ([]*eval.Evaluator, error) {
			var out []*eval.Evaluator
			for _, e := range es {
				ev, err := eval.Compile(e, in, fns)
				if err != nil {
					return nil, err
				}
				out = append(out, ev)
			}
			return out, nil
		}
		var err error
		if cw.args, err = compile(f.Args); err != nil {
			return nil, err
		}
		if cw.part, err = compile(f.Partition); err != nil {
			return nil, err
		}
		okeys := make([]expr.Expr, len(f.Order))
		for k, o := range f.Order {
			okeys[k] = o.Expr
		}
		if cw.order, err = compile(okeys); err != nil {
			return nil, err
		}
		cw.n = 1
		switch f.Func {
		case "ntile", "nth_value", "lag", "lead":
			at := 1
			if f.Func == "ntile" {
				at = 0
			}
			if len(f.Args) > at {
				l, ok := f.Args[at].(*expr.Literal)
				n, isInt := int64(0), false
				if ok {
					n, isInt = l.Value.(int64)
				}
				if !isInt {
					return nil, fmt.Errorf("%s wants an integer constant, got %s", f.Func, f.Args[at])
				}
				cw.n = n
			}
		}
		if !windowOnly[f.Func] && !runningAggregate(f) {
			var arg arrow.DataType
			var params []any
			if len(f.Args) > 0 {
				arg = f.Args[0].Type()
				for _, p := range f.Args[1:] {
					v, ok := constValue(p)
					if !ok {
						return nil, fmt.Errorf("%w: %s: argument %s must be a constant", ErrPlan, f, p)
					}
					params = append(params, v)
				}
			}
			name, distinct, ret := f.Func, f.Distinct, f.DataType
			cw.newAcc = func() (functions.Accumulator, error) {
				return fns.NewAccumulator(name, distinct, arg, ret, params...)
			}
			if _, err := cw.newAcc(); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrPlan, f, err)
			}
		}
		key := sortKeyString(f)
		if g, ok := seen[key]; ok {
			cw.group = g
		} else {
			seen[key], cw.group = i, i
		}
		w.funcs = append(w.funcs, cw)
		fs = append(fs, arrow.Field{Name: names[i], Type: f.DataType, Nullable: true})
	}
	w.out = arrow.NewSchema(fs, nil)
	return w, nil
}

func sortKeyString(f *logical.WindowFunc) string {
	s := ""
	for _, p := range f.Partition {
		s += p.String() + ","
	}
	s += "|"
	for _, o := range f.Order {
		s += o.Expr.String()
		if o.Desc {
			s += " DESC"
		}
		s += ","
	}
	return s
}

// NewWindowFuncs evaluates the functions per epoch (over a windowed
// aggregation's output, one window per epoch).
func NewWindowFuncs(funcs []*logical.WindowFunc, names []string, in *arrow.Schema, fns *functions.Registry) (*WindowFuncs, error) {
	w, err := newWindowEval(funcs, names, in, fns)
	if err != nil {
		return nil, err
	}
	return &WindowFuncs{w: w, pending: map[dataflow.Epoch][]arrow.Record{}}, nil
}

// NewWindowFuncsAtEnd evaluates the functions over the whole input, once it
// has ended (a table, or a stream's end).
func NewWindowFuncsAtEnd(funcs []*logical.WindowFunc, names []string, in *arrow.Schema, fns *functions.Registry) (*WindowFuncs, error) {
	w, err := NewWindowFuncs(funcs, names, in, fns)
	if err != nil {
		return nil, err
	}
	w.atEnd = true
	return w, nil
}

// Schema is the output: the input's columns, then the functions'.
func (w *WindowFuncs) Schema() *arrow.Schema { return w.w.out }

func (w *WindowFuncs) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	if !w.atEnd {
		return nil
	}
	var err error
	w.held, err = cap.Retain()
	return err
}

func (w *WindowFuncs) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if w.atEnd {
		if sp := w.spill; sp != nil && sp.parts != nil {
			defer b.Record.Release()
			return w.write(ctx, b.Record)
		}
		w.pending[0] = append(w.pending[0], b.Record)
		if w.spill != nil && w.spill.over(ctx.Memory(), b.Record) {
			return w.spillHeld(ctx)
		}
		return nil
	}
	if _, ok := w.pending[b.Epoch]; !ok {
		if err := ctx.NotifyAt(cap, b.Epoch); err != nil {
			b.Record.Release()
			return err
		}
	}
	w.pending[b.Epoch] = append(w.pending[b.Epoch], b.Record)
	return nil
}

func (w *WindowFuncs) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	recs := w.pending[cap.Epoch()]
	delete(w.pending, cap.Epoch())
	return w.emit(ctx, cap, recs)
}

func (w *WindowFuncs) OnFrontier(ctx *dataflow.Context, _ int, f dataflow.Epoch) error {
	if !w.atEnd || f != dataflow.Closed || w.held == nil {
		return nil
	}
	var err error
	if w.spill != nil && w.spill.parts != nil {
		err = w.emitSpilled(ctx, w.held)
	} else {
		recs := w.pending[0]
		delete(w.pending, 0)
		err = w.emit(ctx, w.held, recs)
	}
	w.held.Drop()
	w.held = nil
	return err
}

func (w *WindowFuncs) emit(ctx *dataflow.Context, cap *dataflow.Capability, recs []arrow.Record) error {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	all, err := concatRecords(w.c.get(ctx), w.w.in, recs)
	if err != nil || all == nil {
		return err
	}
	defer all.Release()
	out, err := w.w.apply(w.c.get(ctx), all)
	if err != nil {
		return err
	}
	return ctx.Emit(0, cap, out)
}

func (w *WindowFuncs) Close(*dataflow.Context) error {
	if w.held != nil {
		w.held.Drop()
	}
	for _, rs := range w.pending {
		for _, r := range rs {
			r.Release()
		}
	}
	w.pending = nil
	w.spill.close()
	return nil
}

// concatRecords makes one record of recs (nil when they hold no rows).
func concatRecords(c *functions.Ctx, schema *arrow.Schema, recs []arrow.Record) (arrow.Record, error) {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	if n == 0 {
		return nil, nil
	}
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for k, r := range recs {
			parts[k] = r.Column(i)
		}
		a, err := array.Concatenate(parts, c.Mem)
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
		cols[i] = a
	}
	out := array.NewRecord(schema, cols, n)
	releaseArrays(cols)
	return out, nil
}

// apply returns rec with the functions' columns appended.
func (w *windowEval) apply(c *functions.Ctx, rec arrow.Record) (arrow.Record, error) {
	res, err := w.results(c, rec, nil)
	if err != nil {
		return nil, err
	}
	cols := append(append([]arrow.Array(nil), rec.Columns()...), res...)
	out := array.NewRecord(w.out, cols, rec.NumRows())
	releaseArrays(res)
	return out, nil
}

// sorted is rec's rows in one (PARTITION BY, ORDER BY) order, with the
// partition and peer-group boundaries.
type sorted struct {
	perm []int32 // sorted position -> row
	// partEnd[k] and peerStart[k], peerEnd[k]: for the row at sorted
	// position k, where its partition ends and its peer group starts and
	// ends (in sorted positions); partStart likewise.
	partStart, partEnd, peerStart, peerEnd []int32
	order                                  []arrow.Array
}

// results computes one array per function, in rec's row order. keep, when
// set, is told each function group's sort (the streaming operator keeps the
// rows that later frames still need).
func (w *windowEval) results(c *functions.Ctx, rec arrow.Record, keep func(*sorted)) (out []arrow.Array, err error) {
	n := int(rec.NumRows())
	sorts := map[int]*sorted{}
	var owned []arrow.Array
	defer func() {
		releaseArrays(owned)
		if err != nil {
			releaseArrays(out)
			out = nil
		}
	}()
	for _, cw := range w.funcs {
		s, ok := sorts[cw.group]
		if !ok {
			part, err := evalKeys(c, cw.part, rec)
			owned = append(owned, part...)
			if err != nil {
				return out, err
			}
			order, err := evalKeys(c, cw.order, rec)
			owned = append(owned, order...)
			if err != nil {
				return out, err
			}
			s = sortRows(n, part, order, cw.f.Order)
			sorts[cw.group] = s
			if keep != nil {
				keep(s)
			}
		}
		args, err := evalKeys(c, cw.args, rec)
		owned = append(owned, args...)
		if err != nil {
			return out, err
		}
		a, err := cw.compute(c, s, args, n)
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

// cmpNullsLast orders two rows of a key: NULLs after every value in both
// directions, desc reversing only the values.
func cmpNullsLast(a arrow.Array, i, j int, desc bool) int {
	ni, nj := a.IsNull(i), a.IsNull(j)
	switch {
	case ni && nj:
		return 0
	case ni:
		return 1
	case nj:
		return -1
	}
	c := compareRows(a, i, j)
	if desc {
		return -c
	}
	return c
}

// keyCol is one sort key made cheap to compare: fixed-width values encoded
// as order-preserving uint64s (descending ones complemented), NULL flags
// apart; any other type compares through the array.
type keyCol struct {
	enc        []uint64
	null       []bool
	arr        arrow.Array
	desc       bool
	nullsFirst bool
}

func newKeyCol(a arrow.Array, desc, nullsFirst bool) keyCol {
	k := keyCol{arr: a, desc: desc, nullsFirst: nullsFirst}
	n := a.Len()
	if a.NullN() > 0 {
		k.null = make([]bool, n)
		for i := range k.null {
			k.null[i] = a.IsNull(i)
		}
	}
	var enc func(i int) uint64
	switch x := a.(type) {
	case *array.Int64:
		enc = func(i int) uint64 { return uint64(x.Value(i)) ^ 1<<63 }
	case *array.Int32:
		enc = func(i int) uint64 { return uint64(int64(x.Value(i))) ^ 1<<63 }
	case *array.Timestamp:
		enc = func(i int) uint64 { return uint64(x.Value(i)) ^ 1<<63 }
	case *array.Float64:
		enc = func(i int) uint64 { return floatKey(x.Value(i)) }
	case *array.Float32:
		enc = func(i int) uint64 { return floatKey(float64(x.Value(i))) }
	default:
		return k
	}
	k.enc = make([]uint64, n)
	for i := range k.enc {
		if v := enc(i); desc {
			k.enc[i] = ^v
		} else {
			k.enc[i] = v
		}
	}
	return k
}

// floatKey orders float64s as uint64s (negative below positive).
func floatKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// cmp orders rows i and j: NULLs last in both directions, or first.
func (k *keyCol) cmp(i, j int) int {
	if k.null != nil {
		ni, nj := k.null[i], k.null[j]
		last := 1
		if k.nullsFirst {
			last = -1
		}
		switch {
		case ni && nj:
			return 0
		case ni:
			return last
		case nj:
			return -last
		}
	}
	if k.enc != nil {
		return cmpOrdered64(k.enc[i], k.enc[j])
	}
	return cmpNullsLast(k.arr, i, j, k.desc)
}

func cmpOrdered64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func encoded(ks []keyCol) bool {
	for _, k := range ks {
		if k.enc == nil {
			return false
		}
	}
	return true
}

// sortEncoded sorts rows by one or two encoded keys (the common PARTITION BY
// k ORDER BY t), comparing flat structs instead of calling through each key:
// a NULL sorts after every value (its flag before the value), ties by row.
func sortEncoded(perm []int32, ks []keyCol) {
	type item struct {
		n [2]bool // NULL, or for NULLS FIRST a value
		k [2]uint64
		i int32
	}
	items := make([]item, len(perm))
	for x, r := range perm {
		it := item{i: r}
		for j := range ks {
			isNull := ks[j].null != nil && ks[j].null[r]
			it.n[j] = isNull != ks[j].nullsFirst
			if !isNull {
				it.k[j] = ks[j].enc[r]
			}
		}
		items[x] = it
	}
	slices.SortFunc(items, func(a, b item) int {
		for j := 0; j < 2; j++ {
			if a.n[j] != b.n[j] {
				if a.n[j] {
					return 1
				}
				return -1
			}
			if a.k[j] != b.k[j] {
				if a.k[j] < b.k[j] {
					return -1
				}
				return 1
			}
		}
		return int(a.i - b.i)
	})
	for x := range items {
		perm[x] = items[x].i
	}
}

func sortRows(n int, part, order []arrow.Array, keys []logical.WindowKey) *sorted {
	s := &sorted{perm: make([]int32, n), order: order}
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	pk := make([]keyCol, len(part))
	for i, a := range part {
		pk[i] = newKeyCol(a, false, false)
	}
	ok := make([]keyCol, len(order))
	for i, a := range order {
		ok[i] = newKeyCol(a, keys[i].Desc, keys[i].NullsFirst)
	}
	cmpPart := func(i, j int) int {
		for k := range pk {
			if c := pk[k].cmp(i, j); c != 0 {
				return c
			}
		}
		return 0
	}
	cmpOrder := func(i, j int) int {
		for k := range ok {
			if c := ok[k].cmp(i, j); c != 0 {
				return c
			}
		}
		return 0
	}
	all := append(append([]keyCol(nil), pk...), ok...)
	switch {
	case len(all) > 0 && len(all) <= 2 && encoded(all):
		sortEncoded(s.perm, all)
	case len(all) > 0:
		// Ties keep the input's order (a stable sort, by the row number).
		slices.SortFunc(s.perm, func(x, y int32) int {
			i, j := int(x), int(y)
			if c := cmpPart(i, j); c != 0 {
				return c
			}
			if c := cmpOrder(i, j); c != 0 {
				return c
			}
			return cmpOrdered(x, y)
		})
	}
	s.partStart, s.partEnd = make([]int32, n), make([]int32, n)
	s.peerStart, s.peerEnd = make([]int32, n), make([]int32, n)
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && cmpPart(int(s.perm[ps]), int(s.perm[pe])) == 0 {
			pe++
		}
		for qs := ps; qs < pe; {
			qe := qs + 1
			for qe < pe && cmpOrder(int(s.perm[qs]), int(s.perm[qe])) == 0 {
				qe++
			}
			for k := qs; k < qe; k++ {
				s.partStart[k], s.partEnd[k] = int32(ps), int32(pe)
				s.peerStart[k], s.peerEnd[k] = int32(qs), int32(qe)
			}
			qs = qe
		}
		ps = pe
	}
	return s
}

// compute evaluates one function over the sorted rows.
func (cw *compiledWindow) compute(c *functions.Ctx, s *sorted, args []arrow.Array, n int) (arrow.Array, error) {
	f := cw.f
	switch f.Func {
	case "row_number", "rank", "dense_rank", "ntile":
		vals := make([]int64, n)
		var dense int64
		for k := 0; k < n; k++ {
			ps, pe := int(s.partStart[k]), int(s.partEnd[k])
			if k == ps {
				dense = 0
			}
			if k == int(s.peerStart[k]) {
				dense++
			}
			var v int64
			switch f.Func {
			case "row_number":
				v = int64(k - ps + 1)
			case "rank":
				v = int64(int(s.peerStart[k]) - ps + 1)
			case "dense_rank":
				v = dense
			case "ntile":
				v = ntile(int64(pe-ps), cw.n, int64(k-ps))
			}
			vals[s.perm[k]] = v
		}
		return buildInt64(c, vals, nil), nil
	case "percent_rank", "cume_dist":
		vals := make([]float64, n)
		for k := 0; k < n; k++ {
			ps, pe := int(s.partStart[k]), int(s.partEnd[k])
			var v float64
			if f.Func == "percent_rank" {
				if pe-ps > 1 {
					v = float64(int(s.peerStart[k])-ps) / float64(pe-ps-1)
				}
			} else {
				v = float64(int(s.peerEnd[k])-ps) / float64(pe-ps)
			}
			vals[s.perm[k]] = v
		}
		return buildFloat64(c, vals, nil), nil
	case "lag", "lead":
		off := min(cw.n, int64(n)+1) // past every partition, and no overflow
		if f.Func == "lead" {
			off = -off
		}
		idx := make([]int32, n)
		for k := 0; k < n; k++ {
			src := int64(k) - off
			switch {
			case src >= int64(s.partStart[k]) && src < int64(s.partEnd[k]):
				idx[s.perm[k]] = s.perm[src]
			case len(args) == 3:
				idx[s.perm[k]] = int32(n) + s.perm[k] // the row's default
			default:
				idx[s.perm[k]] = -1
			}
		}
		src := args[0]
		if len(args) == 3 {
			both, err := array.Concatenate([]arrow.Array{args[0], args[2]}, c.Mem)
			if err != nil {
				return nil, err
			}
			defer both.Release()
			src = both
		}
		return eval.Gather(c.Context(), c.Mem, src, idx)
	}
	fs, fe := cw.frames(s)
	if cw.newAcc != nil {
		return cw.frameAccumulate(c, s, args, fs, fe)
	}
	switch f.Func {
	case "first_value", "last_value", "nth_value":
		idx := make([]int32, n)
		for k := 0; k < n; k++ {
			at := int32(-1)
			switch f.Func {
			case "first_value":
				if fs[k] < fe[k] {
					at = fs[k]
				}
			case "last_value":
				if fs[k] < fe[k] {
					at = fe[k] - 1
				}
			default:
				if cw.n <= int64(fe[k]-fs[k]) { // (a huge n cannot overflow)
					at = fs[k] + int32(cw.n) - 1
				}
			}
			if at >= 0 {
				at = s.perm[at]
			}
			idx[s.perm[k]] = at
		}
		return eval.Gather(c.Context(), c.Mem, args[0], idx)
	case "count", "sum", "avg":
		return frameSums(c, f, s, args, fs, fe, n)
	case "min", "max":
		return frameExtreme(c, f.Func == "max", s, args[0], fs, fe, n)
	}
	return nil, fmt.Errorf("window function %s is not implemented", f.Func)
}

// frameAccumulate evaluates any aggregate over every frame with its
// accumulator: one group per distinct frame, in sorted order, so the frame's
// rows are one contiguous run of the sorted argument. A frame that extends
// the previous row's (a growing frame) starts from a merge of its group and
// folds only the new rows; others fold their rows (O(frame) each).
func (cw *compiledWindow) frameAccumulate(c *functions.Ctx, s *sorted, args []arrow.Array, fs, fe []int32) (arrow.Array, error) {
	acc, err := cw.newAcc()
	if err != nil {
		return nil, err
	}
	n := len(s.perm)
	var arg arrow.Array
	if len(args) > 0 {
		if arg, err = eval.Gather(c.Context(), c.Mem, args[0], s.perm); err != nil {
			return nil, err
		}
		defer arg.Release()
	}
	gid := make([]uint32, n)
	var buf []uint32
	fold := func(g uint32, lo, hi int32) {
		if hi <= lo {
			return
		}
		buf = buf[:0]
		for range hi - lo {
			buf = append(buf, g)
		}
		acc.Update(buf, arg, int(lo))
	}
	groups := 0
	for k := 0; k < n; k++ {
		lo, hi := fs[k], max(fe[k], fs[k])
		var plo, phi int32 = -1, -1 // the previous row's frame, in its partition
		if k > 0 && s.partStart[k] == s.partStart[k-1] {
			plo, phi = fs[k-1], max(fe[k-1], fs[k-1])
		}
		if lo == plo && hi == phi {
			gid[k] = gid[k-1]
			continue
		}
		g := uint32(groups)
		groups++
		acc.Grow(groups)
		if lo == plo && hi > phi && phi > lo {
			acc.Merge(g, gid[k-1])
			fold(g, phi, hi)
		} else {
			fold(g, lo, hi)
		}
		gid[k] = g
	}
	if f, ok := acc.(functions.Failer); ok && f.Err() != nil {
		return nil, f.Err()
	}
	res := acc.Finish(c.Mem, gid) // in sorted order
	defer res.Release()
	inv := make([]int32, n)
	for k, r := range s.perm {
		inv[r] = int32(k)
	}
	return eval.Gather(c.Context(), c.Mem, res, inv)
}

// ntile is DuckDB's: the first rows%buckets buckets hold one row more.
func ntile(rows, buckets, i int64) int64 {
	buckets = min(buckets, rows)
	size := rows / buckets
	large := rows - buckets*size
	small := large * (size + 1)
	if i < small {
		return 1 + i/(size+1)
	}
	return 1 + large + (i-small)/size
}

// frames returns each sorted row's frame as [fs, fe) in sorted positions.
func (cw *compiledWindow) frames(s *sorted) (fs, fe []int32) {
	n := len(s.perm)
	fs, fe = make([]int32, n), make([]int32, n)
	fr := cw.f.Frame
	var pos []float64 // RANGE offsets: the key, negated for DESC
	var null []bool
	if fr.Unit == logical.FrameRange && (isOffset(fr.Start) || isOffset(fr.End)) {
		pos, null = make([]float64, n), make([]bool, n)
		key := s.order[0]
		for k := 0; k < n; k++ {
			r := int(s.perm[k])
			if key.IsNull(r) {
				null[k] = true
				continue
			}
			pos[k] = numberAt(key, r)
			if cw.f.Order[0].Desc {
				pos[k] = -pos[k]
			}
		}
	}
	bound := func(b logical.FrameBound, k int, end bool) int32 {
		ps, pe := s.partStart[k], s.partEnd[k]
		clamp := func(v int64) int32 { return int32(max(int64(ps), min(int64(pe), v))) }
		switch b.Kind {
		case logical.UnboundedPreceding:
			return ps
		case logical.UnboundedFollowing:
			return pe
		}
		if fr.Unit == logical.FrameRows {
			d := int64(min(b.Offset, float64(len(s.perm)+1))) // past every partition, no overflow
			switch b.Kind {
			case logical.OffsetPreceding:
				d = -d
			case logical.CurrentRow:
				d = 0
			}
			if end {
				d++
			}
			return clamp(int64(k) + d)
		}
		if b.Kind == logical.CurrentRow || null != nil && null[k] {
			// A NULL key's peers are the NULLs: no value is at a distance.
			if end {
				return s.peerEnd[k]
			}
			return s.peerStart[k]
		}
		// Non-NULL keys of the partition are [lo, nn), ascending in pos:
		// the NULLs are after them, or before for NULLS FIRST.
		lo, nn := int(ps), int(pe)
		if cw.f.Order[0].NullsFirst {
			lo += sort.Search(int(pe)-int(ps), func(i int) bool { return !null[int(ps)+i] })
		} else {
			nn = lo + sort.Search(int(pe)-int(ps), func(i int) bool { return null[int(ps)+i] })
		}
		target := pos[k] + b.Offset
		if b.Kind == logical.OffsetPreceding {
			target = pos[k] - b.Offset
		}
		if end { // first row past the target
			return int32(lo + sort.Search(nn-lo, func(i int) bool { return pos[lo+i] > target }))
		}
		return int32(lo + sort.Search(nn-lo, func(i int) bool { return pos[lo+i] >= target }))
	}
	for k := 0; k < n; k++ {
		fs[k], fe[k] = bound(fr.Start, k, false), bound(fr.End, k, true)
	}
	return fs, fe
}

func isOffset(b logical.FrameBound) bool {
	return b.Kind == logical.OffsetPreceding || b.Kind == logical.OffsetFollowing
}

// numberAt reads a numeric or timestamp value as float64 (RANGE distances).
func numberAt(a arrow.Array, i int) float64 {
	switch a := a.(type) {
	case *array.Int64:
		return float64(a.Value(i))
	case *array.Int32:
		return float64(a.Value(i))
	case *array.Int16:
		return float64(a.Value(i))
	case *array.Int8:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Timestamp:
		return float64(a.Value(i))
	}
	v, _ := strconv.ParseFloat(a.ValueStr(i), 64)
	return v
}

// numbers reads a numeric array as int64s, or float64s when it is floating.
func numbers(a arrow.Array) (ints []int64, floats []float64) {
	n := a.Len()
	switch a := a.(type) {
	case *array.Int64:
		return functions.Int64Values(a), nil
	case *array.Float64:
		return nil, a.Float64Values()
	case *array.Float32:
		floats = make([]float64, n)
		for i := range floats {
			floats[i] = float64(a.Value(i))
		}
		return nil, floats
	}
	ints = make([]int64, n)
	for i := range ints {
		if a.IsValid(i) {
			ints[i] = int64(numberAt(a, i))
		}
	}
	return ints, nil
}

// frameSums computes count, sum and avg over every frame from prefix sums per
// partition: a frame starting at its partition's start reads one prefix (a
// running sum, exactly the sequential one); a sliding frame the difference
// of two, or for floating values in a narrow frame its own sum, so that
// cancellation in a long prefix cannot cost it precision.
func frameSums(c *functions.Ctx, f *logical.WindowFunc, s *sorted, args []arrow.Array, fs, fe []int32, n int) (arrow.Array, error) {
	if f.Func == "count" && len(args) == 0 {
		vals := make([]int64, n)
		for k := 0; k < n; k++ {
			vals[s.perm[k]] = int64(max(0, fe[k]-fs[k]))
		}
		return buildInt64(c, vals, nil), nil
	}
	a := args[0]
	ints, floats := numbers(a)
	isFloat := floats != nil
	// Running totals over sorted positions, restarting at each partition:
	// run[k] covers [partStart, k], so a frame [lo, hi) is run[hi-1] less
	// run[lo-1] when lo is past the partition's start.
	cnt := make([]int64, n)
	var isum []int64
	var fsum []float64
	if isFloat {
		fsum = make([]float64, n)
	} else {
		isum = make([]int64, n)
	}
	for k := 0; k < n; k++ {
		r := int(s.perm[k])
		if int32(k) != s.partStart[k] {
			cnt[k] = cnt[k-1]
			if isFloat {
				fsum[k] = fsum[k-1]
			} else {
				isum[k] = isum[k-1]
			}
		}
		if a.IsValid(r) {
			cnt[k]++
			if isFloat {
				fsum[k] += floats[r]
			} else {
				isum[k] += ints[r]
			}
		}
	}
	count := func(k int) int64 {
		lo, hi := fs[k], fe[k]
		if lo >= hi {
			return 0
		}
		c := cnt[hi-1]
		if lo > s.partStart[k] {
			c -= cnt[lo-1]
		}
		return c
	}
	fsumOf := func(k int) float64 {
		lo, hi := fs[k], fe[k]
		if lo > s.partStart[k] && hi-lo <= 64 {
			var v float64
			for p := lo; p < hi; p++ {
				if r := int(s.perm[p]); a.IsValid(r) {
					v += floats[r]
				}
			}
			return v
		}
		v := fsum[hi-1]
		if lo > s.partStart[k] {
			v -= fsum[lo-1]
		}
		return v
	}
	isumOf := func(k int) int64 {
		lo, hi := fs[k], fe[k]
		v := isum[hi-1]
		if lo > s.partStart[k] {
			v -= isum[lo-1]
		}
		return v
	}
	valid := make([]bool, n)
	switch {
	case f.Func == "count":
		vals := make([]int64, n)
		for k := 0; k < n; k++ {
			vals[s.perm[k]] = count(k)
		}
		return buildInt64(c, vals, nil), nil
	case f.Func == "avg" || isFloat:
		vals := make([]float64, n)
		for k := 0; k < n; k++ {
			m := count(k)
			if m == 0 {
				continue
			}
			r := s.perm[k]
			valid[r] = true
			var v float64
			if isFloat {
				v = fsumOf(k)
			} else {
				v = float64(isumOf(k))
			}
			if f.Func == "avg" {
				v /= float64(m)
			}
			vals[r] = v
		}
		return buildFloat64(c, vals, valid), nil
	}
	vals := make([]int64, n)
	for k := 0; k < n; k++ {
		if count(k) == 0 {
			continue
		}
		r := s.perm[k]
		valid[r] = true
		vals[r] = isumOf(k)
	}
	return buildInt64(c, vals, valid), nil
}

// frameExtreme computes min or max over every frame with a monotonic deque
// per partition: frames only move forward as the row does, so each row
// enters and leaves the deque once.
func frameExtreme(c *functions.Ctx, isMax bool, s *sorted, a arrow.Array, fs, fe []int32, n int) (arrow.Array, error) {
	idx := make([]int32, n)
	better := func(p, q int32) bool { // p's value beats (or ties) q's
		cmp := compareRows(a, int(s.perm[p]), int(s.perm[q]))
		if isMax {
			return cmp >= 0
		}
		return cmp <= 0
	}
	dq := make([]int32, 0, 64)
	var head int
	var hi int32
	for k := 0; k < n; k++ {
		if int32(k) == s.partStart[k] {
			dq, head, hi = dq[:0], 0, s.partStart[k]
		}
		for ; hi < fe[k]; hi++ {
			if a.IsNull(int(s.perm[hi])) {
				continue
			}
			for len(dq) > head && better(hi, dq[len(dq)-1]) {
				dq = dq[:len(dq)-1]
			}
			dq = append(dq, hi)
		}
		for head < len(dq) && dq[head] < fs[k] {
			head++
		}
		if head < len(dq) && dq[head] < fe[k] {
			idx[s.perm[k]] = s.perm[dq[head]]
		} else {
			idx[s.perm[k]] = -1
		}
	}
	return eval.Gather(c.Context(), c.Mem, a, idx)
}

func buildInt64(c *functions.Ctx, vals []int64, valid []bool) arrow.Array {
	b := array.NewInt64Builder(c.Mem)
	defer b.Release()
	b.AppendValues(vals, valid)
	return b.NewArray()
}

func buildFloat64(c *functions.Ctx, vals []float64, valid []bool) arrow.Array {
	b := array.NewFloat64Builder(c.Mem)
	defer b.Release()
	b.AppendValues(vals, valid)
	return b.NewArray()
}
