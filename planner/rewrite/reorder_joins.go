package rewrite

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/cardinality"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/joinorder"
	"github.com/tierflow/tierflow/planner/logical"
)

// ReorderJoinsID orders a query's inner joins by cost.
const ReorderJoinsID RuleID = "reorder_joins"

// ReorderJoins rewrites every region of inner and cross joins (and the
// filters over and between them) into the join order of least estimated
// cost:
//
//   - the region's relations (its leaves: scans, derived tables, outer
//     joins, anything that is not an inner join) and every conjunct of its
//     ON and WHERE conditions are collected; an OR whose branches share
//     conjuncts has them factored out (TPC-H q19 repeats its join condition
//     in every branch), and an OR whose every branch restricts one relation
//     also filters that relation by the OR of those restrictions;
//   - a conjunct of one relation filters it below every join; an equality
//     of two relations is a join edge, and equalities that chain (a.x = b.y
//     AND b.y = c.z) put their columns in one equivalence class, so that a
//     and c can join directly on a.x = c.z; other conjuncts run at the
//     lowest join that has all their relations;
//   - joinorder.Solve picks the tree (DPccp, GOO past its budget), never a
//     cross product between relations a predicate connects, the smaller
//     input of each join as its build side;
//   - a projection on top restores the region's columns in their order.
//
// Rows come from est (table statistics, or the defaults). A region with a
// stream keeps the stream as the probe side of every join (a stream never
// ends, so it cannot be built into a hash table); a region with two streams
// (a windowed join) is left as it is.
func ReorderJoins(est *cardinality.Estimator) func(logical.Node) logical.Node {
	r := &reorderer{est: est}
	return r.rewrite
}

type reorderer struct {
	est *cardinality.Estimator
}

// inRegion: an inner or cross join without a window.
func inRegion(n logical.Node) bool {
	j, ok := n.(*logical.Join)
	return ok && j.Window == nil && (j.Kind == logical.InnerJoin || j.Kind == logical.CrossJoin)
}

// regionRoot: n is a join of a region, or filters over one.
func regionRoot(n logical.Node) bool {
	for {
		if f, ok := n.(*logical.Filter); ok {
			n = f.Input
			continue
		}
		return inRegion(n)
	}
}

func (r *reorderer) rewrite(n logical.Node) logical.Node {
	if regionRoot(n) {
		if out, ok := r.region(n); ok {
			return out
		}
	}
	return logical.MapChildren(n, r.rewrite)
}

// leaf is one relation of a region: the columns [off, off+width) of the
// region's row.
type leaf struct {
	node   logical.Node
	off    int
	width  int
	stream bool
}

// region is a join region being reordered; predicates read the region's
// row: every leaf's columns, in the order the original joins had them.
type region struct {
	leaves []*leaf
	conj   []expr.Expr
	pos    logical.Pos
	schema []string
}

func (r *reorderer) collect(g *region, n logical.Node, off int) {
	switch x := n.(type) {
	case *logical.Filter:
		if regionRoot(x) {
			for _, c := range cardinality.Conjuncts(x.Pred) {
				g.conj = append(g.conj, shift(c, off))
			}
			r.collect(g, x.Input, off)
			return
		}
	case *logical.Join:
		if inRegion(x) {
			r.collect(g, x.Left, off)
			r.collect(g, x.Right, off+x.Left.Schema().NumFields())
			for _, c := range cardinality.Conjuncts(x.On) {
				g.conj = append(g.conj, shift(c, off))
			}
			return
		}
	}
	g.leaves = append(g.leaves, &leaf{node: r.rewrite(n), off: off, width: n.Schema().NumFields(), stream: !boundedNode(n)})
}

func boundedNode(n logical.Node) bool {
	ok := true
	logical.Walk(n, func(x logical.Node) bool {
		if s, isScan := x.(*logical.Scan); isScan && s.Stream != nil {
			ok = false
		}
		return ok
	})
	return ok
}

// shift moves the columns e reads by off.
func shift(e expr.Expr, off int) expr.Expr {
	if off == 0 {
		return e
	}
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok {
			return &expr.Column{Index: c.Index + off, Name: c.Name, DataType: c.DataType}
		}
		return x
	})
}

// remapCols renumbers the columns e reads by m (old index -> new).
func remapCols(e expr.Expr, m map[int]int) expr.Expr {
	return expr.Transform(e, func(x expr.Expr) expr.Expr {
		if c, ok := x.(*expr.Column); ok {
			return &expr.Column{Index: m[c.Index], Name: c.Name, DataType: c.DataType}
		}
		return x
	})
}

// leafOf is the leaf holding region column c.
func (g *region) leafOf(c int) int {
	for i, l := range g.leaves {
		if c >= l.off && c < l.off+l.width {
			return i
		}
	}
	return -1
}

// relations is the set of leaves e reads.
func (g *region) relations(e expr.Expr) joinorder.Set {
	var s joinorder.Set
	for _, c := range expr.Columns(e) {
		if l := g.leafOf(c); l >= 0 {
			s |= joinorder.Of(l)
		}
	}
	return s
}

// pred is a conjunct placed in the region.
type pred struct {
	e    expr.Expr
	rels joinorder.Set
	// edge: an equality of an expression of one relation with one of
	// another (a hash join key); a, b are its sides.
	edge bool
	a, b expr.Expr
	// implied divides the selectivity of the filters an OR implied
	// (they were applied below): they are counted once.
	implied float64
}

func (r *reorderer) region(root logical.Node) (logical.Node, bool) {
	g := &region{pos: root.Position()}
	for _, f := range root.Schema().Fields() {
		g.schema = append(g.schema, f.Name)
	}
	r.collect(g, root, 0)
	if len(g.leaves) < 2 || len(g.leaves) > joinorder.MaxRelations {
		return nil, false
	}
	probe := -1
	for i, l := range g.leaves {
		if l.stream {
			if probe >= 0 {
				return nil, false // two streams: a windowed join's business
			}
			probe = i
		}
	}

	// Place the conjuncts: filters of one leaf, join edges, and the rest.
	local := make([][]expr.Expr, len(g.leaves))
	var top []expr.Expr // no relation: constants
	var preds []*pred
	var ors []*pred
	for _, c := range factorAll(g.conj) {
		rels := g.relations(c)
		switch rels.Len() {
		case 0:
			top = append(top, c)
			continue
		case 1:
			l := rels.Min()
			local[l] = append(local[l], c)
			continue
		}
		p := &pred{e: c, rels: rels, implied: 1}
		if a, b, ok := equiSides(c); ok {
			ra, rb := g.relations(a), g.relations(b)
			if ra.Len() == 1 && rb.Len() == 1 && ra != rb {
				p.edge, p.a, p.b = true, a, b
			}
		}
		if lo, ok := c.(*expr.Logic); ok && lo.Op == expr.OpOr {
			ors = append(ors, p)
		}
		preds = append(preds, p)
	}
	// An OR over several relations whose every branch restricts relation
	// l implies the OR of those restrictions on l alone.
	impliedOf := map[*pred][]struct {
		leaf int
		e    expr.Expr
	}{}
	for _, p := range ors {
		for _, l := range members(p.rels) {
			if e, ok := impliedFilter(g, p.e.(*expr.Logic), l); ok {
				local[l] = append(local[l], e)
				impliedOf[p] = append(impliedOf[p], struct {
					leaf int
					e    expr.Expr
				}{l, e})
			}
		}
	}

	// Equivalence classes of the columns equi-join edges equate.
	uf := newUnionFind()
	for _, p := range preds {
		if !p.edge {
			continue
		}
		ca, okA := plainColumn(p.a)
		cb, okB := plainColumn(p.b)
		if okA && okB && compatible(p.a, p.b) {
			uf.union(ca, cb)
		}
	}
	classes := uf.classes()
	inClass := map[int]int{} // region column -> class
	for k, cl := range classes {
		for _, c := range cl {
			inClass[c] = k
		}
	}
	// Two columns of one leaf in a class must be equal within the leaf.
	colType := map[int]*expr.Column{}
	for _, p := range preds {
		for _, side := range []expr.Expr{p.a, p.b} {
			if c, ok := plainColumnExpr(side); ok {
				colType[c.Index] = c
			}
		}
	}
	for _, cl := range classes {
		byLeaf := map[int][]int{}
		for _, c := range cl {
			byLeaf[g.leafOf(c)] = append(byLeaf[g.leafOf(c)], c)
		}
		for l, cs := range byLeaf {
			for _, c := range cs[1:] {
				if eq, ok := equality(colType[cs[0]], colType[c]); ok {
					local[l] = append(local[l], eq)
				}
			}
		}
	}

	// A filter of a column by constants holds for every column its class
	// equates it with: o_orderkey IN (...) with o_orderkey = l_orderkey
	// filters lineitem too, before the join.
	// (From the filters as written only: a copy is never copied back.)
	written := make([][]expr.Expr, len(local))
	for l := range local {
		written[l] = append([]expr.Expr(nil), local[l]...)
	}
	for l := range written {
		for _, c := range written[l] {
			col, ok := constantFilterColumn(c)
			if !ok {
				continue
			}
			k, inCl := inClass[col]
			if !inCl || colType[col] == nil {
				continue
			}
			for _, m := range classes[k] {
				ml := g.leafOf(m)
				if ml == l || colType[m] == nil || !arrow.TypeEqual(colType[m].DataType, colType[col].DataType) {
					continue
				}
				copied := expr.Transform(c, func(x expr.Expr) expr.Expr {
					if cx, ok := x.(*expr.Column); ok && cx.Index == col {
						return &expr.Column{Index: m, Name: colType[m].Name, DataType: cx.DataType}
					}
					return x
				})
				if !hasExpr(local[ml], copied) {
					local[ml] = append(local[ml], copied)
				}
			}
		}
	}

	// The distinct counts that matter: of the columns that filters and
	// joins compare.
	for i, l := range g.leaves {
		var cols []int
		for _, e := range local[i] {
			cols = append(cols, expr.Columns(e)...)
		}
		for _, p := range preds {
			for _, c := range expr.Columns(p.e) {
				if g.leafOf(c) == i {
					cols = append(cols, c)
				}
			}
		}
		wantDistinct(r.est, l.node, cols, l.off)
	}

	// The leaves with their filters, and their estimates.
	nodes := make([]logical.Node, len(g.leaves))
	ests := make([]*cardinality.Estimate, len(g.leaves))
	whole := &cardinality.Estimate{Cols: make([]cardinality.Col, len(g.schema))}
	for i, l := range g.leaves {
		nodes[i] = l.node
		if len(local[i]) > 0 {
			nodes[i] = filterLeaf(l.node, shiftAll(local[i], -l.off), g.pos)
		}
		ests[i] = r.est.Estimate(nodes[i])
	}
	r.reduceGroupedLeaves(g, nodes, ests, classes)
	for i, l := range g.leaves {
		copy(whole.Cols[l.off:], ests[i].Cols)
	}
	// Residual predicates' selectivities: an OR's, less what the filters
	// it implied already took.
	for _, p := range preds {
		if p.edge {
			continue
		}
		s := cardinality.Selectivity(p.e, whole)
		for _, im := range impliedOf[p] {
			s /= max(cardinality.Selectivity(im.e, whole), 1e-12)
		}
		p.implied = min(s, 1)
	}

	rows := func(s joinorder.Set) float64 {
		out := 1.0
		for _, l := range members(s) {
			out *= max(ests[l].Rows, 1)
		}
		// Each class divides by the distinct counts of all its relations
		// in s but the one with the fewest (the containment assumption).
		for _, cl := range classes {
			var ds []float64
			seen := map[int]bool{}
			for _, c := range cl {
				l := g.leafOf(c)
				if !s.Has(l) || seen[l] {
					continue
				}
				seen[l] = true
				ds = append(ds, g.distinct(c, ests[l], cl))
			}
			sort.Float64s(ds)
			for _, d := range ds[min(1, len(ds)):] {
				out /= d
			}
		}
		out *= compositeKeys(g, classes, ests, s)
		for _, p := range preds {
			if p.rels&s != p.rels {
				continue
			}
			if p.edge {
				if _, ok := inClass[colIndex(p.a)]; ok && classEdge(p, inClass) {
					continue // counted with its class
				}
				out *= cardinality.Selectivity(p.e, whole)
				continue
			}
			out *= p.implied
		}
		return out
	}
	var edges []joinorder.Edge
	for _, p := range preds {
		if p.edge {
			edges = append(edges, joinorder.Edge{A: g.relations(p.a).Min(), B: g.relations(p.b).Min()})
		}
	}
	for _, cl := range classes {
		ls := map[int]bool{}
		var lv []int
		for _, c := range cl {
			if l := g.leafOf(c); !ls[l] {
				ls[l] = true
				lv = append(lv, l)
			}
		}
		for i := range lv {
			for j := i + 1; j < len(lv); j++ {
				edges = append(edges, joinorder.Edge{A: lv[i], B: lv[j]})
			}
		}
	}
	plan, _, err := joinorder.Solve(joinorder.Problem{N: len(g.leaves), Edges: edges, Rows: rows, Probe: probe})
	if err != nil {
		return nil, false
	}
	b := &treeBuilder{g: g, nodes: nodes, preds: preds, classes: classes, colType: colType, used: map[*pred]bool{}}
	out, cols := b.build(plan)
	// Whatever no join took (not reached: every predicate's relations meet
	// at some join) and the constants filter the top.
	var rest []expr.Expr
	for _, p := range preds {
		if !b.used[p] {
			rest = append(rest, p.e)
		}
	}
	rest = append(rest, top...)
	at := map[int]int{}
	for i, c := range cols {
		at[c] = i
	}
	if len(rest) > 0 {
		out = &logical.Filter{Input: out, Pred: and(shiftMap(rest, at)), Pos: g.pos}
	}
	exprs := make([]expr.Expr, len(g.schema))
	schema := root.Schema()
	for i := range g.schema {
		f := schema.Field(i)
		exprs[i] = &expr.Column{Index: at[i], Name: f.Name, DataType: out.Schema().Field(at[i]).Type}
	}
	return logical.NewProject(out, exprs, g.schema, g.pos), true
}

// wantDistinct asks est for the distinct counts of region columns cols
// (leaf columns from off) of the scan under n's filters, if n is one.
func wantDistinct(est *cardinality.Estimator, n logical.Node, cols []int, off int) {
	for {
		f, ok := n.(*logical.Filter)
		if !ok {
			break
		}
		for _, c := range expr.Columns(f.Pred) {
			cols = append(cols, c+off)
		}
		n = f.Input
	}
	s, ok := n.(*logical.Scan)
	if !ok {
		return
	}
	local := make([]int, 0, len(cols))
	for _, c := range cols {
		local = append(local, c-off)
	}
	est.Want(s, local...)
}

// compositeKeys corrects the classes' product for two relations of s that
// share several classes (TPC-H q9's partsupp and lineitem on both part and
// supplier keys): independent keys would divide by the product of their
// distinct counts, but a row's key combination is one of at most as many
// as a side has rows (of partsupp's, each is one of 800,000 rows, not one of
// 200,000 x 10,000). The pair's factor becomes 1/max over the sides of
// min(product of its distinct counts, its rows).
func compositeKeys(g *region, classes [][]int, ests []*cardinality.Estimate, s joinorder.Set) float64 {
	ls := members(s)
	corr := 1.0
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			shared := 0
			pa, pb, pmax := 1.0, 1.0, 1.0
			for _, cl := range classes {
				var ca, cb = -1, -1
				for _, c := range cl {
					switch g.leafOf(c) {
					case a:
						ca = c
					case b:
						cb = c
					}
				}
				if ca < 0 || cb < 0 {
					continue
				}
				shared++
				da, db := g.distinct(ca, ests[a], cl), g.distinct(cb, ests[b], cl)
				pa, pb, pmax = pa*da, pb*db, pmax*max(da, db)
			}
			if shared < 2 {
				continue
			}
			da, db := min(pa, max(ests[a].Rows, 1)), min(pb, max(ests[b].Rows, 1))
			if c := pmax / max(da, db); c > 1 {
				corr *= c
			}
		}
	}
	return corr
}

// constantFilterColumn is the column c filters when c compares one column
// (possibly under casts) with constants only: col op k, col BETWEEN k1 AND
// k2, col [NOT] IN (k, ...), col [NOT] IN (an uncorrelated subquery).
func constantFilterColumn(c expr.Expr) (int, bool) {
	cols := expr.Columns(c)
	if len(cols) != 1 {
		return 0, false
	}
	col := cols[0]
	isCol := func(e expr.Expr) bool {
		x, ok := plainColumnExpr(e)
		return ok && x.Index == col
	}
	isConst := func(e expr.Expr) bool {
		_, ok := cardinality.Const(e)
		return ok
	}
	switch x := c.(type) {
	case *expr.Call:
		switch x.Func {
		case "equal", "not_equal", "less", "less_equal", "greater", "greater_equal":
		default:
			return 0, false
		}
		if len(x.Args) == 2 && ((isCol(x.Args[0]) && isConst(x.Args[1])) || (isCol(x.Args[1]) && isConst(x.Args[0]))) {
			return col, true
		}
	case *expr.Between:
		if isCol(x.Expr) && isConst(x.Lo) && isConst(x.Hi) {
			return col, true
		}
	case *expr.In:
		if !isCol(x.Expr) {
			return 0, false
		}
		for _, e := range x.List {
			if !isConst(e) {
				return 0, false
			}
		}
		return col, true
	case *expr.Subquery:
		if x.Kind == expr.InSubquery && x.Expr != nil && isCol(x.Expr) {
			return col, true
		}
	}
	return 0, false
}

func hasExpr(es []expr.Expr, e expr.Expr) bool {
	k := exprKey(e)
	for _, x := range es {
		if exprKey(x) == k {
			return true
		}
	}
	return false
}

// distinct is a class's distinct values in one leaf: the fewest of its
// columns there (they are equal within the leaf), at most the leaf's rows;
// unknown counts the leaf's rows (a key).
func (g *region) distinct(c int, est *cardinality.Estimate, cl []int) float64 {
	l := g.leafOf(c)
	d := math.Inf(1)
	for _, m := range cl {
		if g.leafOf(m) != l {
			continue
		}
		k := m - g.leaves[l].off
		if k < len(est.Cols) && est.Cols[k].Distinct > 0 {
			d = min(d, est.Cols[k].Distinct)
		}
	}
	if math.IsInf(d, 1) {
		d = est.Rows
	}
	return max(min(d, est.Rows), 1)
}

// classEdge: both sides of an edge are columns of one class.
func classEdge(p *pred, inClass map[int]int) bool {
	ka, okA := inClass[colIndex(p.a)]
	kb, okB := inClass[colIndex(p.b)]
	_, plainA := plainColumn(p.a)
	_, plainB := plainColumn(p.b)
	return okA && okB && ka == kb && plainA && plainB
}

func colIndex(e expr.Expr) int {
	if c, ok := plainColumn(e); ok {
		return c
	}
	return -1
}

// treeBuilder turns a joinorder plan into logical joins.
type treeBuilder struct {
	g       *region
	nodes   []logical.Node
	preds   []*pred
	classes [][]int
	colType map[int]*expr.Column
	used    map[*pred]bool
}

// build returns the plan's node and, per output column, its region column.
func (b *treeBuilder) build(p *joinorder.Plan) (logical.Node, []int) {
	if p.Leaf() {
		l := b.g.leaves[p.Rel]
		cols := make([]int, l.width)
		for i := range cols {
			cols[i] = l.off + i
		}
		return b.nodes[p.Rel], cols
	}
	ln, lc := b.build(p.Left)
	rn, rc := b.build(p.Right)
	cols := append(append([]int(nil), lc...), rc...)
	at := map[int]int{}
	for i, c := range cols {
		at[c] = i
	}
	var keys, residual []expr.Expr
	ls, rs := p.Left.Set, p.Right.Set
	// One equality per class with columns on both sides.
	for _, cl := range b.classes {
		l, r := -1, -1
		for _, c := range cl {
			k := b.g.leafOf(c)
			switch {
			case ls.Has(k) && l < 0:
				l = c
			case rs.Has(k) && r < 0:
				r = c
			}
		}
		if l >= 0 && r >= 0 {
			if eq, ok := equality(b.colType[l], b.colType[r]); ok {
				keys = append(keys, eq)
			}
		}
	}
	for _, pr := range b.preds {
		if b.used[pr] || pr.rels&(ls|rs) != pr.rels || pr.rels&ls == pr.rels || pr.rels&rs == pr.rels {
			continue
		}
		b.used[pr] = true
		if pr.edge && classEdgeOf(pr, b.classes) {
			continue // its class gave the key
		}
		if pr.edge {
			keys = append(keys, pr.e)
		} else {
			residual = append(residual, pr.e)
		}
	}
	// Class edges whose two relations are both below this join were
	// applied at a lower join; mark them so the top does not repeat them.
	for _, pr := range b.preds {
		if pr.edge && pr.rels&(ls|rs) == pr.rels {
			b.used[pr] = true
		}
	}
	if len(keys) == 0 {
		var out logical.Node = logical.NewJoin(logical.CrossJoin, ln, rn, nil, b.g.pos)
		if len(residual) > 0 {
			out = &logical.Filter{Input: out, Pred: and(shiftMap(residual, at)), Pos: b.g.pos}
		}
		return out, cols
	}
	on := and(shiftMap(append(keys, residual...), at))
	return logical.NewJoin(logical.InnerJoin, ln, rn, on, b.g.pos), cols
}

func classEdgeOf(p *pred, classes [][]int) bool {
	a, okA := plainColumn(p.a)
	c, okB := plainColumn(p.b)
	if !okA || !okB || !compatible(p.a, p.b) {
		return false
	}
	for _, cl := range classes {
		hasA, hasB := false, false
		for _, x := range cl {
			hasA = hasA || x == a
			hasB = hasB || x == c
		}
		if hasA && hasB {
			return true
		}
	}
	return false
}

func shiftAll(es []expr.Expr, off int) []expr.Expr {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		out[i] = shift(e, off)
	}
	return out
}

func shiftMap(es []expr.Expr, m map[int]int) []expr.Expr {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		out[i] = remapCols(e, m)
	}
	return out
}

// filterLeaf filters n by preds: merged into a filter n already is.
func filterLeaf(n logical.Node, preds []expr.Expr, pos logical.Pos) logical.Node {
	if f, ok := n.(*logical.Filter); ok {
		return &logical.Filter{Input: f.Input, Pred: and(append(cardinality.Conjuncts(f.Pred), preds...)), Pos: f.Pos}
	}
	return &logical.Filter{Input: n, Pred: and(preds), Pos: pos}
}

// equiSides matches a = b.
func equiSides(e expr.Expr) (expr.Expr, expr.Expr, bool) {
	c, ok := e.(*expr.Call)
	if !ok || c.Func != "equal" || len(c.Args) != 2 {
		return nil, nil, false
	}
	return c.Args[0], c.Args[1], true
}

// plainColumn is the column e reads when e is a column or a cast of one.
func plainColumn(e expr.Expr) (int, bool) {
	c, ok := plainColumnExpr(e)
	if !ok {
		return 0, false
	}
	return c.Index, true
}

func plainColumnExpr(e expr.Expr) (*expr.Column, bool) {
	for {
		switch x := e.(type) {
		case *expr.Column:
			return x, true
		case *expr.Cast:
			if x.Try {
				return nil, false
			}
			e = x.Expr
		default:
			return nil, false
		}
	}
}

// compatible: the columns under a and b compare as the equality compares
// them, so the equality is transitive with others of their class: their
// own types have a common type (a cast that loses nothing, such as an
// integer to a double, keeps equal values equal).
func compatible(a, b expr.Expr) bool {
	ca, ok1 := plainColumnExpr(a)
	cb, ok2 := plainColumnExpr(b)
	if !ok1 || !ok2 {
		return false
	}
	_, ok := expr.CommonType(ca.DataType, cb.DataType)
	return ok
}

// equality is a = b over their common type.
func equality(a, b *expr.Column) (expr.Expr, bool) {
	if a == nil || b == nil {
		return nil, false
	}
	t, ok := expr.CommonType(a.DataType, b.DataType)
	if !ok {
		return nil, false
	}
	return &expr.Call{Func: "equal", Args: []expr.Expr{expr.CastTo(a, t), expr.CastTo(b, t)}, DataType: expr.Bool}, true
}

// factorAll factors every OR conjunct (factorOr) and flattens the result.
func factorAll(conj []expr.Expr) []expr.Expr {
	var out []expr.Expr
	seen := map[string]bool{}
	for _, c := range conj {
		for _, f := range cardinality.Conjuncts(factorOr(c)) {
			k := exprKey(f)
			if seen[k] {
				continue // the same conjunct twice (factored out of ORs)
			}
			seen[k] = true
			out = append(out, f)
		}
	}
	return out
}

// factorOr takes the conjuncts every branch of an OR has out of it:
// (A AND B) OR (A AND C) is A AND (B OR C). A branch left with nothing makes
// the OR true: (A) OR (A AND C) is A.
func factorOr(e expr.Expr) expr.Expr {
	lo, ok := e.(*expr.Logic)
	if !ok || lo.Op != expr.OpOr || len(lo.Args) < 2 {
		return e
	}
	disj := disjuncts(lo)
	branches := make([][]expr.Expr, len(disj))
	for i, a := range disj {
		branches[i] = cardinality.Conjuncts(factorOr(a))
	}
	var common []expr.Expr
	for _, c := range branches[0] {
		k := exprKey(c)
		inAll := true
		for _, br := range branches[1:] {
			found := false
			for _, d := range br {
				if exprKey(d) == k {
					found = true
					break
				}
			}
			inAll = inAll && found
		}
		if inAll {
			common = append(common, c)
		}
	}
	if len(common) == 0 {
		return e
	}
	isCommon := map[string]bool{}
	for _, c := range common {
		isCommon[exprKey(c)] = true
	}
	var rest []expr.Expr
	for _, br := range branches {
		var left []expr.Expr
		for _, c := range br {
			if !isCommon[exprKey(c)] {
				left = append(left, c)
			}
		}
		if len(left) == 0 {
			return and(common) // a branch that is all common: the OR holds
		}
		rest = append(rest, and(left))
	}
	return and(append(common, &expr.Logic{Op: expr.OpOr, Args: rest}))
}

// disjuncts lists the OR-ed parts of an OR, nested ORs flattened.
func disjuncts(e expr.Expr) []expr.Expr {
	if lo, ok := e.(*expr.Logic); ok && lo.Op == expr.OpOr {
		var out []expr.Expr
		for _, a := range lo.Args {
			out = append(out, disjuncts(a)...)
		}
		return out
	}
	return []expr.Expr{e}
}

// impliedFilter is, when every branch of or has conjuncts reading leaf l
// alone, the OR of those conjuncts: true whenever or is, so it may filter l
// below the joins. Its columns are the region's.
func impliedFilter(g *region, or *expr.Logic, l int) (expr.Expr, bool) {
	only := joinorder.Of(l)
	var branches []expr.Expr
	for _, a := range disjuncts(or) {
		var mine []expr.Expr
		for _, c := range cardinality.Conjuncts(a) {
			if g.relations(c) == only {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			return nil, false
		}
		branches = append(branches, and(mine))
	}
	return &expr.Logic{Op: expr.OpOr, Args: branches}, true
}

// exprKey identifies an expression by its structure, columns by index (two
// columns may share a name).
func exprKey(e expr.Expr) string {
	var b strings.Builder
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		switch x := e.(type) {
		case *expr.Column:
			fmt.Fprintf(&b, "#%d", x.Index)
			return
		case *expr.Literal:
			fmt.Fprintf(&b, "%s:%s", x.String(), x.DataType)
			return
		case *expr.Call:
			b.WriteString(x.Func)
		case *expr.Cast:
			fmt.Fprintf(&b, "cast:%s:%v", x.To, x.Try)
		case *expr.In:
			fmt.Fprintf(&b, "in:%v", x.Negated)
		case *expr.Between:
			fmt.Fprintf(&b, "between:%v", x.Negated)
		case *expr.Like:
			fmt.Fprintf(&b, "like:%v:%v", x.Negated, x.CaseInsensitive)
		case *expr.IsNull:
			fmt.Fprintf(&b, "isnull:%v", x.Negated)
		case *expr.Logic:
			b.WriteString(x.Op.String())
		case *expr.Not:
			b.WriteString("not")
		case *expr.Subquery:
			// By its plan's identity: a copy (the same plan) is equal.
			fmt.Fprintf(&b, "subquery:%d:%v:%p", x.Kind, x.Negated, x.Plan)
		default:
			// Anything else (subqueries, aggregates) by its rendering and
			// identity: never equal to another node.
			fmt.Fprintf(&b, "%T:%p", e, e)
		}
		b.WriteString("(")
		for i, c := range e.Children() {
			if i > 0 {
				b.WriteString(",")
			}
			walk(c)
		}
		b.WriteString(")")
	}
	walk(e)
	return b.String()
}

func members(s joinorder.Set) []int {
	var out []int
	for i := 0; i < joinorder.MaxRelations; i++ {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

type unionFind struct{ parent map[int]int }

func newUnionFind() *unionFind { return &unionFind{parent: map[int]int{}} }

func (u *unionFind) find(x int) int {
	if _, ok := u.parent[x]; !ok {
		u.parent[x] = x
	}
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(a, b int) { u.parent[u.find(a)] = u.find(b) }

// classes lists the sets of two or more columns, each sorted, in order of
// their smallest column.
func (u *unionFind) classes() [][]int {
	by := map[int][]int{}
	for x := range u.parent {
		r := u.find(x)
		by[r] = append(by[r], x)
	}
	var out [][]int
	for _, cl := range by {
		if len(cl) < 2 {
			continue
		}
		sort.Ints(cl)
		out = append(out, cl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
