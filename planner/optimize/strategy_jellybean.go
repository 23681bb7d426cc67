package optimize

import (
	"context"
	"math"
	"math/rand"
	"sort"
	"time"
)

// JellyBean is the paper's optimizer (4.2-4.3): beam-search model selection
// keeping the B_MS cheapest (by proxy cost) configurations that can meet the
// accuracy target, then Algorithm 1 for each: operators in topological order,
// greedy worker picks over expanding tier pools, a beam of B_WA assignments,
// over several topological orders; the cheapest plan wins.
//
// Rules picks whose reading of the paper runs. The zero value,
// RulesPrototype, is the published prototype's optimizer rule for rule
// (jellybean_prototype.go), searching under PrototypeModel{Strict: true}
// (unless Options.CostModel is a model of the caller's own); the plan is then
// priced under Options.CostModel like every other strategy's, which on the
// prototype's own inputs is the same number. RulesTierflow is tierflow's own
// reading (below), the auto strategy's incumbent: Eq. 2's unit cost over the
// items a worker will actually carry, distinct beam entries, random
// topological orders. planner/README.md tabulates the differences.
type JellyBean struct {
	Rules Rules
}

// Rules says whose rules a strategy follows where the paper leaves room.
type Rules int

const (
	// RulesPrototype: the published prototype's (github.com/libertyeagle/JellyBean).
	RulesPrototype Rules = iota
	// RulesTierflow: tierflow's own (see planner/README.md).
	RulesTierflow
)

func (JellyBean) Name() string { return "jellybean" }
func (JellyBean) Doc() string {
	return "JellyBean (paper 4.2-4.3, as its published prototype runs it): beam-search model selection + Algorithm 1"
}

func (j JellyBean) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	start := time.Now()
	search := o.CostModel
	if _, isProto := search.(PrototypeModel); search == nil || isProto {
		search = PrototypeModel{Strict: true}
	}
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	var s *sol
	if j.Rules == RulesTierflow {
		s = in.jellybean(o)
	} else {
		sin, err := newInstance(p, search)
		if err != nil {
			return nil, err
		}
		s = sin.protoJellyBean(o)
	}
	var pl *Plan
	if s != nil {
		pl = in.evaluate(*s)
	}
	return finish(ctx, in, pl, "jellybean", start, o)
}

// jellybean returns the best plan of tierflow's reading of the algorithm
// (RulesTierflow), nil if none.
func (in *instance) jellybean(o Options) *sol {
	var best *sol
	bestCost := math.Inf(1)
	orders := in.topoOrders(o.TopoOrders, o.Seed)
	for _, vars := range in.selectModels(o.BeamModelSelection) {
		for _, order := range orders {
			s, c := in.algorithm1(vars, order, o.BeamWorkerAssignment)
			if s != nil && c < bestCost-1e-12 {
				best, bestCost = s, c
			}
		}
	}
	return best
}

// selectModels is the model-selection beam search of JellyBean 4.2. Each
// candidate carries its partial choice and the accuracy each undecided
// operator must reach; the final check uses the plan accuracy (end-to-end
// table when present), as the prototype does.
func (in *instance) selectModels(beam int) [][]int {
	type cand struct {
		vars []int
		req  []float64
		cost float64
	}
	n := in.nOps
	init := cand{vars: make([]int, n), req: make([]float64, n)}
	for i := range init.vars {
		init.vars[i] = -1
		init.req[i] = math.Inf(-1)
	}
	init.req[in.ix.sink] = in.target
	cands := []cand{init}
	for i := len(in.ix.topo) - 1; i >= 0; i-- {
		v := in.ix.topo[i]
		op := &in.p.Operators[v]
		var next []cand
		for _, c := range cands {
			r := c.req[v]
			for s := range op.Variants {
				va := &op.Variants[s]
				ext := func(set func(req []float64)) {
					nc := cand{vars: append([]int(nil), c.vars...), req: append([]float64(nil), c.req...), cost: c.cost + va.ProxyCost}
					nc.vars[v] = s
					set(nc.req)
					next = append(next, nc)
				}
				switch {
				case len(in.ix.accIn[v]) > 0 && len(va.Profile) > 0:
					for _, row := range va.Profile {
						if row.Output < r-eps {
							continue
						}
						ext(func(req []float64) {
							for k, u := range in.ix.accIn[v] {
								req[u] = max(req[u], row.Inputs[k])
							}
						})
					}
				case len(in.ix.accIn[v]) == 0 && (va.Accuracy != nil || hasLeafRow(va)):
					vars := make([]int, n)
					vars[v] = s
					if in.opAccuracy(v, vars, make([]float64, n)) >= r-eps {
						ext(func([]float64) {})
					}
				case va.Accuracy != nil:
					if *va.Accuracy >= r-eps {
						ext(func([]float64) {})
					}
				default:
					// No accuracy data: the requirement passes to the inputs.
					ext(func(req []float64) {
						for _, e := range in.ix.in[v] {
							if e.from >= 0 {
								req[e.from] = max(req[e.from], r)
							}
						}
					})
				}
			}
		}
		sort.SliceStable(next, func(a, b int) bool { return next[a].cost < next[b].cost })
		// Keep the B_MS cheapest distinct candidates.
		cands = cands[:0]
		seen := map[string]bool{}
		for _, c := range next {
			k := varsKey(c.vars) + "/" + floatsKey(c.req)
			if seen[k] {
				continue
			}
			seen[k] = true
			cands = append(cands, c)
			if len(cands) == beam {
				break
			}
		}
	}
	var out [][]int
	seen := map[string]bool{}
	for _, c := range cands {
		k := varsKey(c.vars)
		if seen[k] || !in.meetsAccuracy(in.sinkAccuracy(c.vars)) {
			continue
		}
		seen[k] = true
		out = append(out, c.vars)
	}
	if len(out) == 0 && in.accTable != nil && in.numCombos(maxTableCombos) <= maxTableCombos {
		return in.selectByTable(beam)
	}
	return out
}

// maxTableCombos bounds the enumeration of selectByTable.
const maxTableCombos = 100000

// selectByTable is model selection by measured end-to-end accuracies:
// the table is the plan's accuracy, so the B_MS cheapest combinations by proxy
// cost whose plan accuracy meets the target are exactly what the beam search
// would keep were the per-operator profiles consistent with it; and operators
// without profiles (tracking, clustering) need not block the search.
func (in *instance) selectByTable(beam int) [][]int {
	type cand struct {
		vars []int
		cost float64
	}
	var cs []cand
	in.combos(func(vars []int) bool {
		if in.meetsAccuracy(in.sinkAccuracy(vars)) {
			c := 0.0
			for o, v := range vars {
				c += in.p.Operators[o].Variants[v].ProxyCost
			}
			cs = append(cs, cand{append([]int(nil), vars...), c})
		}
		return true
	})
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].cost < cs[b].cost })
	var out [][]int
	for _, c := range cs {
		if len(out) == beam {
			break
		}
		out = append(out, c.vars)
	}
	return out
}

func hasLeafRow(v *Variant) bool {
	for _, r := range v.Profile {
		if len(r.Inputs) == 0 {
			return true
		}
	}
	return false
}

// algorithm1 is JellyBean's worker assignment for one model selection and one
// topological order; nil when no assignment covers every demand.
func (in *instance) algorithm1(vars, order []int, beam int) (*sol, float64) {
	nt := len(in.p.Tiers)
	states := []*partial{newPartial(in)}
	for _, o := range order {
		v := vars[o]
		var next []*partial
		seen := map[string]bool{}
		for _, st := range states {
			for tier := range nt {
				ws := in.greedyFill(o, v, vars, st,
					func(w int) bool { return in.ix.workerTier[w] <= tier },
					func(w int, net, left float64) float64 { return in.price[w]/min(in.caps[o][v][w], left) + net })
				if ws == nil {
					continue
				}
				ns := st.clone()
				if !in.place(o, v, ws, vars, ns) {
					continue
				}
				if k := ns.key(); !seen[k] {
					seen[k] = true
					next = append(next, ns)
				}
			}
		}
		if len(next) == 0 {
			return nil, math.Inf(1)
		}
		sort.SliceStable(next, func(a, b int) bool { return next[a].cost < next[b].cost })
		if len(next) > beam {
			next = next[:beam]
		}
		states = next
	}
	s := states[0].sol(vars)
	return &s, states[0].cost
}

// topoOrders returns the canonical topological order and up to k-1 distinct
// random ones (Kahn's algorithm with a seeded random pick).
func (in *instance) topoOrders(k int, seed int64) [][]int {
	out := [][]int{in.ix.topo}
	seen := map[string]bool{varsKey(in.ix.topo): true}
	rng := rand.New(rand.NewSource(seed))
	for try := 0; len(out) < k && try < 4*k; try++ {
		indeg := make([]int, in.nOps)
		for v := range in.nOps {
			for _, e := range in.ix.in[v] {
				if e.from >= 0 {
					indeg[v]++
				}
			}
		}
		var ready, order []int
		for v, d := range indeg {
			if d == 0 {
				ready = append(ready, v)
			}
		}
		for len(ready) > 0 {
			i := rng.Intn(len(ready))
			v := ready[i]
			ready = append(ready[:i], ready[i+1:]...)
			order = append(order, v)
			for _, w := range in.ix.out[v] {
				indeg[w]--
				if indeg[w] == 0 {
					ready = append(ready, w)
				}
			}
		}
		if k := varsKey(order); !seen[k] {
			seen[k] = true
			out = append(out, order)
		}
	}
	return out
}
