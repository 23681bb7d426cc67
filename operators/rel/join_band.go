package rel

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// A band join compares a probe row's value with a build row's: a.t
// BETWEEN b.t - 100 AND b.t + 100, a.x < b.y. Without an index each probe
// row meets every build row of its key (all of them when there is no key,
// a cross join under a WHERE) and the comparison drops nearly all of the
// pairs: 40,000 rows against 40,000 made 1.6 billion pairs for 32,000
// results. The band index sorts each key's build rows by the values a
// comparison reads on the build side, so that the rows a probe value can
// pass are one run of them, found by binary search: the pairs made are
// the run's, and the time is the output's plus a logarithm per probe row.
//
// The index only leaves out pairs: every comparison it reads is still a
// conjunct of the residual (or of the filter right above the join, for
// JoinSpec.Prune), which judges the pairs the index lets through. So it
// needs to be sound, not exact: a pair left out is one a conjunct makes
// not TRUE. A build row whose value is NULL passes no comparison and is
// left out; a probe value that is NULL matches nothing; a comparison whose
// values are not in order along the sort (a second column, a NaN, an
// expression that wrapped) narrows nothing.

// bandCmp is one comparison of a probe-side and a build-side expression:
// it holds for build values below the probe's (build <= probe, or <
// when strict) when below, else for those above it.
type bandCmp struct {
	probe, build  expr.Expr // over the probe's schema, the build's schema
	below, strict bool
}

// bandComparisons are the conjuncts of e (over the probe's nLeft columns
// then the build's) that compare an expression of one side with one of
// the other, of a type the index orders (integers, dates, times,
// floats), normalised to read build op probe.
func bandComparisons(e expr.Expr, nLeft int) []bandCmp {
	var out []bandCmp
	side := func(x expr.Expr) int { // 0 probe only, 1 build only, -1 otherwise
		cols := expr.Columns(x)
		switch {
		case len(cols) == 0 || volatile(x):
			return -1
		case cols[len(cols)-1] < nLeft:
			return 0
		case cols[0] >= nLeft:
			return 1
		}
		return -1
	}
	// add notes a op b, op one of <, <=, >, >=.
	add := func(a expr.Expr, op string, b expr.Expr) {
		if !arrow.TypeEqual(a.Type(), b.Type()) || !bandType(a.Type()) {
			return
		}
		sa, sb := side(a), side(b)
		switch {
		case sa == 1 && sb == 0:
		case sa == 0 && sb == 1:
			a, b, op = b, a, flipCmp[op]
		default:
			return
		}
		// a (build) op b (probe).
		out = append(out, bandCmp{probe: b, build: shift(a, -nLeft), below: op == "<" || op == "<=", strict: op == "<" || op == ">"})
	}
	for _, c := range andConjuncts(e) {
		switch x := c.(type) {
		case *expr.Call:
			if op, ok := cmpOps[x.Func]; ok && len(x.Args) == 2 {
				add(x.Args[0], op, x.Args[1])
			}
		case *expr.Between:
			if !x.Negated {
				add(x.Lo, "<=", x.Expr)
				add(x.Expr, "<=", x.Hi)
			}
		}
	}
	return out
}

var (
	cmpOps  = map[string]string{"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
	flipCmp = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<="}
)

func andConjuncts(e expr.Expr) []expr.Expr {
	if e == nil {
		return nil
	}
	if l, ok := e.(*expr.Logic); ok && l.Op == expr.OpAnd {
		var out []expr.Expr
		for _, a := range l.Args {
			out = append(out, andConjuncts(a)...)
		}
		return out
	}
	return []expr.Expr{e}
}

// volatile: e calls a function whose value depends on when it runs
// (now()): its build values, computed once, may not be the residual's.
func volatile(e expr.Expr) bool {
	found := false
	names := volatileFuncs()
	expr.Walk(e, func(x expr.Expr) bool {
		if c, ok := x.(*expr.Call); ok && names[c.Func] {
			found = true
		}
		return !found
	})
	return found
}

var volatileFuncs = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	for _, f := range expr.Builtins().Functions() {
		if f.Volatile {
			out[f.Name] = true
		}
	}
	return out
})

// bandType: the index orders values of t as int64 or float64 without
// loss (UINT64 past int64 would wrap; decimals and strings are left to
// the residual).
func bandType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT32, arrow.FLOAT64:
		return true
	case arrow.UINT64:
		return false
	}
	return intLike(t)
}

func shift(e expr.Expr, by int) expr.Expr {
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok {
			return &expr.Column{Index: c.Index + by, Name: c.Name, DataType: c.DataType}
		}
		return x
	})
}

// bandValues are one expression's values, by row: ints or floats, with
// the rows where it is NULL.
type bandValues struct {
	ints   []int64
	floats []float64
	null   []bool // nil when none is
}

func (v *bandValues) float() bool { return v.ints == nil && v.floats != nil }

// readBand reads a bandType array's values.
func readBand(a arrow.Array) bandValues {
	n := a.Len()
	var v bandValues
	if a.NullN() > 0 {
		v.null = make([]bool, n)
		for i := range n {
			v.null[i] = a.IsNull(i)
		}
	}
	switch x := a.(type) {
	case *array.Float64:
		v.floats = slices.Clone(x.Float64Values())
		return v
	case *array.Float32:
		v.floats = make([]float64, n)
		for i, f := range x.Float32Values() {
			v.floats[i] = float64(f)
		}
		return v
	}
	v.ints = make([]int64, n)
	i8, i16, i32, i64, u8, u16, u32, _ := intValues(a)
	switch {
	case i64 != nil:
		copy(v.ints, i64)
	case i32 != nil:
		widen(v.ints, i32)
	case i16 != nil:
		widen(v.ints, i16)
	case i8 != nil:
		widen(v.ints, i8)
	case u32 != nil:
		widen(v.ints, u32)
	case u16 != nil:
		widen(v.ints, u16)
	case u8 != nil:
		widen(v.ints, u8)
	}
	return v
}

func widen[T fixedInts](dst []int64, src []T) {
	for i, x := range src[:len(dst)] {
		dst[i] = int64(x)
	}
}

// bandBound is a comparison the index narrows by: its build values along
// the index's order (ascending within each key's run).
type bandBound struct {
	cmp    bandCmp
	probe  *eval.Evaluator
	ints   []int64
	floats []float64
}

// bandIndex is a built side's rows in band order: perm lists the rows
// that can match, each key's rows one run (runs[head] is the run of the
// key whose chain starts at build row head, -1 for rows that start none),
// each run ascending in the sort expression's values.
type bandIndex struct {
	bounds []*bandBound
	perm   []int32
	start  []int32 // run k is perm[start[k]:start[k+1]]
	runs   []int32
}

// bytes is what the index holds in Go memory.
func (x *bandIndex) bytes() int64 {
	n := 4 * int64(len(x.perm)+len(x.start)+len(x.runs))
	for _, b := range x.bounds {
		n += 8 * int64(len(b.ints)+len(b.floats))
	}
	return n
}

// buildBand indexes the built table by cmps when that pays: when a
// probe row's longest run of candidates is longer than the binary
// searches that replace walking it. nil when no comparison orders.
func (j *HashJoin) buildBand(cmps []bandCmp, rightSchema *arrow.Schema, heads []int32, next []int32) *bandIndex {
	tab := j.tab
	if len(cmps) == 0 || tab.rows == 0 {
		return nil
	}
	if m := j.MaxMatches(); m <= 2*len(cmps)*bitsLen(tab.rows) {
		return nil
	}
	whole := array.NewRecord(rightSchema, tab.right, int64(tab.rows))
	defer whole.Release()
	vals := make([]bandValues, len(cmps))
	var exclude []bool // rows no comparison can pass: a NULL value
	for k, c := range cmps {
		ev, err := eval.Compile(c.build, rightSchema, j.fns)
		if err != nil {
			return nil
		}
		a, err := ev.Eval(j.fctx, whole)
		if err != nil {
			return nil // the residual will say what is wrong, pair by pair
		}
		vals[k] = readBand(a)
		a.Release()
		if vals[k].null != nil {
			if exclude == nil {
				exclude = make([]bool, tab.rows)
			}
			for r, isNull := range vals[k].null {
				exclude[r] = exclude[r] || isNull
			}
		}
	}
	// The runs: each key's chain, less the rows excluded.
	x := &bandIndex{runs: make([]int32, tab.rows)}
	for r := range x.runs {
		x.runs[r] = -1
	}
	for _, h := range heads {
		if h < 0 {
			continue
		}
		x.runs[h] = int32(len(x.start))
		x.start = append(x.start, int32(len(x.perm)))
		for r := h; r >= 0; r = next[r] {
			if exclude == nil || !exclude[r] {
				x.perm = append(x.perm, r)
			}
		}
	}
	x.start = append(x.start, int32(len(x.perm)))
	// Sort by the comparison under whose order the most comparisons are
	// in order (b.t - 100 and b.t + 100 order together): first that
	// orders all of them.
	var best []int
	var bestPerm []int32
	for k := range cmps {
		if hasNaN(vals[k]) {
			continue
		}
		perm := slices.Clone(x.perm)
		for run := 0; run+1 < len(x.start); run++ {
			sortRun(perm[x.start[run]:x.start[run+1]], vals[k])
		}
		var ordered []int
		for m := range cmps {
			if !hasNaN(vals[m]) && inOrder(perm, x.start, vals[m]) {
				ordered = append(ordered, m)
			}
		}
		if len(ordered) > len(best) {
			best, bestPerm = ordered, perm
		}
		if len(best) == len(cmps) {
			break
		}
	}
	if len(best) == 0 {
		return nil
	}
	x.perm = bestPerm
	for _, m := range best {
		ev, err := eval.Compile(cmps[m].probe, j.probeSchema, j.fns)
		if err != nil {
			return nil
		}
		b := &bandBound{cmp: cmps[m], probe: ev}
		if vals[m].float() {
			b.floats = make([]float64, len(x.perm))
			for i, r := range x.perm {
				b.floats[i] = vals[m].floats[r]
			}
		} else {
			b.ints = make([]int64, len(x.perm))
			for i, r := range x.perm {
				b.ints[i] = vals[m].ints[r]
			}
		}
		x.bounds = append(x.bounds, b)
	}
	return x
}

func bitsLen(n int) int {
	b := 1
	for n > 1 {
		n >>= 1
		b++
	}
	return b
}

func hasNaN(v bandValues) bool {
	for i, f := range v.floats {
		if math.IsNaN(f) && (v.null == nil || !v.null[i]) {
			return true
		}
	}
	return false
}

// sortRun sorts rows by their values (then by row: the order is the
// data's alone).
func sortRun(rows []int32, v bandValues) {
	if v.float() {
		slices.SortFunc(rows, func(a, b int32) int { return cmp.Or(cmp.Compare(v.floats[a], v.floats[b]), cmp.Compare(a, b)) })
		return
	}
	slices.SortFunc(rows, func(a, b int32) int { return cmp.Or(cmp.Compare(v.ints[a], v.ints[b]), cmp.Compare(a, b)) })
}

// inOrder: v ascends along each run of perm.
func inOrder(perm, start []int32, v bandValues) bool {
	for run := 0; run+1 < len(start); run++ {
		rows := perm[start[run]:start[run+1]]
		for i := 1; i < len(rows); i++ {
			if v.float() && v.floats[rows[i]] < v.floats[rows[i-1]] || !v.float() && v.ints[rows[i]] < v.ints[rows[i-1]] {
				return false
			}
		}
	}
	return true
}

// searchAbove is the index of the first of the ascending vals above p
// (strictly) or at least p.
func searchAbove[T int64 | float64](vals []T, p T, strictly bool) int32 {
	return int32(sort.Search(len(vals), func(k int) bool { return vals[k] > p || !strictly && vals[k] == p }))
}

// bandRange is one probe row's candidates: perm[lo:hi].
type bandRange struct{ lo, hi int32 }

// ranges narrows each probe row's run (heads: the build row its key's
// chain starts at, -1 for none) to the rows every bound lets through.
func (x *bandIndex) ranges(c *functions.Ctx, rec arrow.Record, heads []int32, out []bandRange) ([]bandRange, error) {
	n := len(heads)
	out = slices.Grow(out[:0], n)[:n]
	for i, h := range heads {
		out[i] = bandRange{}
		if h >= 0 {
			if k := x.runs[h]; k >= 0 {
				out[i] = bandRange{x.start[k], x.start[k+1]}
			}
		}
	}
	for _, b := range x.bounds {
		a, err := b.probe.Eval(c, rec)
		if err != nil {
			return nil, err
		}
		p := readBand(a)
		a.Release()
		for i := range out {
			r := &out[i]
			if r.lo >= r.hi {
				continue
			}
			if p.null != nil && p.null[i] {
				*r = bandRange{}
				continue
			}
			if p.float() && math.IsNaN(p.floats[i]) {
				continue // how NaN compares is the residual's to say
			}
			// The run's first row above p (build <= p ends before it,
			// build > p starts at it), or at least p (build < p, build >= p).
			strictly := b.cmp.below != b.cmp.strict
			var at int32
			if p.float() {
				at = r.lo + searchAbove(b.floats[r.lo:r.hi], p.floats[i], strictly)
			} else {
				at = r.lo + searchAbove(b.ints[r.lo:r.hi], p.ints[i], strictly)
			}
			if b.cmp.below {
				r.hi = at
			} else {
				r.lo = at
			}
		}
	}
	return out, nil
}

// probeBand joins rec through the band index: each row meets the build
// rows its range holds, in slices of rows whose candidates are at most
// probePairs together (one row at a time when a row's alone are more),
// as ProbeEach bounds a chain's.
func (j *HashJoin) probeBand(rec arrow.Record, emit func(arrow.Record) error) error {
	keys, err := evalKeys(j.fctx, j.leftEv, rec)
	if err != nil {
		return err
	}
	defer releaseArrays(keys)
	n := int(rec.NumRows())
	j.heads = j.headsOf(keys, n, j.heads)
	rg, err := j.tab.band.ranges(j.fctx, rec, j.heads, j.bandRg)
	if err != nil {
		return err
	}
	j.bandRg = rg
	flush := func(from, to int) error {
		li, ri, once := j.li[:0], j.ri[:0], true
		for i := from; i < to; i++ {
			r := rg[i]
			once = once && r.hi-r.lo == 1
			for _, b := range j.tab.band.perm[r.lo:r.hi] {
				li, ri = append(li, int32(i-from)), append(ri, b)
			}
		}
		j.li, j.ri = li, ri
		if len(li) == 0 && j.spec.Kind != AntiJoin && j.spec.Kind != MarkJoin && j.spec.Kind != LeftJoin {
			return nil // no pair, and no kind that outputs an unmatched probe row
		}
		if from == 0 && to == n {
			return j.emitPairs(rec, keys, li, ri, once, emit)
		}
		sub := rec.NewSlice(int64(from), int64(to))
		defer sub.Release()
		subKeys := make([]arrow.Array, len(keys))
		for k, a := range keys {
			subKeys[k] = array.NewSlice(a, int64(from), int64(to))
		}
		defer releaseArrays(subKeys)
		return j.emitPairs(sub, subKeys, li, ri, once, emit)
	}
	from, pairs := 0, 0
	for i, r := range rg {
		c := int(r.hi - r.lo)
		if pairs+c > probePairs && i > from {
			if err := flush(from, i); err != nil {
				return err
			}
			if err := j.pauseNow(); err != nil {
				return err
			}
			from, pairs = i, 0
		}
		pairs += c
	}
	if from < n {
		return flush(from, n)
	}
	return nil
}

// headsOf sets out[i] to the build row that probe row i's key chain
// starts at, -1 when no build row has its key.
func (j *HashJoin) headsOf(keys []arrow.Array, n int, out []int32) []int32 {
	out = slices.Grow(out[:0], n)[:n]
	if d := j.tab.direct; d != nil {
		if !arrow.TypeEqual(keys[0].DataType(), j.view.types[0]) {
			for i := range out {
				out[i] = -1
			}
			return out
		}
		d.heads(keys[0], out)
		return out
	}
	j.view.find(keys, 0, n, out)
	first := j.tab.first
	for i, g := range out {
		h := int32(-1)
		if g >= 0 && int(g) < len(first) {
			h = first[g]
		}
		out[i] = h
	}
	return out
}

// andExpr is a AND b, either of which may be nil.
func andExpr(a, b expr.Expr) expr.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &expr.Logic{Op: expr.OpAnd, Args: append(andConjuncts(a), andConjuncts(b)...)}
}
