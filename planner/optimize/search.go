package optimize

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sort"
	"time"
)

// bnb is the exact branch and bound over the decision space of the package
// comment. Operators are decided in topological order (so every in-edge's cost
// is known when its receiver is decided); per operator it branches on the
// variant, then on how many free members of each worker class to take, then on
// which class holds the remainder worker.
//
// Bounds, all valid lower bounds of what is still to pay:
//
//   - for the operator being decided: its chosen workers' prices plus a
//     fractional cover of its demand, where chosen workers carry items at their
//     incoming network cost per item and other workers at price/capacity plus
//     that (a used worker costs its full price, so this never overestimates);
//
//   - for each later operator the same fractional cover over the free workers
//     A2 allows given the decided parents, with network from decided parents
//     and sources; minimised over the variant combinations that can still meet
//     the accuracy target. A later operator that cannot be covered at all
//     prunes the branch.
//
//   - each cover is also bounded by whole workers (coverDP: integer cover of
//     the demand with capacities rounded up) and by a split on the partly used
//     worker, and, with multipliers lam set at the root by subgradient steps,
//     by the Lagrangian bound that charges operators competing for the same
//     workers (see computeLambda); the largest bound is used.
//
// Network cost only grows as operators are added and every used worker costs
// its full price, so pruning on these bounds never cuts an optimal plan.
//
// Dominance: a worker set is also dropped when the remainder worker's spare
// capacity could take over a whole saturated worker of another class that is
// placed no better (same tier and location, no cheaper link; see
// dominatedRemainder): the smaller set is strictly cheaper, just as feasible,
// and enumerated too. On the Table-4 setups this removes the many sets "one
// GPU plus a few CPUs of the same tier" that the cost bounds cannot tell
// apart before the next operator's network is known.
//
// The hot paths allocate nothing per node (per-depth arenas; see the scratch
// fields), and the integer cover bounds are computed only where they can
// prune. The property tests check the result against an independent
// enumeration.
type bnb struct {
	in      *instance
	cls     []wclass
	classOf []int
	order   []int
	ctx     context.Context

	// state
	vars    []int
	ws      [][]int
	thr     [][]float64
	used    []int // per class: members taken (always the first ones)
	bw      []float64
	cost    float64
	decided []bool

	best      float64
	bestSol   sol
	found     bool
	firstOnly bool // feasibility mode: stop at the first feasible plan

	// tierA2: the model's A2 is "never to a lower tier", so it holds
	// transitively along paths and bounds may floor descendants' tiers.
	tierA2  bool
	anc     [][]bool // anc[x][y]: y is an ancestor of x
	maxTier []int    // per decided operator: its highest worker tier

	// lam prices each worker of a class (Lagrange multipliers of "a worker
	// serves one operator"), set once at the root; nil when it does not help.
	lam []float64

	// netDom[r][j]: a worker of class r is placed no worse than one of class
	// j (same tier and location, every link and A2 permission at least as
	// good); nil when no pair qualifies.
	netDom [][]bool

	// Scratch reused across nodes (the search allocates nothing per node in
	// its hot paths): candidate lists of bounded operators, later-operator
	// bound tables by depth (without and with lam), the chosen workers and
	// bandwidth increments of the apply active at each depth.
	candBuf    []cand
	pieceBuf   []piece
	splitBuf   []piece
	tabBuf     [2][][][][]float64
	candArena  [][]cand
	pieceArena [][]piece
	optsBuf    [][]vopt
	kBuf       [][]int
	recPs      [][]piece
	wsBuf      [][]int
	thrBuf     [][]float64
	bwIdx      [][]int
	bwAmt      [][]float64

	combos    [][]int // variant combinations meeting the target, when enumerable
	nodes     int
	deadline  time.Time
	stopped   bool
	gaveUp    bool
	cancelErr error
}

const maxCombosForBounds = 4096

func newBnB(ctx context.Context, in *instance) *bnb {
	b := &bnb{in: in, ctx: ctx, order: in.ix.topo, best: math.Inf(1)}
	b.cls, b.classOf = in.classes()
	b.vars = make([]int, in.nOps)
	b.ws = make([][]int, in.nOps)
	b.thr = make([][]float64, in.nOps)
	b.used = make([]int, len(b.cls))
	nt := len(in.p.Tiers)
	b.bw = make([]float64, nt*nt)
	b.decided = make([]bool, in.nOps)
	b.maxTier = make([]int, in.nOps)
	b.splitBuf = make([]piece, 0, len(b.cls)+1)
	b.pieceBuf = make([]piece, 0, len(b.cls))
	b.candArena = make([][]cand, in.nOps)
	b.pieceArena = make([][]piece, in.nOps)
	b.optsBuf = make([][]vopt, in.nOps)
	b.kBuf = make([][]int, in.nOps)
	b.recPs = make([][]piece, in.nOps)
	b.wsBuf = make([][]int, in.nOps)
	b.thrBuf = make([][]float64, in.nOps)
	b.bwIdx = make([][]int, in.nOps)
	b.bwAmt = make([][]float64, in.nOps)
	for i := range b.tabBuf {
		b.tabBuf[i] = make([][][][]float64, in.nOps)
	}
	b.tierA2 = true
	for x := range in.nW {
		for y := range in.nW {
			if in.allowed[x*in.nW+y] != (in.ix.workerTier[y] >= in.ix.workerTier[x]) {
				b.tierA2 = false
			}
		}
	}
	for s := range in.p.Sources {
		for y := range in.nW {
			if in.sallowed[s*in.nW+y] != (in.ix.workerTier[y] >= in.ix.sourceTier[s]) {
				b.tierA2 = false
			}
		}
	}
	b.netDom = in.netDominance(b.cls)
	b.anc = make([][]bool, in.nOps)
	for _, x := range in.ix.topo {
		b.anc[x] = make([]bool, in.nOps)
		for _, e := range in.ix.in[x] {
			if e.from >= 0 {
				b.anc[x][e.from] = true
				for y, isAnc := range b.anc[e.from] {
					b.anc[x][y] = b.anc[x][y] || isAnc
				}
			}
		}
	}
	if in.numCombos(maxCombosForBounds) <= maxCombosForBounds {
		b.combos = [][]int{}
		in.combos(func(vars []int) bool {
			if in.meetsAccuracy(in.sinkAccuracy(vars)) {
				b.combos = append(b.combos, append([]int(nil), vars...))
			}
			return true
		})
	}
	return b
}

// run searches until done, the deadline, or (firstOnly) a feasible plan.
func (b *bnb) run(deadline time.Time) {
	b.deadline = deadline
	b.assign(0)
}

func (b *bnb) tick() bool {
	if b.stopped {
		return false
	}
	b.nodes++
	if b.nodes&255 == 0 {
		if err := b.ctx.Err(); err != nil {
			b.cancelErr, b.stopped = err, true
			return false
		}
		if !b.deadline.IsZero() && time.Now().After(b.deadline) {
			b.gaveUp, b.stopped = true, true
			return false
		}
	}
	return true
}

// cand is a worker class available to the operator being decided.
type cand struct {
	class int
	cap   float64
	price float64
	net   float64 // incoming network cost per item on a member
	unit  float64 // price/cap + net
	free  int
}

// candidates lists the classes that can serve o with variant v now: free
// members, non-zero capacity, A2-allowed from every decided parent's workers.
func (b *bnb) candidates(o, v, floor int) []cand {
	return b.candidatesInto(nil, o, v, floor)
}

// candidatesInto is candidates appended to cs[:0].
func (b *bnb) candidatesInto(cs []cand, o, v, floor int) []cand {
	in := b.in
	cs = cs[:0]
	for c := range b.cls {
		free := len(b.cls[c].members) - b.used[c]
		if free <= 0 || b.cls[c].tier < floor {
			continue
		}
		rep := b.cls[c].members[b.used[c]]
		capc := in.caps[o][v][rep]
		if capc <= 0 {
			continue
		}
		net, ok := b.netPerItem(o, v, rep)
		if !ok {
			continue
		}
		pr := in.price[rep]
		cs = append(cs, cand{class: c, cap: capc, price: pr, net: net, unit: pr/capc + net, free: free})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(a.unit, b.unit) })
	return cs
}

// netPerItem is the network cost per item into o (variant v) received on worker
// w from sources and decided parents; ok is false when A2 forbids w.
func (b *bnb) netPerItem(o, v, w int) (float64, bool) {
	in := b.in
	n := in.nW
	net := 0.0
	for k, e := range in.ix.in[o] {
		if e.src >= 0 {
			j := e.src*n + w
			if !in.sallowed[j] {
				return 0, false
			}
			net += in.kb[o][k][0][v] * in.slink[j]
			continue
		}
		u := e.from
		if !b.decided[u] {
			// Only when bounding a later operator: every item will come
			// from some free worker able to run u, at no less than the
			// cheapest such link and the smallest message size.
			if in.ix.demand[u] <= eps {
				continue
			}
			kbMin := math.Inf(1)
			for _, row := range in.kb[o][k] {
				kbMin = min(kbMin, row[v])
			}
			m := math.Inf(1)
			for c := range b.cls {
				if b.used[c] >= len(b.cls[c].members) {
					continue
				}
				a := b.cls[c].members[b.used[c]]
				if a == w {
					// w cannot serve both: take another free member.
					if b.used[c]+1 >= len(b.cls[c].members) {
						continue
					}
					a = b.cls[c].members[b.used[c]+1]
				}
				if !in.allowed[a*n+w] || !b.canRun(u, a) {
					continue
				}
				m = min(m, in.link[a*n+w])
			}
			if math.IsInf(m, 1) {
				return 0, false
			}
			net += kbMin * m
			continue
		}
		tu := in.ix.demand[u]
		kb := in.kb[o][k][b.vars[u]][v]
		for i, a := range b.ws[u] {
			if !in.allowed[a*n+w] {
				return 0, false
			}
			if tu > 0 {
				net += b.thr[u][i] / tu * kb * in.link[a*n+w]
			}
		}
	}
	return net, true
}

// piece is n workers of one class for the operator being bounded: each
// carries up to cap items at perItem; price > 0 marks workers not yet paid for
// (perItem then includes price/cap), price 0 workers already chosen.
type piece struct {
	perItem, cap float64
	n            int
	price, net   float64
}

// cover bounds the cheapest way to carry need items on the pieces: the
// fractional (LP) cover, tightened once on its critical piece (the one only
// partly used) when that piece still has to be paid for: any plan either pays
// for one more of its workers than the LP uses whole, or uses at most that many
// (a Martello-Toth style bound). +Inf when the pieces cannot carry need.
//
// enough says what the caller prunes at: once the fractional bounds reach it,
// or when the integer ones cannot, the costlier integer bounds are skipped
// (+Inf: always computed).
func cover(ps []piece, need, enough float64) float64 {
	return coverWith(ps, need, enough, nil)
}

// cover is the package cover with the search's scratch space.
func (b *bnb) cover(ps []piece, need, enough float64) float64 {
	return coverWith(ps, need, enough, b.splitBuf)
}

// coverWith is cover with scratch space for the split bound.
func coverWith(ps []piece, need, enough float64, scratch []piece) float64 {
	if need <= eps {
		return 0
	}
	slices.SortFunc(ps, byPerItem)
	lp, j, q := coverLP(ps, need, -1, 0)
	if math.IsInf(lp, 1) || lp >= enough {
		return lp
	}
	// Rounding the LP's critical worker up is a whole-worker cover, so
	// neither integer bound exceeds lp plus its price: when that stays below
	// enough they cannot change the caller's verdict and are skipped.
	gap := 0.0
	if j >= 0 {
		gap = ps[j].price
	}
	if !math.IsInf(enough, 1) && lp+gap < enough-1e-9 {
		return lp
	}
	if j >= 0 && ps[j].price > 0 {
		lp = max(lp, splitCritical(ps, need, lp, j, q, scratch))
		if lp >= enough {
			return lp
		}
	}
	return max(lp, coverDP(ps, need))
}

func byPerItem(a, b piece) int { return cmp.Compare(a.perItem, b.perItem) }

// splitCritical is the bound on the LP's critical piece j (q of its workers
// used whole): at most q of them, or q+1 paid in full.
func splitCritical(ps []piece, need, lp float64, j, q int, scratch []piece) float64 {
	// Branch B: at most q workers of piece j.
	b, _, _ := coverLP(ps, need, j, q)
	// Branch A: q+1 workers of piece j paid in full, carrying at net.
	pa := append(scratch[:0], ps...)
	pa[j].n -= q + 1
	pa = append(pa, piece{perItem: ps[j].net, cap: ps[j].cap, n: q + 1, net: ps[j].net})
	slices.SortFunc(pa, byPerItem)
	a, _, _ := coverLP(pa, need, -1, 0)
	a += float64(q+1) * ps[j].price
	return max(lp, min(a, b))
}

// dpUnits is the resolution of coverDP: demand in at most this many units.
const dpUnits = 64

// coverDP is the integer bound: the cheapest set of whole workers whose
// capacities (rounded up to units of the paid need/dpUnits, so never
// underestimated) reach need, by dynamic programming over units, plus need
// times the lowest network cost per item any piece has. It catches the price
// of the partly used last worker that the fractional cover lets go. Workers
// already paid for (price 0) only shrink the need: using all of them is
// never dearer.
func coverDP(ps []piece, need float64) float64 {
	if need <= eps {
		return 0
	}
	minNet, paid := math.Inf(1), need
	for _, p := range ps {
		minNet = min(minNet, p.net)
		if p.price <= 0 {
			paid -= float64(p.n) * p.cap
		}
	}
	if paid <= eps {
		return need * minNet
	}
	g := paid / dpUnits
	const units = dpUnits
	var dp [dpUnits + 1]float64
	for i := 1; i <= units; i++ {
		dp[i] = math.Inf(1)
	}
	for _, p := range ps {
		if p.price <= 0 || p.n <= 0 {
			continue
		}
		u := int(math.Ceil(p.cap/g - 1e-9))
		// n identical workers as bundles of 1, 2, 4, ... (binary splitting):
		// every count up to n is a sum of distinct bundles.
		for left, m := p.n, 1; left > 0; m *= 2 {
			m = min(m, left)
			left -= m
			mu, mp := m*u, float64(m)*p.price
			if mu >= units {
				for c := 1; c <= units; c++ {
					dp[c] = min(dp[c], mp)
				}
				break // more of them cannot help
			}
			for c := units; c > mu; c-- {
				if x := dp[c-mu] + mp; x < dp[c] {
					dp[c] = x
				}
			}
			for c := mu; c > 0; c-- {
				dp[c] = min(dp[c], mp)
			}
		}
	}
	return dp[units] + need*minNet
}

// coverLP is the fractional cover of need on ps (sorted by perItem), with
// piece skip limited to limit workers. It returns the cost, the index of the
// critical piece (-1 when none is partly used) and how many of its workers the
// cover uses whole.
func coverLP(ps []piece, need float64, skip, limit int) (float64, int, int) {
	cost := 0.0
	for i, p := range ps {
		n := p.n
		if i == skip {
			n = limit
		}
		if n <= 0 {
			continue
		}
		capTotal := float64(n) * p.cap
		if capTotal < need-eps {
			cost += capTotal * p.perItem
			need -= capTotal
			continue
		}
		cost += need * p.perItem
		whole := int(need/p.cap + eps)
		if float64(whole)*p.cap >= need-eps {
			return cost, -1, whole
		}
		return cost, i, whole
	}
	return math.Inf(1), -1, 0
}

// opLB is the bound for a later operator o with variant v.
func (b *bnb) opLB(o, v, floor int, buf []piece, lam []float64) float64 {
	ps := buf[:0]
	b.candBuf = b.candidatesInto(b.candBuf, o, v, floor)
	for _, c := range b.candBuf {
		ps = append(ps, c.piece(lam))
	}
	return b.cover(ps, b.in.ix.demand[o], math.Inf(1))
}

// piece is the class as a cover piece, its price raised by lam (may be nil).
func (c cand) piece(lam []float64) piece {
	if lam == nil {
		return piece{c.unit, c.cap, c.free, c.price, c.net}
	}
	p := c.price + lam[c.class]
	return piece{p/c.cap + c.net, c.cap, c.free, p, c.net}
}

// lamFree is the multipliers' total over the free workers.
func (b *bnb) lamFree() float64 {
	t := 0.0
	for c, l := range b.lam {
		t += l * float64(len(b.cls[c].members)-b.used[c])
	}
	return t
}

// laterLBs bounds each operator after depth alone: tab[o][v][t] is opLB of
// operator o with variant v when the operator at depth uses a worker of tier t
// or higher (which floors o's tiers when it descends from it, A2 being
// transitive), over the free workers, with network from decided parents. They
// do not depend on the variant chosen at depth, so assign computes them once.
func (b *bnb) laterLBs(depth int, lam []float64) [][][]float64 {
	in := b.in
	nt := b.nTiers()
	cur := b.order[depth]
	buf := b.pieceBuf
	which := 0
	if lam != nil {
		which = 1
	}
	tab := b.tabBuf[which][depth]
	if tab == nil {
		// The table's shape is fixed: allocate it once per depth.
		tab = make([][][]float64, in.nOps)
		for _, o := range b.order[depth+1:] {
			tab[o] = make([][]float64, len(in.p.Operators[o].Variants))
			for v := range tab[o] {
				tab[o][v] = make([]float64, nt)
			}
		}
		b.tabBuf[which][depth] = tab
	}
	for _, o := range b.order[depth+1:] {
		base := 0
		if b.tierA2 {
			for y, isAnc := range b.anc[o] {
				if isAnc && b.decided[y] {
					base = max(base, b.maxTier[y])
				}
			}
		}
		for v := range tab[o] {
			row := tab[o][v]
			prev := -1
			for t := range row {
				f := base
				if b.tierA2 && b.anc[o][cur] {
					f = max(f, t)
				}
				if f == prev {
					row[t] = row[t-1]
					continue
				}
				row[t], prev = b.opLB(o, v, f, buf, lam), f
			}
			tab[o][v] = row
		}
	}
	return tab
}

// restFrom bounds the operators after depth given the variants decided so far
// (vars of order[:depth+1]) and floor t from the operator at depth: the
// cheapest sum of laterLBs over the variant combinations that can still meet
// the target; +Inf when none can be covered.
func (b *bnb) restFrom(tab [][][]float64, depth, t int) float64 {
	later := b.order[depth+1:]
	if len(later) == 0 {
		return 0
	}
	if b.combos == nil {
		total := 0.0
		for _, o := range later {
			m := math.Inf(1)
			for _, x := range tab[o] {
				m = min(m, x[t])
			}
			total += m
		}
		return total
	}
	best := math.Inf(1)
	for _, cb := range b.combos {
		if !b.prefixMatches(cb, depth) {
			continue
		}
		s := 0.0
		for _, o := range later {
			s += tab[o][cb[o]][t]
		}
		best = min(best, s)
	}
	return best
}

func (b *bnb) prefixMatches(cb []int, depth int) bool {
	for _, o := range b.order[:depth+1] {
		if cb[o] != b.vars[o] {
			return false
		}
	}
	return true
}

func (b *bnb) assign(depth int) {
	if !b.tick() {
		return
	}
	in := b.in
	if depth == len(b.order) {
		if b.combos == nil && !in.meetsAccuracy(in.sinkAccuracy(b.vars)) {
			return
		}
		if b.cost < b.best-1e-12 {
			b.best = b.cost
			b.bestSol = sol{vars: b.vars, workers: b.ws}.clone()
			b.found = true
			if b.firstOnly {
				b.stopped = true
			}
		}
		return
	}
	o := b.order[depth]
	nc := len(b.cls)
	if b.candArena[depth] == nil {
		nv := len(in.p.Operators[o].Variants)
		b.candArena[depth] = make([]cand, nv*nc)
		b.pieceArena[depth] = make([]piece, 0, nc)
	}
	arena := b.candArena[depth]
	opts := b.optsBuf[depth][:0]
	// The later operators' bounds cost most; most nodes are pruned by the
	// operator's own cover, so they are computed on first need.
	var tab, tabL [][][]float64
	for v := range in.p.Operators[o].Variants {
		b.vars[o] = v
		if b.combos != nil {
			ok := false
			for _, cb := range b.combos {
				if b.prefixMatches(cb, depth) {
					ok = true
					break
				}
			}
			if !ok {
				continue
			}
		}
		// Each variant's candidates get their own stretch of the arena:
		// opts keeps them while the search goes deeper.
		cs := b.candidatesInto(arena[v*nc:v*nc:(v+1)*nc], o, v, 0)
		ps := b.pieceArena[depth][:0]
		for _, c := range cs {
			ps = append(ps, piece{c.unit, c.cap, c.free, c.price, c.net})
		}
		own := b.cover(ps, in.ix.demand[o], b.best-b.cost)
		if math.IsInf(own, 1) || b.cost+own >= b.best-1e-12 {
			continue
		}
		if tab == nil {
			tab = b.laterLBs(depth, nil)
			if b.lam != nil {
				tabL = b.laterLBs(depth, b.lam)
			}
		}
		nt := b.nTiers()
		minTier := nt - 1
		for _, c := range cs {
			minTier = min(minTier, b.cls[c.class].tier)
		}
		if len(cs) == 0 {
			minTier = 0
		}
		rest, restL := b.restByTier(tab, depth), b.restByTier(tabL, depth)
		lb := own + rest[minTier]
		if b.lam != nil {
			for i, c := range cs {
				ps[i] = c.piece(b.lam)
			}
			rl := restL[minTier] - b.lamFree()
			lb = max(lb, b.cover(ps, in.ix.demand[o], b.best-b.cost-rl)+rl)
		}
		if math.IsInf(lb, 1) || b.cost+lb >= b.best-1e-12 {
			continue
		}
		opts = append(opts, vopt{v: v, rest: rest, restL: restL, cs: cs, lb: lb})
	}
	slices.SortStableFunc(opts, func(x, y vopt) int { return cmp.Compare(x.lb, y.lb) })
	b.optsBuf[depth] = opts
	for _, op := range opts {
		if b.stopped {
			return
		}
		if b.cost+op.lb >= b.best-1e-12 {
			continue
		}
		b.vars[o] = op.v
		b.chooseSet(depth, o, op.v, op.cs, op.rest, op.restL)
	}
}

// vopt is a variant of the operator being decided that survived its bound.
type vopt struct {
	v     int
	rest  []float64 // later operators' bound by the highest tier o will use
	restL []float64 // the same with the multipliers (nil without)
	cs    []cand
	lb    float64
}

// nTiers is how many tier floors the bounds distinguish.
func (b *bnb) nTiers() int {
	if b.tierA2 {
		return len(b.in.p.Tiers)
	}
	return 1
}

// restByTier is restFrom for every floor; nil for a nil table.
func (b *bnb) restByTier(tab [][][]float64, depth int) []float64 {
	if tab == nil {
		return nil
	}
	rest := make([]float64, b.nTiers())
	for t := range rest {
		rest[t] = b.restFrom(tab, depth, t)
	}
	return rest
}

// chooseSet enumerates count vectors over the candidate classes and the
// remainder class, then recurses to the next operator.
func (b *bnb) chooseSet(depth, o, v int, cs []cand, rest, restL []float64) {
	in := b.in
	T := in.ix.demand[o]
	lamFree := b.lamFree()
	if b.kBuf[depth] == nil {
		b.kBuf[depth] = make([]int, len(b.cls))
		b.recPs[depth] = make([]piece, 0, len(b.cls))
	}
	k := b.kBuf[depth][:len(cs)]
	clear(k)
	ps := b.recPs[depth]
	var rec func(i int, capSum, priceSum, maxCap float64, top int)
	rec = func(i int, capSum, priceSum, maxCap float64, top int) {
		if !b.tick() {
			return
		}
		if capSum-maxCap >= T-eps && capSum > 0 {
			return // some worker would carry nothing, now and in every extension
		}
		if b.dominatedSet(cs, k[:i], capSum, T) {
			return
		}
		// Bound: chosen prices + fractional cover with chosen at their network
		// cost and the undecided classes at their unit cost.
		ps = ps[:0]
		for j := 0; j < i; j++ {
			if k[j] > 0 {
				ps = append(ps, piece{cs[j].net, cs[j].cap, k[j], 0, cs[j].net})
			}
		}
		for j := i; j < len(cs); j++ {
			ps = append(ps, piece{cs[j].unit, cs[j].cap, cs[j].free, cs[j].price, cs[j].net})
		}
		r := rest[min(top, len(rest)-1)]
		lb := priceSum + b.cover(ps, T, b.best-b.cost-priceSum-r) + r
		if b.cost+lb >= b.best-1e-12 {
			return
		}
		if restL != nil {
			// The same with every worker still free priced by its multiplier:
			// workers o has chosen are no longer free.
			free := lamFree
			for j := 0; j < i; j++ {
				free -= b.lam[cs[j].class] * float64(k[j])
			}
			ps = ps[:0]
			for j := 0; j < i; j++ {
				if k[j] > 0 {
					ps = append(ps, piece{cs[j].net, cs[j].cap, k[j], 0, cs[j].net})
				}
			}
			for j := i; j < len(cs); j++ {
				ps = append(ps, cs[j].piece(b.lam))
			}
			rl := restL[min(top, len(restL)-1)] - free
			if b.cost+priceSum+b.cover(ps, T, b.best-b.cost-priceSum-rl)+rl >= b.best-1e-12 {
				return
			}
		}
		if i == len(cs) {
			if capSum < T-eps {
				return
			}
			b.leaf(depth, o, v, cs, k, capSum, priceSum, r)
			return
		}
		c := cs[i]
		// Most counts first, down to 0. Beyond covering T more members can
		// still be valid (a bigger remainder elsewhere carries less, which can
		// pay off downstream or under a bandwidth cap) as long as the set minus
		// its largest member stays short of T; the entry check prunes the rest.
		hi := min(c.free, int((T-capSum+max(maxCap, c.cap))/c.cap)+1)
		for n := hi; n >= 0; n-- {
			k[i] = n
			mc, tp := maxCap, top
			if n > 0 {
				mc = max(mc, c.cap)
				tp = max(tp, b.cls[c.class].tier)
			}
			rec(i+1, capSum+float64(n)*c.cap, priceSum+float64(n)*c.price, mc, tp)
			if b.stopped {
				break
			}
		}
		k[i] = 0
	}
	rec(0, 0, 0, 0, 0)
}

// dominatedSet reports whether every completion of the chosen counts k (for
// cs[:len(k)]) is dominated. Once the chosen workers cover T, a class not yet
// chosen can no longer hold the remainder (the set without it would cover T),
// so only chosen classes can; and one that can is dominated when some other
// chosen class it netDom-inates has a worker that the remainder's spare
// capacity could replace (see dominatedRemainder). Counts added later only
// grow the spare capacity, so the verdict holds for every extension.
func (b *bnb) dominatedSet(cs []cand, k []int, capSum, T float64) bool {
	if b.netDom == nil || capSum < T+eps {
		return false
	}
	for r := range k {
		if k[r] == 0 || capSum-cs[r].cap >= T-eps {
			continue
		}
		if !b.dominatedRemainder(cs, k, r, capSum, T) {
			return false
		}
	}
	return true
}

// dominatedRemainder reports whether the set with counts k and remainder
// class r is strictly worse than the same set less one worker of another
// chosen class j, its items moved onto the remainder worker: that needs the
// spare capacity (capSum - T) to hold a whole worker of j, j to cost
// something, and r to be no worse placed than j (netDom: same tier and
// location, so bandwidth use is unchanged, and no dearer links). The smaller
// set is in the search space too (every worker still needed), so pruning
// this one loses no optimum and no feasible plan.
func (b *bnb) dominatedRemainder(cs []cand, k []int, r int, capSum, T float64) bool {
	if b.netDom == nil {
		return false
	}
	row := b.netDom[cs[r].class]
	for j := range k {
		if j != r && k[j] > 0 && row[cs[j].class] && cs[j].price > eps && capSum-cs[j].cap >= T+eps {
			return true
		}
	}
	return false
}

// leaf tries each admissible remainder class for a chosen count vector.
func (b *bnb) leaf(depth, o, v int, cs []cand, k []int, capSum, priceSum, later float64) {
	in := b.in
	T := in.ix.demand[o]
	if T <= eps {
		b.apply(depth, o, v, cs, k, -1, 0, priceSum, later)
		return
	}
	sat := 0.0
	for j := range cs {
		sat += float64(k[j]) * cs[j].cap * cs[j].net
	}
	surplus := capSum - T
	for r := range cs {
		if k[r] == 0 || capSum-cs[r].cap >= T-eps || b.dominatedRemainder(cs, k, r, capSum, T) {
			continue
		}
		net := sat - surplus*cs[r].net
		b.apply(depth, o, v, cs, k, r, net, priceSum, later)
		if b.stopped {
			return
		}
	}
}

// apply commits the choice for o, recurses, and undoes it.
func (b *bnb) apply(depth, o, v int, cs []cand, k []int, r int, net, priceSum, later float64) {
	in := b.in
	T := in.ix.demand[o]
	// later bounds the operators after o (chooseSet's rest at the set's top
	// tier): the exact network of this remainder choice can prune here.
	if b.cost+priceSum+net+later >= b.best-1e-12 {
		return
	}
	ws, thr := b.wsBuf[depth][:0], b.thrBuf[depth][:0]
	left := T
	for j := range cs {
		n := k[j]
		if j == r {
			n--
		}
		c := cs[j].class
		for x := range n {
			ws = append(ws, b.cls[c].members[b.used[c]+x])
			thr = append(thr, cs[j].cap)
			left -= cs[j].cap
		}
	}
	if r >= 0 {
		c := cs[r].class
		ws = append(ws, b.cls[c].members[b.used[c]+k[r]-1])
		thr = append(thr, left)
	}
	// Bandwidth: add this operator's incoming traffic per tier pair.
	nt := len(in.p.Tiers)
	added, amounts := b.bwIdx[depth][:0], b.bwAmt[depth][:0]
	ok := true
	addBW := func(ta, tb int, mb float64) {
		i := ta*nt + tb
		b.bw[i] += mb
		added = append(added, i)
		amounts = append(amounts, mb)
		if cap := in.ix.tierBW[ta][tb]; cap > 0 && b.bw[i] > cap*(1+1e-9) {
			ok = false
		}
	}
	if in.hasBW {
		for kk, e := range in.ix.in[o] {
			if e.src >= 0 {
				kb := in.kb[o][kk][0][v]
				for i, w := range ws {
					ta, tb := in.ix.sourceTier[e.src], in.ix.workerTier[w]
					if ta != tb || in.p.Sources[e.src].Location != in.p.Workers[w].Location {
						addBW(ta, tb, thr[i]*kb/1024)
					}
				}
				continue
			}
			u := e.from
			tu := in.ix.demand[u]
			if tu <= 0 {
				continue
			}
			kb := in.kb[o][kk][b.vars[u]][v]
			for i, a := range b.ws[u] {
				for j, w := range ws {
					ta, tb := in.ix.workerTier[a], in.ix.workerTier[w]
					if ta != tb || in.p.Workers[a].Location != in.p.Workers[w].Location {
						addBW(ta, tb, b.thr[u][i]*thr[j]/tu*kb/1024)
					}
				}
			}
		}
	}
	if ok {
		for j := range cs {
			b.used[cs[j].class] += k[j]
		}
		b.ws[o], b.thr[o], b.decided[o] = ws, thr, true
		b.maxTier[o] = 0
		for _, w := range ws {
			b.maxTier[o] = max(b.maxTier[o], in.ix.workerTier[w])
		}
		saved := b.cost
		b.cost += priceSum + net
		b.assign(depth + 1)
		b.cost = saved
		b.ws[o], b.thr[o], b.decided[o] = nil, nil, false
		for j := range cs {
			b.used[cs[j].class] -= k[j]
		}
	}
	for i, x := range added {
		b.bw[x] -= amounts[i]
	}
	// Keep the grown buffers for the next apply at this depth (nothing
	// refers to them any more: a best plan found below was cloned).
	b.wsBuf[depth], b.thrBuf[depth] = ws, thr
	b.bwIdx[depth], b.bwAmt[depth] = added, amounts
}

// computeLambda sets the multipliers by subgradient steps (Polyak steps toward
// the incumbent's cost) on the root Lagrangian bound: every operator covers its
// demand fractionally on workers priced price + lam, minus lam over all
// workers. Operators competing for the same cheap workers is what the plain
// per-operator covers miss; the multipliers charge for that competition, and
// any lam >= 0 keeps the bound valid.
func (b *bnb) computeLambda() {
	in := b.in
	vars := b.rootVars()
	if vars == nil {
		return
	}
	nc := len(b.cls)
	lam := make([]float64, nc)
	use := make([]float64, nc)
	var bestLam []float64
	bestLB, lb0 := math.Inf(-1), 0.0
	mu, stall := 1.0, 0 // Held-Karp: halve the step after a few idle steps
	for it := range 60 {
		total := 0.0
		clear(use)
		for _, o := range b.order {
			cs := b.candidates(o, vars[o], 0)
			per := func(c cand) float64 { return (c.price+lam[c.class])/c.cap + c.net }
			sort.Slice(cs, func(i, j int) bool { return per(cs[i]) < per(cs[j]) })
			need := in.ix.demand[o]
			for _, c := range cs {
				if need <= eps {
					break
				}
				t := min(float64(c.free)*c.cap, need)
				total += t * per(c)
				use[c.class] += t / c.cap
				need -= t
			}
			if need > eps {
				return
			}
		}
		norm := 0.0
		for c := range lam {
			n := float64(len(b.cls[c].members))
			total -= lam[c] * n
			g := use[c] - n
			if lam[c] <= 0 && g < 0 {
				g = 0
			}
			use[c] = g
			norm += g * g
		}
		if it == 0 {
			lb0 = total
		}
		if total > bestLB+1e-12 {
			bestLB, bestLam, stall = total, append([]float64(nil), lam...), 0
		} else if stall++; stall >= 4 {
			mu, stall = mu/2, 0
		}
		if norm < 1e-12 {
			break
		}
		target := b.best
		if math.IsInf(target, 1) || target <= total {
			target = total*1.05 + 1e-6
		}
		step := mu * (target - total) / norm
		for c := range lam {
			lam[c] = max(0, lam[c]+step*use[c])
		}
	}
	if bestLB > lb0+1e-9 {
		b.lam = bestLam
	}
}

// rootVars is the variant combination with the lowest root bound.
func (b *bnb) rootVars() []int {
	in := b.in
	buf := make([]piece, 0, len(b.cls))
	lb := make([][]float64, in.nOps)
	for o := range in.nOps {
		lb[o] = make([]float64, len(in.p.Operators[o].Variants))
		for v := range lb[o] {
			lb[o][v] = b.opLB(o, v, 0, buf, nil)
		}
	}
	var best []int
	bestLB := math.Inf(1)
	consider := func(vars []int) {
		t := 0.0
		for o, v := range vars {
			t += lb[o][v]
		}
		if t < bestLB {
			bestLB, best = t, append([]int(nil), vars...)
		}
	}
	if b.combos != nil {
		for _, cb := range b.combos {
			consider(cb)
		}
		return best
	}
	vars := make([]int, in.nOps)
	for o := range vars {
		for v := range lb[o] {
			if lb[o][v] < lb[o][vars[o]] {
				vars[o] = v
			}
		}
	}
	consider(vars)
	return best
}

// canRun reports whether worker a can run some variant of operator u.
func (b *bnb) canRun(u, a int) bool {
	for _, row := range b.in.caps[u] {
		if row[a] > 0 {
			return true
		}
	}
	return false
}
