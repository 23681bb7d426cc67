package joinorder

import (
	"math"
	"math/rand/v2"
	"testing"
)

// graph is a random join graph: base rows per relation and a selectivity
// per edge, the estimate order-independent as Problem.Rows requires.
type graph struct {
	rows  []float64
	edges []Edge
	sel   []float64
}

func (g *graph) problem() Problem {
	return Problem{N: len(g.rows), Edges: g.edges, Probe: -1, Rows: func(s Set) float64 {
		r := 1.0
		for _, i := range members(s) {
			r *= g.rows[i]
		}
		for k, e := range g.edges {
			if s.Has(e.A) && s.Has(e.B) {
				r *= g.sel[k]
			}
		}
		return r
	}}
}

func randomGraph(rng *rand.Rand, n int, extra int) *graph {
	g := &graph{}
	for range n {
		g.rows = append(g.rows, math.Pow(10, 1+5*rng.Float64()))
	}
	add := func(a, b int) {
		g.edges = append(g.edges, Edge{a, b})
		g.sel = append(g.sel, 1/math.Pow(10, 1+4*rng.Float64()))
	}
	// A random spanning tree keeps it connected; extra edges close cycles.
	perm := rng.Perm(n)
	for i := 1; i < n; i++ {
		add(perm[i], perm[rng.IntN(i)])
	}
	for range extra {
		a, b := rng.IntN(n), rng.IntN(n)
		if a != b {
			add(a, b)
		}
	}
	return g
}

// bestBySubsets is the reference: dynamic programming over every subset,
// every split of it into two connected parts joined by an edge.
func bestBySubsets(p Problem) float64 {
	s := newSolver(p)
	best := map[Set]*Plan{}
	for i := 0; i < p.N; i++ {
		best[Of(i)] = s.leaf(i)
	}
	full := Set(1)<<uint(p.N) - 1
	for set := Set(1); set <= full; set++ {
		if set.Len() < 2 {
			continue
		}
		for sub := (set - 1) & set; sub != 0; sub = (sub - 1) & set {
			a, b := best[sub], best[set&^sub]
			if a == nil || b == nil || !s.connected(sub, set&^sub) {
				continue
			}
			pl := s.join(a, b)
			if cur := best[set]; cur == nil || pl.Cost < cur.Cost {
				best[set] = pl
			}
		}
	}
	return best[full].Cost
}

func noCross(t *testing.T, p *Plan) {
	t.Helper()
	if p.Leaf() {
		return
	}
	if p.Cross {
		t.Fatalf("cross product in %s although the graph is connected", p)
	}
	noCross(t, p.Left)
	noCross(t, p.Right)
}

func TestDPccpFindsTheOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 2 + rng.IntN(8)
		g := randomGraph(rng, n, rng.IntN(n+1))
		p := g.problem()
		pl, m, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if m != DPccp {
			t.Fatalf("trial %d: method %s", trial, m)
		}
		if pl.Set != Set(1)<<uint(n)-1 {
			t.Fatalf("trial %d: plan %s covers %b", trial, pl, pl.Set)
		}
		noCross(t, pl)
		want := bestBySubsets(p)
		if math.Abs(pl.Cost-want) > 1e-9*want {
			t.Fatalf("trial %d (%d relations): DPccp cost %g, exhaustive %g; plan %s", trial, n, pl.Cost, want, pl)
		}
	}
}

func TestGOOWhenTheBudgetRunsOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := randomGraph(rng, 14, 40)
	p := g.problem()
	p.Budget = 100
	pl, m, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	if m != GOO {
		t.Fatalf("method %s, want goo", m)
	}
	if pl.Set != Set(1)<<14-1 {
		t.Fatalf("plan %s does not cover every relation", pl)
	}
	noCross(t, pl)
}

func TestComponentsJoinLastSmallestFirst(t *testing.T) {
	// 0-1 connected, 2 alone, 3-4 connected: two cross products, above the
	// joins, the smallest component first.
	rows := []float64{1000, 10, 5, 100, 100}
	p := Problem{N: 5, Probe: -1, Edges: []Edge{{0, 1}, {3, 4}}, Rows: func(s Set) float64 {
		r := 1.0
		for _, i := range members(s) {
			r *= rows[i]
		}
		if s.Has(0) && s.Has(1) {
			r /= 10
		}
		if s.Has(3) && s.Has(4) {
			r /= 100
		}
		return r
	}}
	pl, _, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	crosses := 0
	var walk func(p *Plan)
	walk = func(p *Plan) {
		if p.Leaf() {
			return
		}
		if p.Cross {
			crosses++
		}
		walk(p.Left)
		walk(p.Right)
	}
	walk(pl)
	if crosses != 2 {
		t.Fatalf("%d cross products in %s, want 2", crosses, pl)
	}
	// The joins inside components come first: no cross product under a
	// join that has a predicate.
	var check func(p *Plan)
	check = func(p *Plan) {
		if p.Leaf() {
			return
		}
		if !p.Cross && (hasCross(p.Left) || hasCross(p.Right)) {
			t.Fatalf("a join above a cross product: %s", pl)
		}
		check(p.Left)
		check(p.Right)
	}
	check(pl)
}

func hasCross(p *Plan) bool {
	if p.Leaf() {
		return false
	}
	return p.Cross || hasCross(p.Left) || hasCross(p.Right)
}

func TestProbeStaysLeftmost(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := randomGraph(rng, 6, 3)
	p := g.problem()
	p.Probe = 4
	pl, m, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	if m != LeftDeep {
		t.Fatalf("method %s", m)
	}
	for q := pl; !q.Leaf(); q = q.Left {
		if !q.Right.Leaf() {
			t.Fatalf("not left-deep: %s", pl)
		}
		if q.Right.Set.Has(4) {
			t.Fatalf("the stream is a build side: %s", pl)
		}
	}
	q := pl
	for !q.Leaf() {
		q = q.Left
	}
	if q.Rel != 4 {
		t.Fatalf("leftmost relation %d, want 4: %s", q.Rel, pl)
	}
}

func TestBuildSideIsTheSmaller(t *testing.T) {
	rows := []float64{6e6, 1.5e6}
	p := Problem{N: 2, Probe: -1, Edges: []Edge{{0, 1}}, Rows: func(s Set) float64 {
		r := 1.0
		for _, i := range members(s) {
			r *= rows[i]
		}
		if s.Len() == 2 {
			r /= 1.5e6
		}
		return r
	}}
	pl, _, _ := Solve(p)
	if pl.Right.Rel != 1 {
		t.Fatalf("build side %d, want the smaller input 1: %s", pl.Right.Rel, pl)
	}
}

// TestDPccpVisitsEachPairOnceInOrder checks DPccp's enumeration against
// every csg-cmp pair of random graphs: each is visited once, and only after
// both of its sides were complete (every pair making them was visited).
func TestDPccpVisitsEachPairOnceInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 50 {
		n := 2 + rng.IntN(9)
		g := randomGraph(rng, n, rng.IntN(2*n))
		s := newSolver(g.problem())
		full := Set(1)<<uint(n) - 1
		order := s.bfs(full)
		local := map[int]int{}
		for i, r := range order {
			local[r] = i
		}
		d := &dp{s: s, adj: make([]Set, n), best: map[Set]*Plan{}, budget: 1 << 30}
		for i, r := range order {
			for _, m := range members(s.adj[r]) {
				d.adj[i] |= Of(local[m])
			}
			d.best[Of(i)] = s.leaf(r)
		}
		connected := func(set Set) bool {
			c := Of(set.Min())
			for {
				nn := d.neighbours(c) & set
				if nn == 0 {
					return c == set
				}
				c |= nn
			}
		}
		want := map[[2]Set]bool{}
		pairsOf := map[Set]int{} // how many pairs make each set
		for set := Set(1); set <= full; set++ {
			for sub := (set - 1) & set; sub != 0; sub = (sub - 1) & set {
				o := set &^ sub
				if sub < o && connected(sub) && connected(o) && d.neighbours(sub)&o != 0 {
					want[[2]Set{sub, o}] = true
					pairsOf[set]++
				}
			}
		}
		got := map[[2]Set]bool{}
		made := map[Set]int{}
		d.trace = func(a, b Set) {
			k := [2]Set{min(a, b), max(a, b)}
			if got[k] {
				t.Fatalf("trial %d: pair %b %b twice", trial, a, b)
			}
			got[k] = true
			for _, side := range []Set{a, b} {
				if side.Len() > 1 && made[side] != pairsOf[side] {
					t.Fatalf("trial %d: pair %b %b before %b was complete", trial, a, b, side)
				}
			}
			made[a|b]++
		}
		for v := n - 1; v >= 0; v-- {
			d.emitCsg(full, Of(v))
			d.csgRec(full, Of(v), below(full, v)|Of(v))
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d pairs visited, %d exist", trial, len(got), len(want))
		}
	}
}
