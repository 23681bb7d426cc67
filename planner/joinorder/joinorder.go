// Package joinorder picks the order in which a query's inner joins run: given
// the relations, the join edges between them (equality predicates a hash join
// can use) and an estimate of how many rows any set of them yields when
// joined, it returns the join tree of least cost.
//
// The cost is C_out plus the build sides: every intermediate result's rows,
// and the rows each hash join indexes (its smaller input, which it keeps in
// memory). The search is DPccp (Moerkotte and Neumann, "Analysis of Two
// Existing and One New Dynamic Programming Algorithm for the Generation of
// Optimal Bushy Join Trees without Cross Products", VLDB 2006): dynamic
// programming over the connected subgraphs and their connected complements,
// so that it never considers a cross product between relations a predicate
// connects. Past a budget of pairs (large or dense graphs) it falls back to
// GOO, greedy operator ordering (Fegaras, 1998), which joins the connected
// pair with the smallest result first. Relations no predicate connects (the
// graph's components) are joined last, smallest first, by cross products.
//
// The package is pure: it knows nothing of plans or statistics, which the
// caller folds into Problem.Rows.
package joinorder

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// Set is a set of relations, bit i for relation i (at most 64).
type Set uint64

// MaxRelations is the most relations one problem may have.
const MaxRelations = 64

// Has reports whether relation i is in s.
func (s Set) Has(i int) bool { return s&(1<<uint(i)) != 0 }

// Len is the number of relations in s.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// Min is the lowest relation in s (-1 for the empty set).
func (s Set) Min() int {
	if s == 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(s))
}

// Of is the set of the given relations.
func Of(rels ...int) Set {
	var s Set
	for _, r := range rels {
		s |= 1 << uint(r)
	}
	return s
}

// Edge joins relations A and B with a predicate a hash join can use.
type Edge struct{ A, B int }

// Problem is one join graph.
type Problem struct {
	// N is the number of relations, 0..N-1.
	N int
	// Edges connect relations; relations without a path between them are
	// joined by cross products.
	Edges []Edge
	// Rows estimates the rows of joining exactly the relations of s, in any
	// order (the product of their rows and of the selectivities of the
	// predicates among them): an estimate that does not depend on the
	// order is what makes the costs of two orders comparable.
	Rows func(s Set) float64
	// Probe, when >= 0, is a relation that must be the probe side (the
	// left input) of every join above it: a stream, which never ends and
	// so can never be a hash join's build side. The plan is then left-deep
	// with Probe at its bottom.
	Probe int
	// Budget bounds the csg-cmp pairs DPccp may visit before it gives up
	// for GOO (0: DefaultBudget).
	Budget int
}

// DefaultBudget is the pairs DPccp visits before falling back to GOO: it
// covers every shape of up to about ten relations (a clique of 10 has
// 28,501 pairs) and chains and stars of many more, in a few milliseconds.
const DefaultBudget = 50000

// Plan is a join tree. A leaf has Left == Right == nil and names relation
// Rel. A join's Left is its probe side, Right its build side.
type Plan struct {
	Rel         int
	Left, Right *Plan
	Set         Set
	Rows        float64
	Cost        float64
	// Cross is a join without a predicate between its sides.
	Cross bool
}

// Leaf reports whether p is one relation.
func (p *Plan) Leaf() bool { return p.Left == nil }

func (p *Plan) String() string {
	if p.Leaf() {
		return fmt.Sprint(p.Rel)
	}
	op := "⋈"
	if p.Cross {
		op = "×"
	}
	return "(" + p.Left.String() + " " + op + " " + p.Right.String() + ")"
}

// Method says how Solve found its plan.
type Method string

// Methods.
const (
	DPccp    Method = "dpccp"
	GOO      Method = "goo"
	LeftDeep Method = "left-deep" // Problem.Probe: greedy, the stream first
)

// Solve returns the cheapest plan it finds, and how it searched.
func Solve(p Problem) (*Plan, Method, error) {
	if p.N <= 0 {
		return nil, "", fmt.Errorf("joinorder: no relations")
	}
	if p.N > MaxRelations {
		return nil, "", fmt.Errorf("joinorder: %d relations (at most %d)", p.N, MaxRelations)
	}
	s := newSolver(p)
	if p.Probe >= 0 && p.Probe < p.N {
		return s.leftDeep(p.Probe), LeftDeep, nil
	}
	comps := s.components()
	method := DPccp
	plans := make([]*Plan, len(comps))
	for i, c := range comps {
		pl, ok := s.dpccp(c)
		if !ok {
			pl, method = s.goo(c), GOO
		}
		plans[i] = pl
	}
	// Components join by cross products, the smallest first: each product
	// multiplies the rows of all before it.
	sort.SliceStable(plans, func(i, j int) bool { return plans[i].Rows < plans[j].Rows })
	out := plans[0]
	for _, pl := range plans[1:] {
		out = s.join(out, pl)
	}
	return out, method, nil
}

type solver struct {
	p    Problem
	adj  []Set
	rows map[Set]float64
}

func newSolver(p Problem) *solver {
	s := &solver{p: p, adj: make([]Set, p.N), rows: map[Set]float64{}}
	for _, e := range p.Edges {
		if e.A == e.B || e.A < 0 || e.B < 0 || e.A >= p.N || e.B >= p.N {
			continue
		}
		s.adj[e.A] |= Of(e.B)
		s.adj[e.B] |= Of(e.A)
	}
	return s
}

func (s *solver) card(set Set) float64 {
	if r, ok := s.rows[set]; ok {
		return r
	}
	r := s.p.Rows(set)
	if math.IsNaN(r) || r < 0 {
		r = 0
	}
	s.rows[set] = r
	return r
}

func (s *solver) leaf(i int) *Plan {
	set := Of(i)
	return &Plan{Rel: i, Set: set, Rows: s.card(set)}
}

// neighbours are the relations outside set adjacent to it.
func (s *solver) neighbours(set Set) Set {
	var n Set
	for r := set; r != 0; r &= r - 1 {
		n |= s.adj[bits.TrailingZeros64(uint64(r))]
	}
	return n &^ set
}

func (s *solver) connected(a, b Set) bool { return s.neighbours(a)&b != 0 }

// join makes the join of a and b: the smaller input is the build side
// (right), and the cost adds the result's rows and the build side's.
func (s *solver) join(a, b *Plan) *Plan {
	if b.Rows > a.Rows {
		a, b = b, a
	}
	set := a.Set | b.Set
	rows := s.card(set)
	return &Plan{Left: a, Right: b, Set: set, Rows: rows, Cost: a.Cost + b.Cost + rows + b.Rows, Cross: !s.connected(a.Set, b.Set)}
}

// components are the connected components of the graph, each a set.
func (s *solver) components() []Set {
	var out []Set
	var seen Set
	for i := 0; i < s.p.N; i++ {
		if seen.Has(i) {
			continue
		}
		c := Of(i)
		for {
			n := s.neighbours(c)
			if n == 0 {
				break
			}
			c |= n
		}
		seen |= c
		out = append(out, c)
	}
	return out
}

// dpccp solves the connected component comp exactly; false when the budget
// ran out first. DPccp meets every pair after the pairs of its parts only
// when the relations are numbered breadth first, so it runs on a numbering
// of its own (a local solver) and its plan is renumbered back.
func (s *solver) dpccp(comp Set) (*Plan, bool) {
	order := s.bfs(comp)
	if len(order) == 1 {
		return s.leaf(order[0]), true
	}
	local := make(map[int]int, len(order))
	for i, r := range order {
		local[r] = i
	}
	toGlobal := func(ls Set) Set {
		var g Set
		for r := ls; r != 0; r &= r - 1 {
			g |= Of(order[bits.TrailingZeros64(uint64(r))])
		}
		return g
	}
	d := &dp{s: s, toGlobal: toGlobal, adj: make([]Set, len(order)), best: map[Set]*Plan{}, budget: s.p.Budget}
	if d.budget <= 0 {
		d.budget = DefaultBudget
	}
	for i, r := range order {
		for n := s.adj[r] & comp; n != 0; n &= n - 1 {
			d.adj[i] |= Of(local[bits.TrailingZeros64(uint64(n))])
		}
		d.best[Of(i)] = s.leaf(r)
	}
	all := Set(1)<<uint(len(order)) - 1
	if len(order) == 64 {
		all = ^Set(0)
	}
	ok := true
	// Relations in descending order; B_i is every relation up to and
	// including i.
	for v := len(order) - 1; v >= 0 && ok; v-- {
		bv := below(all, v) | Of(v)
		ok = d.emitCsg(all, Of(v)) && d.csgRec(all, Of(v), bv)
	}
	if !ok {
		return nil, false
	}
	pl := d.best[all]
	return pl, pl != nil
}

// bfs numbers comp's relations breadth first from its lowest.
func (s *solver) bfs(comp Set) []int {
	start := comp.Min()
	order := []int{start}
	seen := Of(start)
	for i := 0; i < len(order); i++ {
		for _, n := range members(s.adj[order[i]] & comp &^ seen) {
			seen |= Of(n)
			order = append(order, n)
		}
	}
	return order
}

// dp is DPccp over one component, numbered breadth first; plans inside it
// name the relations by their global numbers.
type dp struct {
	s        *solver
	toGlobal func(Set) Set
	adj      []Set
	best     map[Set]*Plan
	pairs    int
	budget   int
	trace    func(s1, s2 Set) // tests: every pair visited
}

func (d *dp) neighbours(set Set) Set {
	var n Set
	for r := set; r != 0; r &= r - 1 {
		n |= d.adj[bits.TrailingZeros64(uint64(r))]
	}
	return n &^ set
}

// csgRec extends the connected set set by subsets of its neighbours not in
// excluded, emitting each and recursing. Subsets go in increasing order, so
// that every set is emitted after its own subsets (DPccp's order).
func (d *dp) csgRec(all, set, excluded Set) bool {
	n := d.neighbours(set) & all &^ excluded
	if n == 0 {
		return true
	}
	for sub := (0 - n) & n; sub != 0; sub = (sub - n) & n {
		if !d.emitCsg(all, set|sub) {
			return false
		}
	}
	for sub := (0 - n) & n; sub != 0; sub = (sub - n) & n {
		if !d.csgRec(all, set|sub, excluded|n) {
			return false
		}
	}
	return true
}

// emitCsg enumerates the connected complements of the connected set s1 and
// joins each pair.
func (d *dp) emitCsg(all, s1 Set) bool {
	x := below(all, s1.Min()) | s1
	n := d.neighbours(s1) & all &^ x
	ms := members(n)
	for k := len(ms) - 1; k >= 0; k-- {
		v := ms[k]
		s2 := Of(v)
		if !d.pair(s1, s2) {
			return false
		}
		if !d.cmpRec(all, s1, s2, x|(below(all, v)&n)) {
			return false
		}
	}
	return true
}

func (d *dp) cmpRec(all, s1, s2, excluded Set) bool {
	n := d.neighbours(s2) & all &^ excluded
	if n == 0 {
		return true
	}
	for sub := (0 - n) & n; sub != 0; sub = (sub - n) & n {
		if !d.pair(s1, s2|sub) {
			return false
		}
	}
	for sub := (0 - n) & n; sub != 0; sub = (sub - n) & n {
		if !d.cmpRec(all, s1, s2|sub, excluded|n) {
			return false
		}
	}
	return true
}

// pair considers joining the best plans of s1 and s2.
func (d *dp) pair(s1, s2 Set) bool {
	d.pairs++
	if d.pairs > d.budget {
		return false
	}
	if d.trace != nil {
		d.trace(s1, s2)
	}
	a, b := d.best[s1], d.best[s2]
	if a == nil || b == nil {
		return true // not reached in DPccp's order
	}
	pl := d.s.join(a, b)
	if cur := d.best[s1|s2]; cur == nil || pl.Cost < cur.Cost {
		d.best[s1|s2] = pl
	}
	return true
}

// goo joins, until one tree is left, the two connected trees whose join has
// the fewest rows.
func (s *solver) goo(comp Set) *Plan {
	var trees []*Plan
	for _, i := range members(comp) {
		trees = append(trees, s.leaf(i))
	}
	for len(trees) > 1 {
		bi, bj := -1, -1
		best := math.Inf(1)
		for i := range trees {
			for j := i + 1; j < len(trees); j++ {
				if !s.connected(trees[i].Set, trees[j].Set) {
					continue
				}
				if r := s.card(trees[i].Set | trees[j].Set); r < best || bi < 0 {
					bi, bj, best = i, j, r
				}
			}
		}
		if bi < 0 { // not reached within a component
			bi, bj = 0, 1
		}
		joined := s.join(trees[bi], trees[bj])
		trees[bi] = joined
		trees = append(trees[:bj], trees[bj+1:]...)
	}
	return trees[0]
}

// leftDeep builds a left-deep plan with relation first at the bottom: at
// each step it adds the relation connected to what is joined so far that
// gives the fewest rows (any relation, smallest first, when none is
// connected).
func (s *solver) leftDeep(first int) *Plan {
	cur := s.leaf(first)
	left := (Set(1)<<uint(s.p.N) - 1) &^ Of(first)
	if s.p.N == 64 {
		left = ^Of(first)
	}
	for left != 0 {
		cand := s.neighbours(cur.Set) & left
		if cand == 0 {
			cand = left
		}
		bi, best := -1, math.Inf(1)
		for _, i := range members(cand) {
			if r := s.card(cur.Set | Of(i)); r < best || bi < 0 {
				bi, best = i, r
			}
		}
		r := s.leaf(bi)
		set := cur.Set | r.Set
		rows := s.card(set)
		cur = &Plan{Left: cur, Right: r, Set: set, Rows: rows, Cost: cur.Cost + rows + r.Rows, Cross: !s.connected(cur.Set, r.Set)}
		left &^= r.Set
	}
	return cur
}

// members lists the relations of s in ascending order.
func members(s Set) []int {
	var out []int
	for r := s; r != 0; r &= r - 1 {
		out = append(out, bits.TrailingZeros64(uint64(r)))
	}
	return out
}

// below is the relations of comp numbered below i.
func below(comp Set, i int) Set {
	if i <= 0 {
		return 0
	}
	return comp & (Set(1)<<uint(i) - 1)
}

// Format prints a plan as an indented tree, with rows and cost; name names
// a relation.
func Format(p *Plan, name func(int) string) string {
	var b strings.Builder
	var walk func(p *Plan, depth int)
	walk = func(p *Plan, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		if p.Leaf() {
			fmt.Fprintf(&b, "%s rows=%.0f\n", name(p.Rel), p.Rows)
			return
		}
		kind := "join"
		if p.Cross {
			kind = "cross"
		}
		fmt.Fprintf(&b, "%s rows=%.0f cost=%.0f\n", kind, p.Rows, p.Cost)
		walk(p.Left, depth+1)
		walk(p.Right, depth+1)
	}
	walk(p, 0)
	return b.String()
}
