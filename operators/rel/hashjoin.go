package rel

import (
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// JoinKind is inner or left outer.
type JoinKind int

// Join kinds.
const (
	InnerJoin JoinKind = iota
	LeftJoin
)

// JoinSpec is an equi-join: LeftKeys over the left (probe, stream) schema equal
// RightKeys over the right (build) schema; Residual, over the output schema
// (left columns then right), further filters matches (inner joins only).
type JoinSpec struct {
	Kind      JoinKind
	LeftKeys  []expr.Expr
	RightKeys []expr.Expr
	Residual  expr.Expr
}

// SplitJoinCondition splits a bound ON condition over (left ++ right) columns
// into equi-key pairs and a residual: conjuncts l = r where one side reads only
// left columns and the other only right columns become keys (right re-indexed to
// the right schema); everything else stays in the residual.
func SplitJoinCondition(on expr.Expr, nLeft int) (lk, rk []expr.Expr, residual expr.Expr) {
	var conj []expr.Expr
	var flatten func(e expr.Expr)
	flatten = func(e expr.Expr) {
		if l, ok := e.(*expr.Logic); ok && l.Op == expr.OpAnd {
			for _, a := range l.Args {
				flatten(a)
			}
			return
		}
		conj = append(conj, e)
	}
	if on != nil {
		flatten(on)
	}
	side := func(e expr.Expr) int { // 0 left only, 1 right only, -1 mixed or none
		cols := expr.Columns(e)
		if len(cols) == 0 {
			return -1
		}
		if cols[len(cols)-1] < nLeft {
			return 0
		}
		if cols[0] >= nLeft {
			return 1
		}
		return -1
	}
	shift := func(e expr.Expr) expr.Expr {
		return expr.Transform(e, func(x expr.Expr) expr.Expr {
			if c, ok := x.(*expr.Column); ok {
				return &expr.Column{Index: c.Index - nLeft, Name: c.Name, DataType: c.DataType}
			}
			return x
		})
	}
	var rest []expr.Expr
	for _, c := range conj {
		if call, ok := c.(*expr.Call); ok && call.Func == "equal" && len(call.Args) == 2 {
			a, b := call.Args[0], call.Args[1]
			if side(a) == 0 && side(b) == 1 {
				lk, rk = append(lk, a), append(rk, shift(b))
				continue
			}
			if side(a) == 1 && side(b) == 0 {
				lk, rk = append(lk, b), append(rk, shift(a))
				continue
			}
		}
		rest = append(rest, c)
	}
	switch len(rest) {
	case 0:
	case 1:
		residual = rest[0]
	default:
		residual = &expr.Logic{Op: expr.OpAnd, Args: rest}
	}
	return lk, rk, residual
}

// HashJoin is the join kernel: Build indexes the right side once, Probe joins
// batches of the left side against it.
type HashJoin struct {
	mem      memory.Allocator
	fctx     *functions.Ctx
	spec     JoinSpec
	schema   *arrow.Schema
	leftEv   []*eval.Evaluator
	rightEv  []*eval.Evaluator
	residual *eval.Predicate
	// resCols are the output columns the residual reads; it is compiled
	// over those alone, so that a match's other columns are gathered only
	// when it passes (late materialisation).
	resCols []int
	right   []arrow.Array // build side, concatenated, one per column
	// The build side's keys get dense ids in a typed key table; the rows
	// of id g are first[g], next[first[g]], ... in build order (-1 ends).
	table       *keyTable
	first, last []int32
	next        []int32
	// direct replaces table, first and last for one dense integer key
	// (join_direct.go).
	direct *directIndex
	// noDirect keeps the hash table, gatherAll copies every probe column
	// (the benchmark's baseline).
	noDirect, gatherAll bool
	built               bool
	li, ri              []int32 // probe index buffers, reused
	found               []int32
}

// JoinSchema is the output schema: left columns then right columns (right ones
// nullable for a left join).
func JoinSchema(left, right *arrow.Schema) *arrow.Schema {
	fs := append([]arrow.Field{}, left.Fields()...)
	for _, f := range right.Fields() {
		f.Nullable = true
		fs = append(fs, f)
	}
	return arrow.NewSchema(fs, nil)
}

// NewHashJoin compiles spec against the two input schemas.
func NewHashJoin(mem memory.Allocator, spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry) (*HashJoin, error) {
	if len(spec.LeftKeys) == 0 || len(spec.LeftKeys) != len(spec.RightKeys) {
		return nil, fmt.Errorf("%w: a hash join needs equality conditions between the two sides", ErrPlan)
	}
	if spec.Residual != nil && spec.Kind == LeftJoin {
		return nil, fmt.Errorf("%w: LEFT JOIN with non-equality conditions (%s) is not supported", ErrPlan, spec.Residual)
	}
	// Own copies: the casts below must not write into the caller's slices.
	spec.LeftKeys = append([]expr.Expr(nil), spec.LeftKeys...)
	spec.RightKeys = append([]expr.Expr(nil), spec.RightKeys...)
	j := &HashJoin{mem: mem, fctx: functions.NewCtx(mem), spec: spec, schema: JoinSchema(left, right)}
	for i := range spec.LeftKeys {
		lt, rt := spec.LeftKeys[i].Type(), spec.RightKeys[i].Type()
		if ct, ok := expr.CommonType(lt, rt); ok {
			spec.LeftKeys[i], spec.RightKeys[i] = expr.CastTo(spec.LeftKeys[i], ct), expr.CastTo(spec.RightKeys[i], ct)
		} else {
			return nil, fmt.Errorf("%w: join keys %s and %s do not compare", ErrPlan, spec.LeftKeys[i], spec.RightKeys[i])
		}
		j.spec = spec
		le, err := eval.Compile(spec.LeftKeys[i], left, fns)
		if err != nil {
			return nil, err
		}
		re, err := eval.Compile(spec.RightKeys[i], right, fns)
		if err != nil {
			return nil, err
		}
		j.leftEv, j.rightEv = append(j.leftEv, le), append(j.rightEv, re)
	}
	if spec.Residual != nil {
		j.resCols = expr.Columns(spec.Residual)
		at := map[int]int{}
		fs := make([]arrow.Field, len(j.resCols))
		for i, c := range j.resCols {
			if c >= j.schema.NumFields() {
				return nil, fmt.Errorf("%w: join condition %s reads column %d of %d", ErrPlan, spec.Residual, c, j.schema.NumFields())
			}
			at[c], fs[i] = i, j.schema.Field(c)
		}
		res := expr.Transform(spec.Residual, func(x expr.Expr) expr.Expr {
			if c, ok := x.(*expr.Column); ok {
				return &expr.Column{Index: at[c.Index], Name: c.Name, DataType: c.DataType}
			}
			return x
		})
		p, err := eval.NewPredicate(res, arrow.NewSchema(fs, nil), fns)
		if err != nil {
			return nil, err
		}
		j.residual = p
	}
	types := make([]arrow.DataType, len(spec.RightKeys))
	for i, k := range spec.RightKeys {
		types[i] = k.Type()
	}
	j.table = newKeyTable(mem, types)
	j.table.noValues = true
	return j, nil
}

// Schema is the output schema.
func (j *HashJoin) Schema() *arrow.Schema { return j.schema }

func evalKeys(c *functions.Ctx, evs []*eval.Evaluator, rec arrow.Record) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(evs))
	for _, ev := range evs {
		a, err := ev.Eval(c, rec)
		if err != nil {
			releaseArrays(out)
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

func anyNullAt(cols []arrow.Array, i int) bool {
	for _, c := range cols {
		if c.IsNull(i) {
			return true
		}
	}
	return false
}

// Build indexes the right side (the records are not released). Call once.
func (j *HashJoin) Build(recs []arrow.Record, rightSchema *arrow.Schema) error {
	j.built = true
	var nonEmpty []arrow.Record
	for _, r := range recs {
		if r.NumRows() > 0 {
			nonEmpty = append(nonEmpty, r)
		}
	}
	for c := 0; c < rightSchema.NumFields(); c++ {
		var parts []arrow.Array
		for _, r := range nonEmpty {
			parts = append(parts, r.Column(c))
		}
		if len(parts) == 0 {
			j.right = append(j.right, array.MakeArrayOfNull(j.mem, rightSchema.Field(c).Type, 0))
			continue
		}
		a, err := concatColumn(j.mem, parts)
		if err != nil {
			return err
		}
		j.right = append(j.right, a)
	}
	if j.buildDirect(nonEmpty) {
		return nil
	}
	var gids []uint32
	for _, r := range nonEmpty {
		keys, err := evalKeys(j.fctx, j.rightEv, r)
		if err != nil {
			return err
		}
		n := int(r.NumRows())
		gids = slices.Grow(gids[:0], n)[:n]
		j.table.lookupBatch(keys, 0, n, gids)
		for i, g := range gids {
			row := int32(len(j.next))
			j.next = append(j.next, -1)
			if anyNullAt(keys, i) {
				continue // NULL never equals anything
			}
			for int(g) >= len(j.first) {
				j.first, j.last = append(j.first, -1), append(j.last, -1)
			}
			if j.last[g] < 0 {
				j.first[g] = row
			} else {
				j.next[j.last[g]] = row
			}
			j.last[g] = row
		}
		releaseArrays(keys)
	}
	return nil
}

// buildDirect indexes the build rows by an array when the join has one
// integer key whose values are dense (join_direct.go); false, having
// changed nothing, otherwise.
func (j *HashJoin) buildDirect(recs []arrow.Record) bool {
	if j.table.ints == nil || j.noDirect || len(recs) == 0 {
		return false
	}
	var cols []arrow.Array
	defer func() { releaseArrays(cols) }()
	rows := 0
	for _, r := range recs {
		keys, err := evalKeys(j.fctx, j.rightEv, r)
		if err != nil {
			releaseArrays(keys)
			return false // the hash path reports it
		}
		cols = append(cols, keys[0])
		rows += int(r.NumRows())
	}
	lo, hi, n := keyRange(cols)
	d := newDirectIndex(lo, hi, n)
	if d == nil {
		return false
	}
	j.next = make([]int32, rows)
	for i := range j.next {
		j.next[i] = -1
	}
	d.build(cols, j.next)
	j.direct = d
	return true
}

// Probe joins rec (left side) against the built table; nil when nothing matches
// (inner). rec is not released.
func (j *HashJoin) Probe(rec arrow.Record) (arrow.Record, error) {
	var outs []arrow.Record
	err := j.ProbeEach(rec, func(r arrow.Record) error { outs = append(outs, r); return nil })
	defer func() {
		for _, r := range outs {
			r.Release()
		}
	}()
	switch {
	case err != nil || len(outs) == 0:
		return nil, err
	case len(outs) == 1:
		outs[0].Retain()
		return outs[0], nil
	}
	cols := make([]arrow.Array, outs[0].NumCols())
	defer func() { releaseArrays(cols) }()
	rows := int64(0)
	for c := range cols {
		parts := make([]arrow.Array, len(outs))
		for k, r := range outs {
			parts[k] = r.Column(c)
		}
		a, err := array.Concatenate(parts, j.mem)
		if err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		cols[c] = a
	}
	for _, r := range outs {
		rows += r.NumRows()
	}
	return array.NewRecord(outs[0].Schema(), cols, rows), nil
}

// maxJoinOut bounds the rows of one record a probe emits. A batch whose
// rows each match many (a cross product, a key many rows share) comes out
// in pieces of this many rows: no record's string columns then outgrow the
// 2 GiB their 32-bit offsets address (a q2 at scale factor 1, joined in
// FROM order, made 41 million rows of one batch and overflowed them), and
// the operator after the join sees batches of a size it can work in.
const maxJoinOut = 1 << 16

// ProbeEach joins one batch of the left side with the built table and hands
// the joined rows to emit (which takes them) in records of at most
// maxJoinOut rows.
func (j *HashJoin) ProbeEach(rec arrow.Record, emit func(arrow.Record) error) error {
	keys, err := evalKeys(j.fctx, j.leftEv, rec)
	if err != nil {
		return err
	}
	defer releaseArrays(keys)
	li, ri := j.li[:0], j.ri[:0]
	n := int(rec.NumRows())
	// once: every probe row is in li once, in order (li is 0, ..., n-1),
	// so the probe side's columns go on as they are, not gathered.
	once := false
	if j.direct != nil && arrow.TypeEqual(keys[0].DataType(), j.table.types[0]) {
		li, ri, once = j.direct.probe(keys[0], j.next, j.spec.Kind == LeftJoin, li, ri)
	} else {
		j.found = slices.Grow(j.found[:0], n)[:n]
		j.table.find(keys, 0, n, j.found)
		once = true
		for i, g := range j.found {
			m := int32(-1)
			if g >= 0 && int(g) < len(j.first) {
				m = j.first[g]
			}
			if m < 0 {
				if j.spec.Kind == LeftJoin {
					li, ri = append(li, int32(i)), append(ri, -1)
				} else {
					once = false
				}
				continue
			}
			li, ri = append(li, int32(i)), append(ri, m)
			for m = j.next[m]; m >= 0; m = j.next[m] {
				once = false
				li, ri = append(li, int32(i)), append(ri, m)
			}
		}
	}
	once = once && !j.gatherAll
	j.li, j.ri = li, ri
	for from := 0; from < len(li); from += maxJoinOut {
		to := min(from+maxJoinOut, len(li))
		// The probe side's columns go on as they are only when this
		// piece is the whole batch, row for row.
		whole := once && from == 0 && to == len(li)
		var out arrow.Record
		if j.residual != nil {
			out, err = j.probeResidual(rec, li[from:to], ri[from:to], whole)
		} else {
			out, err = gatherJoin(j.fctx, j.schema, rec.Columns(), j.right, li[from:to], ri[from:to], whole)
		}
		if err != nil {
			return err
		}
		if out == nil {
			continue
		}
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}

// probeResidual keeps the matches (li, ri) that pass the residual: it
// gathers the columns the residual reads, and the others only for the
// matches that pass.
func (j *HashJoin) probeResidual(rec arrow.Record, li, ri []int32, once bool) (arrow.Record, error) {
	nLeft := int(rec.NumCols())
	cols := make([]arrow.Array, 0, len(j.resCols))
	defer func() { releaseArrays(cols) }()
	fs := make([]arrow.Field, 0, len(j.resCols))
	for _, c := range j.resCols {
		var a arrow.Array
		var err error
		switch {
		case c < nLeft && once:
			a = rec.Column(c)
			a.Retain()
		case c < nLeft:
			a, err = eval.Gather(j.fctx.Context(), j.mem, rec.Column(c), li)
		default:
			a, err = eval.Gather(j.fctx.Context(), j.mem, j.right[c-nLeft], ri)
		}
		if err != nil {
			return nil, err
		}
		cols = append(cols, a)
		fs = append(fs, arrow.Field{Name: j.schema.Field(c).Name, Type: a.DataType(), Nullable: true})
	}
	sub := array.NewRecord(arrow.NewSchema(fs, nil), cols, int64(len(li)))
	defer sub.Release()
	sel, all, err := j.residual.Select(j.fctx, sub)
	switch {
	case err != nil:
		return nil, err
	case all:
		return gatherJoin(j.fctx, j.schema, rec.Columns(), j.right, li, ri, once)
	case len(sel) == 0:
		return nil, nil
	}
	kl, kr := make([]int32, len(sel)), make([]int32, len(sel))
	for k, s := range sel {
		kl[k], kr[k] = li[s], ri[s]
	}
	return gatherJoin(j.fctx, j.schema, rec.Columns(), j.right, kl, kr, false)
}

// gatherJoin takes the left rows lidx and right rows ridx (-1: a NULL row)
// into one record; leftAsIs: lidx is every left row in order, whose columns
// are taken as they are.
func gatherJoin(c *functions.Ctx, schema *arrow.Schema, left, right []arrow.Array, lidx, ridx []int32, leftAsIs bool) (arrow.Record, error) {
	cols := make([]arrow.Array, 0, len(left)+len(right))
	defer func() { releaseArrays(cols) }()
	for k, a := range append(append([]arrow.Array{}, left...), right...) {
		if k < len(left) && leftAsIs {
			a.Retain()
			cols = append(cols, a)
			continue
		}
		idx := lidx
		if k >= len(left) {
			idx = ridx
		}
		out, err := eval.Gather(c.Context(), c.Mem, a, idx)
		if err != nil {
			return nil, err
		}
		cols = append(cols, out)
	}
	return array.NewRecord(columnTypes(schema, cols), cols, int64(len(lidx))), nil
}

// columnTypes is schema with each field typed as its column is: a string
// column that a Parquet scan passed on as dictionary codes stays so
// (dictkeys.go).
func columnTypes(schema *arrow.Schema, cols []arrow.Array) *arrow.Schema {
	var fs []arrow.Field
	for i, c := range cols {
		if arrow.TypeEqual(c.DataType(), schema.Field(i).Type) {
			continue
		}
		if fs == nil {
			fs = append([]arrow.Field(nil), schema.Fields()...)
		}
		fs[i].Type = c.DataType()
	}
	if fs == nil {
		return schema
	}
	return arrow.NewSchema(fs, nil)
}

// Release frees the build side.
func (j *HashJoin) Release() {
	releaseArrays(j.right)
	j.right = nil
	if j.table != nil {
		j.table.release()
		j.table = nil
	}
	j.first, j.last, j.next = nil, nil, nil
	j.direct = nil
}
