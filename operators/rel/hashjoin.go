package rel

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// JoinKind is what a join outputs. Inner and left joins output probe (left)
// rows with their build (right) matches; semi, anti and mark joins the probe
// rows alone (those with a match, those without, all with a BOOLEAN mark);
// BuildSemi and BuildAnti the build rows that some probe row matched, or
// none did, once every probe row has been seen (EmitBuild).
type JoinKind int

// Join kinds.
const (
	InnerJoin JoinKind = iota
	LeftJoin
	SemiJoin
	AntiJoin
	MarkJoin
	BuildSemi
	BuildAnti
)

func (k JoinKind) String() string {
	return [...]string{"inner", "left", "semi", "anti", "mark", "build-side semi", "build-side anti"}[k]
}

// buildOutput: the join outputs build rows, after the probe side ends.
func (k JoinKind) buildOutput() bool { return k == BuildSemi || k == BuildAnti }

// probeOnly: the output is the probe rows (and a mark), no build columns.
func (k JoinKind) probeOnly() bool { return k == SemiJoin || k == AntiJoin || k == MarkJoin }

// JoinSpec is an equi-join: LeftKeys over the left (probe, stream) schema equal
// RightKeys over the right (build) schema; Residual, over the output schema
// (left columns then right), further filters matches: a LEFT JOIN's probe
// row none of whose pairs passes it goes out once with NULLs.
// For semi, anti and mark joins Residual reads the left columns then the
// right ones as well: a probe row matches when some build row has equal keys
// and passes it. NullAware gives an anti or mark join NOT IN's (IN's) NULL
// semantics over its one key (see logical.Join).
type JoinSpec struct {
	Kind      JoinKind
	LeftKeys  []expr.Expr
	RightKeys []expr.Expr
	Residual  expr.Expr
	NullAware bool
	// Mark names a mark join's column.
	Mark string
	// Prune, over the output schema as Residual, is the filter right
	// above an inner or cross join, which drops the pairs it rejects: the
	// join may leave them out early. An inner join judges it with the
	// residual, so a cross join under a selective WHERE makes the rows
	// the filter keeps, not its whole product, and the comparisons of the
	// two sides index the build side (join_band.go). Other kinds ignore
	// it.
	Prune expr.Expr
}

// SplitJoinCondition splits a bound ON condition over (left ++ right) columns
// into equi-key pairs and a residual: conjuncts l = r where one side reads only
// left columns and the other only right columns become keys (right re-indexed to
// the right schema); everything else stays in the residual.
func SplitJoinCondition(on expr.Expr, nLeft int) (lk, rk []expr.Expr, residual expr.Expr) {
	conj := andConjuncts(on)
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
	var rest []expr.Expr
	for _, c := range conj {
		if call, ok := c.(*expr.Call); ok && call.Func == "equal" && len(call.Args) == 2 {
			a, b := call.Args[0], call.Args[1]
			if side(a) == 0 && side(b) == 1 {
				lk, rk = append(lk, a), append(rk, shift(b, -nLeft))
				continue
			}
			if side(a) == 1 && side(b) == 0 {
				lk, rk = append(lk, b), append(rk, shift(a, -nLeft))
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
// batches of the left side against it. A built table can be shared with
// other HashJoins of the same spec (Share), which probe it concurrently:
// the table is read-only once built, and each HashJoin keeps its own
// scratch buffers.
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
	nLeft   int
	tab     *joinTable
	// view is the table's key index with this HashJoin's own scratch (a
	// keyTable's lookups of a byte-encoded key write into its buffer).
	view   keyTable
	direct *directIndex // tab.direct, for tests
	// noDirect keeps the hash table, gatherAll copies every probe column
	// (the benchmark's baseline).
	noDirect, gatherAll bool
	// noPacked keeps a tuple of integer keys byte-encoded (the benchmark's
	// baseline for packedkeys.go).
	noPacked bool
	// noBand builds no band index (the baseline of join_band.go's).
	noBand bool
	built  bool
	li, ri []int32 // probe index buffers, reused
	found  []int32
	hit    []bool
	// whole, when set, is what the whole build side was, of which this
	// join built a part (a spilled partition): whether it had rows, and a
	// NULL key (NOT IN's semantics depend on both).
	whole *buildSide
	// maxMatches caches MaxMatches (join_chunks.go).
	maxMatches int
	// bands are the comparisons of the two sides Build indexes the table
	// by when that pays (join_band.go); heads and bandRg are the band
	// probe's scratch.
	bands       []bandCmp
	fns         *functions.Registry
	probeSchema *arrow.Schema
	heads       []int32
	bandRg      []bandRange
	// pause is called between pieces of one probe (PauseWith).
	pause func() error
}

type buildSide struct{ empty, hasNull bool }

// joinTable is a built side: its rows, concatenated, one array per column,
// and their index by key. The build rows of key id g are first[g],
// next[first[g]], ... in build order (-1 ends); direct replaces table and
// first for one dense integer key (join_direct.go).
type joinTable struct {
	right    []arrow.Array
	table    *keyTable
	first    []int32
	next     []int32
	direct   *directIndex
	rows     int
	nullKeys bool // some build row has a NULL key
	// marks: build rows some probe row matched, one bit each (BuildSemi,
	// BuildAnti), set atomically by concurrent probes.
	marks []uint32
	// band indexes the rows by the join's comparisons (join_band.go);
	// nil when it has none or they would not pay.
	band *bandIndex
	refs atomic.Int32
}

func (t *joinTable) release() {
	if t.refs.Add(-1) > 0 {
		return
	}
	releaseArrays(t.right)
	t.right = nil
	if t.table != nil {
		t.table.release()
		t.table = nil
	}
	t.first, t.next, t.direct, t.marks, t.band = nil, nil, nil, nil, nil
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

// joinOutput is the schema a join of kind k outputs.
func joinOutput(spec JoinSpec, left, right *arrow.Schema) *arrow.Schema {
	switch spec.Kind {
	case SemiJoin, AntiJoin:
		return left
	case BuildSemi, BuildAnti:
		return right
	case MarkJoin:
		name := spec.Mark
		if name == "" {
			name = "mark"
		}
		return arrow.NewSchema(append(append([]arrow.Field{}, left.Fields()...), arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}), nil)
	}
	return JoinSchema(left, right)
}

// NewHashJoin compiles spec against the two input schemas.
func NewHashJoin(mem memory.Allocator, spec JoinSpec, left, right *arrow.Schema, fns *functions.Registry) (*HashJoin, error) {
	if len(spec.LeftKeys) == 0 || len(spec.LeftKeys) != len(spec.RightKeys) {
		return nil, fmt.Errorf("%w: a hash join needs equality conditions between the two sides", ErrPlan)
	}
	if spec.NullAware && (len(spec.LeftKeys) != 1 || spec.Residual != nil || (spec.Kind != AntiJoin && spec.Kind != MarkJoin)) {
		return nil, fmt.Errorf("%w: NOT IN and IN semantics (a null-aware %s join) over %d keys and %v other conditions: one key and none are supported", ErrPlan, spec.Kind, len(spec.LeftKeys), spec.Residual)
	}
	// Own copies: the casts below must not write into the caller's slices.
	spec.LeftKeys = append([]expr.Expr(nil), spec.LeftKeys...)
	spec.RightKeys = append([]expr.Expr(nil), spec.RightKeys...)
	if spec.Kind == InnerJoin && spec.Prune != nil {
		spec.Residual = andExpr(spec.Residual, spec.Prune)
	}
	j := &HashJoin{mem: mem, fctx: functions.NewCtx(mem), spec: spec, schema: joinOutput(spec, left, right), nLeft: left.NumFields(), fns: fns, probeSchema: left}
	j.bands = bandComparisons(spec.Residual, j.nLeft)
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
		// The residual reads left ++ right whatever the output is.
		pairs := JoinSchema(left, right)
		j.resCols = expr.Columns(spec.Residual)
		at := map[int]int{}
		fs := make([]arrow.Field, len(j.resCols))
		for i, c := range j.resCols {
			if c >= pairs.NumFields() {
				return nil, fmt.Errorf("%w: join condition %s reads column %d of %d", ErrPlan, spec.Residual, c, pairs.NumFields())
			}
			at[c], fs[i] = i, pairs.Field(c)
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
	types := make([]arrow.DataType, len(j.spec.RightKeys))
	for i, k := range j.spec.RightKeys {
		types[i] = k.Type()
	}
	tab := &joinTable{table: newKeyTable(j.mem, types)}
	tab.table.noValues = true
	tab.refs.Store(1)
	j.tab = tab
	var nonEmpty []arrow.Record
	for _, r := range recs {
		if r.NumRows() > 0 {
			nonEmpty = append(nonEmpty, r)
			tab.rows += int(r.NumRows())
		}
	}
	if j.spec.Kind.buildOutput() {
		tab.marks = make([]uint32, (tab.rows+31)/32)
	}
	for c := 0; c < rightSchema.NumFields(); c++ {
		var parts []arrow.Array
		for _, r := range nonEmpty {
			parts = append(parts, r.Column(c))
		}
		if len(parts) == 0 {
			tab.right = append(tab.right, array.MakeArrayOfNull(j.mem, rightSchema.Field(c).Type, 0))
			continue
		}
		a, err := concatColumn(j.mem, parts)
		if err != nil {
			return err
		}
		tab.right = append(tab.right, a)
	}
	defer j.setView()
	if !j.buildDirect(nonEmpty) {
		if err := j.buildTable(nonEmpty, types); err != nil {
			return err
		}
	}
	heads := tab.first
	if tab.direct != nil {
		heads = tab.direct.first
	}
	if !j.noBand {
		tab.band = j.buildBand(j.bands, rightSchema, heads, tab.next)
	}
	return nil
}

// buildTable indexes the build rows by key in a hash table.
func (j *HashJoin) buildTable(nonEmpty []arrow.Record, types []arrow.DataType) error {
	tab := j.tab
	keysOf, err := j.packKeys(nonEmpty, types)
	if err != nil {
		return err
	}
	var gids []uint32
	var last []int32
	for b, r := range nonEmpty {
		keys, err := keysOf(b, r)
		if err != nil {
			return err
		}
		n := int(r.NumRows())
		gids = slices.Grow(gids[:0], n)[:n]
		tab.table.lookupBatch(keys, 0, n, gids)
		for i, g := range gids {
			row := int32(len(tab.next))
			tab.next = append(tab.next, -1)
			if anyNullAt(keys, i) {
				tab.nullKeys = true
				continue // NULL never equals anything
			}
			for int(g) >= len(tab.first) {
				tab.first, last = append(tab.first, -1), append(last, -1)
			}
			if last[g] < 0 {
				tab.first[g] = row
			} else {
				tab.next[last[g]] = row
			}
			last[g] = row
		}
		releaseArrays(keys)
	}
	return nil
}

// packKeys indexes the build by packed integer tuples (packedkeys.go) when
// its keys allow, and returns how Build reads batch b's keys: evaluated
// here once for the ranges, or as they come. Either way the caller
// releases what it gets.
func (j *HashJoin) packKeys(recs []arrow.Record, types []arrow.DataType) (func(b int, r arrow.Record) ([]arrow.Array, error), error) {
	fresh := func(_ int, r arrow.Record) ([]arrow.Array, error) { return evalKeys(j.fctx, j.rightEv, r) }
	if j.noPacked || len(types) < 2 || len(recs) == 0 || !allIntLike(types) {
		return fresh, nil
	}
	all := make([][]arrow.Array, len(recs))
	for b, r := range recs {
		keys, err := evalKeys(j.fctx, j.rightEv, r)
		if err != nil {
			for _, k := range all[:b] {
				releaseArrays(k)
			}
			return nil, err
		}
		all[b] = keys
	}
	if p := newPackedKeys(types, all); p != nil {
		j.tab.table.enc, j.tab.table.packed = nil, p
	}
	return func(b int, _ arrow.Record) ([]arrow.Array, error) {
		keys := all[b]
		all[b] = nil
		return keys, nil
	}, nil
}

func allIntLike(types []arrow.DataType) bool {
	for _, t := range types {
		if !intLike(t) {
			return false
		}
	}
	return true
}

// setView points this HashJoin's key index at the table, with its own
// scratch.
func (j *HashJoin) setView() {
	j.view = *j.tab.table
	j.view.buf, j.view.pvals, j.view.pin = nil, nil, nil
	j.direct = j.tab.direct
}

// Share makes j probe the table other built (other and j compiled from the
// same spec and schemas). The table lives until every sharer is Released.
func (j *HashJoin) Share(other *HashJoin) {
	j.tab = other.tab
	j.tab.refs.Add(1)
	j.built = true
	j.setView()
}

// Rows is the number of build rows.
func (j *HashJoin) Rows() int {
	if j.tab == nil {
		return 0
	}
	return j.tab.rows
}

// buildDirect indexes the build rows by an array when the join has one
// integer key whose values are dense (join_direct.go); false, having
// changed nothing, otherwise.
func (j *HashJoin) buildDirect(recs []arrow.Record) bool {
	tab := j.tab
	if tab.table.ints == nil || j.noDirect || len(recs) == 0 {
		return false
	}
	var cols []arrow.Array
	defer func() { releaseArrays(cols) }()
	rows := 0
	nulls := false
	for _, r := range recs {
		keys, err := evalKeys(j.fctx, j.rightEv, r)
		if err != nil {
			releaseArrays(keys)
			return false // the hash path reports it
		}
		cols = append(cols, keys[0])
		nulls = nulls || keys[0].NullN() > 0
		rows += int(r.NumRows())
	}
	lo, hi, n := keyRange(cols)
	d := newDirectIndex(lo, hi, n)
	if d == nil {
		return false
	}
	tab.next = make([]int32, rows)
	for i := range tab.next {
		tab.next[i] = -1
	}
	d.build(cols, tab.next)
	tab.direct = d
	tab.nullKeys = nulls
	return true
}

// SetWholeBuild tells a null-aware join, which built only a part of its
// build side (a spilled partition), whether the whole side was empty and
// whether it had a NULL key.
func (j *HashJoin) SetWholeBuild(empty, hasNull bool) {
	j.whole = &buildSide{empty: empty, hasNull: hasNull}
}

func (j *HashJoin) buildEmpty() bool {
	if j.whole != nil {
		return j.whole.empty
	}
	return j.tab.rows == 0
}

func (j *HashJoin) buildHasNull() bool {
	if j.whole != nil {
		return j.whole.hasNull
	}
	return j.tab.nullKeys
}

// matches appends the (probe, build) row pairs of equal keys to li and ri,
// a left join's unmatched probe rows with build row -1; it says whether
// every probe row is in li exactly once, in order.
func (j *HashJoin) matches(keys []arrow.Array, n int, li, ri []int32) ([]int32, []int32, bool) {
	left := j.spec.Kind == LeftJoin
	if j.tab.direct != nil && arrow.TypeEqual(keys[0].DataType(), j.view.types[0]) {
		return j.tab.direct.probe(keys[0], j.tab.next, left, li, ri)
	}
	j.found = slices.Grow(j.found[:0], n)[:n]
	j.view.find(keys, 0, n, j.found)
	once := true
	first, next := j.tab.first, j.tab.next
	for i, g := range j.found {
		m := int32(-1)
		if g >= 0 && int(g) < len(first) {
			m = first[g]
		}
		if m < 0 {
			if left {
				li, ri = append(li, int32(i)), append(ri, -1)
			} else {
				once = false
			}
			continue
		}
		li, ri = append(li, int32(i)), append(ri, m)
		for m = next[m]; m >= 0; m = next[m] {
			once = false
			li, ri = append(li, int32(i)), append(ri, m)
		}
	}
	return li, ri, once
}

// Probe joins rec (left side) against the built table; nil when nothing
// matches (inner). rec is not released. A BuildSemi or BuildAnti join only
// marks the build rows rec matches, and outputs nothing (EmitBuild).
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

// probeEach joins one batch of the left side with the built table and hands
// the joined rows to emit (which takes them) in records of at most
// maxJoinOut rows. ProbeEach calls it on slices of the batch small enough
// that their match indexes stay bounded too (join_chunks.go).
func (j *HashJoin) probeEach(rec arrow.Record, emit func(arrow.Record) error) error {
	keys, err := evalKeys(j.fctx, j.leftEv, rec)
	if err != nil {
		return err
	}
	defer releaseArrays(keys)
	n := int(rec.NumRows())
	li, ri, once := j.matches(keys, n, j.li[:0], j.ri[:0])
	j.li, j.ri = li, ri
	return j.emitPairs(rec, keys, li, ri, once, emit)
}

// emitPairs hands emit what the pairs (li, ri) of rec's rows and build
// rows make: the joined rows that pass the residual, in records of at
// most maxJoinOut rows; a semi, anti or mark join's probe rows; a build
// join's marks. once: every probe row is in li exactly once, in order.
func (j *HashJoin) emitPairs(rec arrow.Record, keys []arrow.Array, li, ri []int32, once bool, emit func(arrow.Record) error) error {
	var err error
	switch {
	case j.spec.Kind.probeOnly():
		// At most one row out per probe row: the batch's size bounds it.
		out, err := j.probeOnly(rec, keys, li, ri)
		if err != nil || out == nil {
			return err
		}
		return emit(out)
	case j.spec.Kind.buildOutput():
		return j.markBuild(rec, li, ri)
	case j.spec.Kind == LeftJoin && j.residual != nil:
		return j.emitLeftResidual(rec, li, ri, emit)
	}
	once = once && !j.gatherAll
	for from := 0; from < len(li); from += maxJoinOut {
		if from > 0 {
			if err := j.pauseNow(); err != nil {
				return err
			}
		}
		to := min(from+maxJoinOut, len(li))
		// The probe side's columns go on as they are only when this
		// piece is the whole batch, row for row.
		whole := once && from == 0 && to == len(li)
		var out arrow.Record
		if j.residual != nil {
			out, err = j.probeResidual(rec, li[from:to], ri[from:to], whole)
		} else {
			out, err = gatherJoin(j.fctx, j.schema, rec.Columns(), j.tab.right, li[from:to], ri[from:to], whole)
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

// passing narrows the pairs (li, ri) to those that pass the residual; sel
// is nil when all of them do.
func (j *HashJoin) passing(rec arrow.Record, li, ri []int32) ([]int32, bool, error) {
	if j.residual == nil {
		return nil, true, nil
	}
	sub, err := j.residualInput(rec, li, ri, false)
	if err != nil {
		return nil, false, err
	}
	defer sub.Release()
	sel, all, err := j.residual.Select(j.fctx, sub)
	return sel, all, err
}

// probeOnly is a semi, anti or mark join's probe: which probe rows have a
// match (one passing the residual), and the rows or marks that follow.
func (j *HashJoin) probeOnly(rec arrow.Record, keys []arrow.Array, li, ri []int32) (arrow.Record, error) {
	n := int(rec.NumRows())
	hit := slices.Grow(j.hit[:0], n)[:n]
	clear(hit)
	j.hit = hit
	if len(li) > 0 {
		sel, all, err := j.passing(rec, li, ri)
		if err != nil {
			return nil, err
		}
		if all {
			for _, l := range li {
				hit[l] = true
			}
		} else {
			for _, s := range sel {
				hit[li[s]] = true
			}
		}
	}
	// unknown: NOT IN / IN of a row not found is NULL, not FALSE, when its
	// key is NULL or the set holds a NULL (and is not empty).
	unknown := func(i int) bool {
		if !j.spec.NullAware || j.buildEmpty() {
			return false
		}
		return keys[0].IsNull(i) || j.buildHasNull()
	}
	if j.spec.Kind == MarkJoin {
		b := array.NewBooleanBuilder(j.mem)
		defer b.Release()
		arrowx.Reserve(b, n)
		for i, h := range hit {
			switch {
			case h:
				b.UnsafeAppend(true)
			case unknown(i):
				b.UnsafeAppendBoolToBitmap(false)
			default:
				b.UnsafeAppend(false)
			}
		}
		mark := b.NewArray()
		defer mark.Release()
		cols := append(append([]arrow.Array{}, rec.Columns()...), mark)
		return array.NewRecord(columnTypes(j.schema, cols), cols, int64(n)), nil
	}
	keep := j.li[:0] // reuse: li is consumed
	want := j.spec.Kind == SemiJoin
	for i, h := range hit {
		if h == want && (want || !unknown(i)) {
			keep = append(keep, int32(i))
		}
	}
	j.li = keep
	switch len(keep) {
	case 0:
		return nil, nil
	case n:
		rec.Retain()
		return rec, nil
	}
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() { releaseArrays(cols) }()
	for _, a := range rec.Columns() {
		out, err := eval.Gather(j.fctx.Context(), j.mem, a, keep)
		if err != nil {
			return nil, err
		}
		cols = append(cols, out)
	}
	return array.NewRecord(columnTypes(j.schema, cols), cols, int64(len(keep))), nil
}

// markBuild sets the marks of the build rows that the probe rows of rec
// match (passing the residual).
func (j *HashJoin) markBuild(rec arrow.Record, li, ri []int32) error {
	if len(li) == 0 {
		return nil
	}
	sel, all, err := j.passing(rec, li, ri)
	if err != nil {
		return err
	}
	marks := j.tab.marks
	mark := func(r int32) {
		w, bit := r/32, uint32(1)<<(uint32(r)%32)
		if atomic.LoadUint32(&marks[w])&bit == 0 {
			atomic.OrUint32(&marks[w], bit)
		}
	}
	if all {
		for _, r := range ri {
			mark(r)
		}
		return nil
	}
	for _, s := range sel {
		mark(ri[s])
	}
	return nil
}

// EmitBuild is a BuildSemi or BuildAnti join's output once every probe row
// has been seen: the build rows marked (semi) or not (anti), in records of
// at most batch rows.
func (j *HashJoin) EmitBuild(batch int) ([]arrow.Record, error) {
	if !j.built || j.tab.rows == 0 {
		return nil, nil
	}
	want := j.spec.Kind == BuildSemi
	var out []arrow.Record
	var sel []int32
	flush := func() error {
		if len(sel) == 0 {
			return nil
		}
		cols := make([]arrow.Array, 0, len(j.tab.right))
		for _, a := range j.tab.right {
			g, err := eval.Gather(j.fctx.Context(), j.mem, a, sel)
			if err != nil {
				releaseArrays(cols)
				return err
			}
			cols = append(cols, g)
		}
		out = append(out, array.NewRecord(columnTypes(j.schema, cols), cols, int64(len(sel))))
		releaseArrays(cols)
		sel = sel[:0]
		return nil
	}
	for r := 0; r < j.tab.rows; r++ {
		marked := j.tab.marks[r/32]&(1<<(uint32(r)%32)) != 0
		if marked != want {
			continue
		}
		sel = append(sel, int32(r))
		if len(sel) >= batch {
			if err := flush(); err != nil {
				releaseAll(out)
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// residualInput is the columns the residual reads, for the pairs (li, ri):
// the left's as they are when once (every probe row once, in order).
func (j *HashJoin) residualInput(rec arrow.Record, li, ri []int32, once bool) (arrow.Record, error) {
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
			a, err = eval.Gather(j.fctx.Context(), j.mem, j.tab.right[c-nLeft], ri)
		}
		if err != nil {
			return nil, err
		}
		cols = append(cols, a)
		fs = append(fs, arrow.Field{Name: fmt.Sprint("c", c), Type: a.DataType(), Nullable: true})
	}
	return array.NewRecord(arrow.NewSchema(fs, nil), cols, int64(len(li))), nil
}

// probeResidual keeps the matches (li, ri) that pass the residual: it
// gathers the columns the residual reads, and the others only for the
// matches that pass.
func (j *HashJoin) probeResidual(rec arrow.Record, li, ri []int32, once bool) (arrow.Record, error) {
	sub, err := j.residualInput(rec, li, ri, once)
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	sel, all, err := j.residual.Select(j.fctx, sub)
	switch {
	case err != nil:
		return nil, err
	case all:
		return gatherJoin(j.fctx, j.schema, rec.Columns(), j.tab.right, li, ri, once)
	case len(sel) == 0:
		return nil, nil
	}
	kl, kr := make([]int32, len(sel)), make([]int32, len(sel))
	for k, s := range sel {
		kl[k], kr[k] = li[s], ri[s]
	}
	return gatherJoin(j.fctx, j.schema, rec.Columns(), j.tab.right, kl, kr, false)
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

// Release frees the build side (when no other HashJoin shares it).
func (j *HashJoin) Release() {
	if j.tab != nil {
		j.tab.release()
		j.tab = nil
	}
	j.view = keyTable{}
	j.direct = nil
}
