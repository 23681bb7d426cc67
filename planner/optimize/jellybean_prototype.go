package optimize

import (
	"math"
	"sort"
)

// This file is Algorithm 1 and the model-selection beam search as the published
// JellyBean prototype (github.com/libertyeagle/JellyBean, optimizer/) runs them,
// rule for rule, so that `--strategy jellybean` prints the prototype's plans.
// Its rules differ from tierflow's own reading of the paper (strategy_jellybean.go,
// the auto strategy's incumbent) in ways that change plans; planner/README.md
// lists them in one table. Everything below is written from reading the
// prototype's code, not copied from it.

// protoCand is a partial model selection of the prototype's beam search: the
// variants chosen so far (-1: not yet) in the order they were chosen, and the
// accuracy each not-yet-chosen operator must reach, keyed in the order the
// requirements appeared (the prototype sorts ties on them in that order).
type protoCand struct {
	vars  []int
	order []int // operators in the order their variants were chosen
	req   []float64
	has   []bool
	keys  []int // operators holding a requirement, in order of appearance
}

func (c *protoCand) clone() *protoCand {
	return &protoCand{vars: append([]int(nil), c.vars...), order: append([]int(nil), c.order...),
		req: append([]float64(nil), c.req...), has: append([]bool(nil), c.has...), keys: append([]int(nil), c.keys...)}
}

func (c *protoCand) setReq(o int, a float64) {
	if c.has[o] {
		c.req[o] = max(c.req[o], a)
		return
	}
	c.has[o], c.req[o] = true, a
	c.keys = append(c.keys, o)
}

func (c *protoCand) dropReq(o int) {
	if !c.has[o] {
		return
	}
	c.has[o] = false
	for i, k := range c.keys {
		if k == o {
			c.keys = append(c.keys[:i], c.keys[i+1:]...)
			break
		}
	}
}

// proxyCost sums proxy costs in the order the variants were chosen, as the
// prototype does (the order decides float ties).
func (in *instance) proxyCost(c *protoCand) float64 {
	s := 0.0
	for _, o := range c.order {
		s += in.p.Operators[o].Variants[c.vars[o]].ProxyCost
	}
	return s
}

// hasAccuracyData: the operator takes part in model selection (the prototype's
// accuracy profiles list only ML operators; the others run variant "default").
func hasAccuracyData(op *Operator) bool {
	for i := range op.Variants {
		if op.Variants[i].Accuracy != nil || len(op.Variants[i].Profile) > 0 {
			return true
		}
	}
	return false
}

// maxOutput is the best output accuracy a variant's profile reaches (the
// prototype's feasibility test for a variant); the standalone accuracy when it
// has no profile rows. ok is false without any accuracy data.
func maxOutput(va *Variant) (float64, bool) {
	if len(va.Profile) == 0 {
		if va.Accuracy == nil {
			return 0, false
		}
		return *va.Accuracy, true
	}
	m := math.Inf(-1)
	for _, r := range va.Profile {
		m = max(m, r.Output)
	}
	return m, true
}

// protoAssignOrder is the prototype's order of model selection: the sink, then
// the accuracy graph (operators -> their accuracy inputs) in reverse of Python's
// graphlib static order. graphlib emits ready nodes in insertion order; the
// prototype inserts each operator and then its inputs from a Python set, whose
// order follows the string hash. For the reference workflow under
// PYTHONHASHSEED=0 that set iterates the inputs in reverse of their listed
// order (with CPython's siphash13 of 3.11+ and siphash24 before alike), which
// is what is used here for every operator. It matters: with the other order,
// one case of the 32-case sweep (26 rps, 54, P90) costs 6.71, not 6.51.
// Operators with accuracy data that the graph does not reach (the prototype
// would fail on them) come last, in problem order.
func (in *instance) protoAssignOrder() []int {
	n := in.nOps
	var nodes []int
	seen := make([]bool, n)
	add := func(o int) {
		if !seen[o] {
			seen[o] = true
			nodes = append(nodes, o)
		}
	}
	succ := make([][]int, n)
	npred := make([]int, n)
	for v := range n {
		ins := in.ix.accIn[v]
		if len(ins) == 0 {
			continue
		}
		add(v)
		for k := len(ins) - 1; k >= 0; k-- {
			u := ins[k]
			add(u)
			succ[u] = append(succ[u], v)
			npred[v]++
		}
	}
	var ready, static []int
	for _, o := range nodes {
		if npred[o] == 0 {
			ready = append(ready, o)
		}
	}
	for len(ready) > 0 {
		group := ready
		ready = nil
		static = append(static, group...)
		for _, u := range group {
			for _, v := range succ[u] {
				if npred[v]--; npred[v] == 0 {
					ready = append(ready, v)
				}
			}
		}
	}
	sink := in.ix.sink
	order := []int{sink}
	for i := len(static) - 1; i >= 0; i-- {
		if static[i] != sink {
			order = append(order, static[i])
		}
	}
	for o := range n {
		if !seen[o] && o != sink && hasAccuracyData(&in.p.Operators[o]) {
			order = append(order, o)
		}
	}
	return order
}

// protoSelectModels is the prototype's beam search for model selection
// (JellyBean 4.2): operators in protoAssignOrder; a variant is feasible when
// its profile can reach the operator's required accuracy; each profile row
// reaching it (rows sorted by output, then inputs) becomes a candidate that
// raises its inputs' requirements; candidates are sorted by total proxy cost,
// then by their requirements, and the first beam kept. Duplicates are kept, as
// the prototype keeps them (they take beam slots). It returns nil when some
// candidate's requirement no variant can meet: the prototype then gives up on
// the whole query. Operators without accuracy data run their first variant.
func (in *instance) protoSelectModels(beam int) [][]int {
	n := in.nOps
	init := &protoCand{vars: make([]int, n), req: make([]float64, n), has: make([]bool, n)}
	for o := range init.vars {
		init.vars[o] = -1
	}
	init.setReq(in.ix.sink, in.target)
	cands := []*protoCand{init}
	for _, v := range in.protoAssignOrder() {
		op := &in.p.Operators[v]
		var next []*protoCand
		for _, c := range cands {
			r := math.Inf(-1)
			if c.has[v] {
				r = c.req[v]
			}
			var feasible []int
			for s := range op.Variants {
				m, ok := maxOutput(&op.Variants[s])
				if !ok {
					// No accuracy data (tierflow only: the prototype needs
					// a profile): the requirement passes to the inputs.
					feasible = append(feasible, s)
					continue
				}
				if m >= r {
					feasible = append(feasible, s)
				}
			}
			if len(feasible) == 0 {
				return nil
			}
			for _, s := range feasible {
				va := &op.Variants[s]
				if len(in.ix.accIn[v]) == 0 || len(va.Profile) == 0 {
					nc := c.clone()
					nc.vars[v] = s
					nc.order = append(nc.order, v)
					if _, ok := maxOutput(va); !ok {
						for _, u := range in.ix.accIn[v] {
							nc.setReq(u, r)
						}
					}
					nc.dropReq(v)
					next = append(next, nc)
					continue
				}
				rows := make([]AccuracyRow, 0, len(va.Profile))
				for _, row := range va.Profile {
					if row.Output >= r {
						rows = append(rows, row)
					}
				}
				sort.SliceStable(rows, func(a, b int) bool {
					if rows[a].Output != rows[b].Output {
						return rows[a].Output < rows[b].Output
					}
					return lessFloats(rows[a].Inputs, rows[b].Inputs)
				})
				for _, row := range rows {
					nc := c.clone()
					for k, u := range in.ix.accIn[v] {
						nc.setReq(u, row.Inputs[k])
					}
					nc.vars[v] = s
					nc.order = append(nc.order, v)
					nc.dropReq(v)
					next = append(next, nc)
				}
			}
		}
		if len(next) == 0 {
			return nil
		}
		keys := next[0].keys
		cost := make(map[*protoCand]float64, len(next))
		for _, c := range next {
			cost[c] = in.proxyCost(c)
		}
		sort.SliceStable(next, func(a, b int) bool {
			ca, cb := cost[next[a]], cost[next[b]]
			if ca != cb {
				return ca < cb
			}
			for _, k := range keys {
				if next[a].req[k] != next[b].req[k] {
					return next[a].req[k] < next[b].req[k]
				}
			}
			return false
		})
		if len(next) > beam {
			next = next[:beam]
		}
		cands = next
	}
	out := make([][]int, 0, len(cands))
	for _, c := range cands {
		vars := append([]int(nil), c.vars...)
		for o, s := range vars {
			if s < 0 {
				vars[o] = 0
			}
		}
		out = append(out, vars)
	}
	return out
}

func lessFloats(a, b []float64) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// protoState is one assignment of the prototype's worker-assignment beam.
type protoState struct {
	cost float64 // compute + network as the search prices it
	ws   [][]int
	thr  [][]float64
	tier []int // highest tier of each placed operator's workers
	used []bool
}

func (s *protoState) extend(o int, ws []int, thr []float64, tier int, cost float64) *protoState {
	n := &protoState{cost: s.cost + cost, ws: append([][]int(nil), s.ws...), thr: append([][]float64(nil), s.thr...),
		tier: append([]int(nil), s.tier...), used: append([]bool(nil), s.used...)}
	n.ws[o], n.thr[o], n.tier[o] = ws, thr, tier
	for _, w := range ws {
		n.used[w] = true
	}
	return n
}

// protoEntry is a worker in the greedy's ranked list.
type protoEntry struct {
	w      int
	k1, k2 float64
}

// protoComm is the network cost per hour the prototype's greedy charges worker
// x for operator o receiving `items` items/s from its sources, plus, from each
// placed parent worker a, scale(a) of that worker's full outgoing traffic.
func (in *instance) protoComm(o, v int, vars []int, s *protoState, x int, items float64, parentShare float64) float64 {
	T := in.ix.demand[o]
	c := 0.0
	for k, e := range in.ix.in[o] {
		if e.src >= 0 {
			c += in.slink[e.src*in.nW+x] * (items * in.kb[o][k][0][v])
			continue
		}
		u := e.from
		bw := T * in.kb[o][k][vars[u]][v]
		for i, a := range s.ws[u] {
			tx := s.thr[u][i] * bw / in.ix.demand[u]
			c += in.link[a*in.nW+x] * (tx * parentShare)
		}
	}
	return c
}

// protoGreedy places operator o (variant v) on the free workers of tiers lo..hi
// as the prototype's greedy does. Ranking: if a worker of the lowest tier in the
// pool can carry the whole demand alone, only such workers, by price plus the
// network cost of the whole demand (then by capacity); otherwise every worker by
// (price + network cost at its full capacity) / capacity (then by that sum).
// Workers are taken in that order, each up to the demand left; after each, if
// some remaining worker of the lowest remaining tier can carry what is left,
// only those are kept, re-ranked by price plus the network cost of what is left
// from sources and of the parents' full traffic (the prototype's formula).
func (in *instance) protoGreedy(o, v int, vars []int, s *protoState, lo, hi int) ([]int, []float64, bool) {
	T := in.ix.demand[o]
	caps := in.caps[o][v]
	tierOf := in.ix.workerTier
	var avail []int
	low := math.MaxInt
	for w := range in.nW {
		if t := tierOf[w]; t >= lo && t <= hi && !s.used[w] && caps[w] > 0 {
			avail = append(avail, w)
			low = min(low, t)
		}
	}
	var list []protoEntry
	var sat []int
	for _, w := range avail {
		if tierOf[w] == low && caps[w] >= T {
			sat = append(sat, w)
		}
	}
	byCostThenCap := func(list []protoEntry) {
		sort.SliceStable(list, func(a, b int) bool {
			if list[a].k1 != list[b].k1 {
				return list[a].k1 < list[b].k1
			}
			return list[a].k2 < list[b].k2
		})
	}
	if len(sat) > 0 {
		for _, w := range sat {
			list = append(list, protoEntry{w, in.price[w] + in.protoComm(o, v, vars, s, w, T, 1), caps[w]})
		}
	} else {
		for _, w := range avail {
			c := in.price[w] + in.protoComm(o, v, vars, s, w, caps[w], caps[w]/T)
			list = append(list, protoEntry{w, c / caps[w], c})
		}
	}
	byCostThenCap(list)
	var ws []int
	var thr []float64
	got := 0.0
	for got < T {
		if len(list) == 0 {
			break
		}
		w := list[0].w
		list = list[1:]
		a := caps[w]
		if got+caps[w] > T {
			a = T - got
		}
		ws = append(ws, w)
		thr = append(thr, a)
		got += a
		if got < T {
			low := 0
			if len(list) > 0 {
				low = math.MaxInt
				for _, e := range list {
					low = min(low, tierOf[e.w])
				}
			}
			var keep []protoEntry
			for _, e := range list {
				if tierOf[e.w] == low && caps[e.w] > T-got {
					keep = append(keep, protoEntry{e.w, in.price[e.w] + in.protoComm(o, v, vars, s, e.w, T-got, 1), caps[e.w]})
				}
			}
			if len(keep) > 0 {
				byCostThenCap(keep)
				list = keep
			}
		}
	}
	return ws, thr, got >= T
}

// protoPlaceCost is the compute + network cost of a placement as the
// prototype's search adds it to a beam state.
func (in *instance) protoPlaceCost(o, v int, vars []int, s *protoState, ws []int, thr []float64) float64 {
	T := in.ix.demand[o]
	compute := 0.0
	for _, w := range ws {
		compute += in.price[w]
	}
	net := 0.0
	for k, e := range in.ix.in[o] {
		if e.src >= 0 {
			kb := in.kb[o][k][0][v]
			for j, x := range ws {
				net += in.slink[e.src*in.nW+x] * (thr[j] * (T * kb) / T)
			}
			continue
		}
		u := e.from
		bw := T * in.kb[o][k][vars[u]][v]
		for i, a := range s.ws[u] {
			tx := s.thr[u][i] * bw / in.ix.demand[u]
			for j, x := range ws {
				rx := thr[j] * bw / T
				net += in.link[a*in.nW+x] * (tx * (rx / bw))
			}
		}
	}
	return compute + net
}

// protoAssign is the prototype's worker assignment ("multiple-tiers" with the
// greedy tier allocation) for one variant choice: for each topological order,
// operators in that order; each beam state extends, for every tier i from the
// highest tier of the operator's inputs up, by the greedy over the free workers
// of the tiers in between; states are sorted by cost and the first beam kept,
// duplicates included. The best beam states of all orders are merged, sorted,
// and the first beam returned (nil when no order places every operator).
func (in *instance) protoAssign(vars []int, orders [][]int, beam int) []*protoState {
	nt := len(in.p.Tiers)
	var best []*protoState
	for _, order := range orders {
		init := &protoState{ws: make([][]int, in.nOps), thr: make([][]float64, in.nOps), tier: make([]int, in.nOps), used: make([]bool, in.nW)}
		states := []*protoState{init}
		for _, o := range order {
			v := vars[o]
			var next []*protoState
			for _, s := range states {
				h := 0
				for _, e := range in.ix.in[o] {
					if e.src >= 0 {
						h = max(h, in.ix.sourceTier[e.src])
					} else {
						h = max(h, s.tier[e.from])
					}
				}
				for i := h; i < nt; i++ {
					ws, thr, ok := in.protoGreedy(o, v, vars, s, h, i)
					if !ok {
						continue
					}
					top := 0
					for _, w := range ws {
						top = max(top, in.ix.workerTier[w])
					}
					next = append(next, s.extend(o, ws, thr, top, in.protoPlaceCost(o, v, vars, s, ws, thr)))
				}
			}
			sort.SliceStable(next, func(a, b int) bool { return next[a].cost < next[b].cost })
			if len(next) > beam {
				next = next[:beam]
			}
			states = next
		}
		best = append(best, states...)
		sort.SliceStable(best, func(a, b int) bool { return best[a].cost < best[b].cost })
		if len(best) > beam {
			best = best[:beam]
		}
	}
	return best
}

// allTopoOrders lists up to k distinct topological orders of the operators,
// depth first, ready operators in index order. (The prototype takes the first
// k of networkx's enumeration, sources included; with at most k orders, as on
// the reference workflow, both take them all.)
func (in *instance) allTopoOrders(k int) [][]int {
	indeg := make([]int, in.nOps)
	for v := range in.nOps {
		for _, e := range in.ix.in[v] {
			if e.from >= 0 {
				indeg[v]++
			}
		}
	}
	var out [][]int
	order := make([]int, 0, in.nOps)
	done := make([]bool, in.nOps)
	var rec func()
	rec = func() {
		if len(out) >= k {
			return
		}
		if len(order) == in.nOps {
			out = append(out, append([]int(nil), order...))
			return
		}
		for v := range in.nOps {
			if done[v] || indeg[v] != 0 {
				continue
			}
			done[v] = true
			order = append(order, v)
			for _, w := range in.ix.out[v] {
				indeg[w]--
			}
			rec()
			for _, w := range in.ix.out[v] {
				indeg[w]++
			}
			order = order[:len(order)-1]
			done[v] = false
		}
	}
	rec()
	return out
}

// protoJellyBean is the prototype's optimizer end to end: model selection, then
// worker assignment for every selected combination, and the plan of least total
// cost (Evaluate's: network only up a tier, as the prototype's final costing);
// on a tie within numpy's
// allclose, the more accurate combination. Combinations whose plan accuracy
// misses the target are skipped (tierflow's rule; the prototype would print
// such a plan). nil when nothing is placed.
func (in *instance) protoJellyBean(o Options) *sol {
	cands := in.protoSelectModels(o.BeamModelSelection)
	if cands == nil && in.accTable != nil && in.numCombos(maxTableCombos) <= maxTableCombos {
		cands = in.selectByTable(o.BeamModelSelection)
	}
	orders := in.allTopoOrders(o.TopoOrders)
	var best *sol
	bestCost, bestAcc := math.Inf(1), math.Inf(-1)
	for _, vars := range cands {
		acc := in.sinkAccuracy(vars)
		if !in.meetsAccuracy(acc) {
			continue
		}
		for _, st := range in.protoAssign(vars, orders, o.BeamWorkerAssignment) {
			s := st.sol(vars)
			c := in.evaluate(s).TotalCost
			tie := !math.IsInf(bestCost, 1) && math.Abs(c-bestCost) <= 1e-8+1e-5*math.Abs(bestCost)
			if c < bestCost || (tie && acc > bestAcc) {
				best, bestCost, bestAcc = &s, c, acc
			}
		}
	}
	return best
}

func (s *protoState) sol(vars []int) sol {
	out := sol{vars: append([]int(nil), vars...), workers: make([][]int, len(s.ws))}
	for o, ws := range s.ws {
		out.workers[o] = append([]int(nil), ws...)
	}
	return out
}
