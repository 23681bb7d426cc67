package optimize

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Error kinds; wrapped with %w.
var (
	// ErrInvalidProblem: the Problem is malformed (unknown names, cycles, ...).
	ErrInvalidProblem = errors.New("invalid problem")
	// ErrInvalidAssignment: an Assignment names unknown operators, variants or
	// workers, or uses a worker twice.
	ErrInvalidAssignment = errors.New("invalid assignment")
	// ErrUnknownStrategy: no strategy of that name in the registry.
	ErrUnknownStrategy = errors.New("unknown strategy")
	// ErrBudgetStrategy: a BUDGET objective asked of a strategy that only
	// minimises cost.
	ErrBudgetStrategy = errors.New("strategy cannot honour a budget")
)

// inEdge is an edge into an operator, resolved to indices.
type inEdge struct {
	src   int // source index, or -1
	from  int // operator index, or -1
	ratio float64
	edge  *Edge
}

// index is a validated Problem resolved to indices, with demands computed.
type index struct {
	p          *Problem
	ops        map[string]int
	srcs       map[string]int
	workers    map[string]int
	tiers      map[string]int
	workerTier []int
	sourceTier []int
	tcoeff     []float64
	tierMult   [][]float64
	tierBW     [][]float64
	in         [][]inEdge // per operator
	out        [][]int    // per operator: operators it feeds
	topo       []int      // operators in a canonical topological order
	topoPos    []int
	sink       int
	rate       []float64 // per source, after the throughput target's scaling
	demand     []float64 // T_v per operator
	accIn      [][]int   // per operator: AccuracyInputs resolved
}

func problemErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidProblem}, args...)...)
}

// indexProblem validates p and reports every problem found at once.
func indexProblem(p *Problem) (*index, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, problemErr(format, args...)) }
	ix := &index{p: p, ops: map[string]int{}, srcs: map[string]int{}, workers: map[string]int{}, tiers: map[string]int{}}
	if len(p.Tiers) == 0 {
		bad("no tiers")
	}
	for i, t := range p.Tiers {
		if _, dup := ix.tiers[t.Name]; dup {
			bad("tier %q defined twice", t.Name)
		}
		if t.Locations < 0 {
			bad("tier %q: negative locations %d", t.Name, t.Locations)
		}
		ix.tiers[t.Name] = i
	}
	ix.tcoeff = make([]float64, len(p.Tiers))
	for i := range p.Tiers {
		ix.tcoeff[i] = TCoeff(p, i)
	}
	nt := len(p.Tiers)
	ix.tierMult = make([][]float64, nt)
	ix.tierBW = make([][]float64, nt)
	for i := range nt {
		ix.tierMult[i] = make([]float64, nt)
		ix.tierBW[i] = make([]float64, nt)
	}
	for _, l := range p.TierLinks {
		a, okA := ix.tiers[l.From]
		b, okB := ix.tiers[l.To]
		if !okA || !okB {
			bad("tier link %s->%s: unknown tier", l.From, l.To)
			continue
		}
		if l.Multiplier < 0 || l.BandwidthMBps < 0 {
			bad("tier link %s->%s: negative multiplier or bandwidth", l.From, l.To)
		}
		ix.tierMult[a][b] = l.Multiplier
		ix.tierBW[a][b] = l.BandwidthMBps
	}
	names := map[string]string{}
	claim := func(kind, name string) {
		if name == "" {
			bad("%s with an empty name", kind)
			return
		}
		if k, dup := names[name]; dup {
			bad("name %q used by a %s and a %s", name, k, kind)
		}
		names[name] = kind
	}
	for i, s := range p.Sources {
		claim("source", s.Name)
		ix.srcs[s.Name] = i
		t, ok := ix.tiers[s.Tier]
		if !ok {
			bad("source %q: unknown tier %q", s.Name, s.Tier)
		}
		ix.sourceTier = append(ix.sourceTier, t)
		if s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) {
			bad("source %q: rate %v", s.Name, s.Rate)
		}
	}
	for i, w := range p.Workers {
		if _, dup := ix.workers[w.Name]; dup || w.Name == "" {
			bad("worker %q defined twice or unnamed", w.Name)
		}
		ix.workers[w.Name] = i
		t, ok := ix.tiers[w.Tier]
		if !ok {
			bad("worker %q: unknown tier %q", w.Name, w.Tier)
		}
		ix.workerTier = append(ix.workerTier, t)
		if w.Price < 0 || math.IsNaN(w.Price) {
			bad("worker %q: price %v", w.Name, w.Price)
		}
	}
	for i, op := range p.Operators {
		claim("operator", op.Name)
		ix.ops[op.Name] = i
		if len(op.Variants) == 0 {
			bad("operator %q has no variants", op.Name)
		}
		seen := map[string]bool{}
		for _, v := range op.Variants {
			if seen[v.Name] {
				bad("operator %q: variant %q defined twice", op.Name, v.Name)
			}
			seen[v.Name] = true
			for k, lat := range v.LatencyMs {
				if !(lat > 0) {
					bad("operator %q variant %q: latency %v on %q", op.Name, v.Name, lat, k)
				}
			}
			for r, row := range v.Profile {
				if len(row.Inputs) != len(op.AccuracyInputs) {
					bad("operator %q variant %q: profile row %d has %d input accuracies, operator has %d accuracy inputs",
						op.Name, v.Name, r+1, len(row.Inputs), len(op.AccuracyInputs))
				}
			}
		}
	}
	ix.accIn = make([][]int, len(p.Operators))
	for i, op := range p.Operators {
		for _, n := range op.AccuracyInputs {
			j, ok := ix.ops[n]
			if !ok {
				bad("operator %q: accuracy input %q is not an operator", op.Name, n)
				continue
			}
			ix.accIn[i] = append(ix.accIn[i], j)
		}
	}
	ix.in = make([][]inEdge, len(p.Operators))
	ix.out = make([][]int, len(p.Operators))
	for e := range p.Edges {
		ed := &p.Edges[e]
		to, ok := ix.ops[ed.To]
		if !ok {
			bad("edge %s->%s: %q is not an operator", ed.From, ed.To, ed.To)
			continue
		}
		r := ed.Ratio
		if r == 0 {
			r = 1
		}
		if r < 0 || ed.KB < 0 {
			bad("edge %s->%s: negative ratio or size", ed.From, ed.To)
		}
		ie := inEdge{src: -1, from: -1, ratio: r, edge: ed}
		if s, ok := ix.srcs[ed.From]; ok {
			ie.src = s
		} else if f, ok := ix.ops[ed.From]; ok {
			ie.from = f
			ix.out[f] = append(ix.out[f], to)
		} else {
			bad("edge %s->%s: unknown node %q", ed.From, ed.To, ed.From)
			continue
		}
		ix.in[to] = append(ix.in[to], ie)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Kahn's algorithm, smallest index first, for a canonical order.
	indeg := make([]int, len(p.Operators))
	for v := range p.Operators {
		for _, e := range ix.in[v] {
			if e.from >= 0 {
				indeg[v]++
			}
		}
	}
	var ready []int
	for v, d := range indeg {
		if d == 0 {
			ready = append(ready, v)
		}
	}
	for len(ready) > 0 {
		sort.Ints(ready)
		v := ready[0]
		ready = ready[1:]
		ix.topo = append(ix.topo, v)
		for _, w := range ix.out[v] {
			indeg[w]--
			if indeg[w] == 0 {
				ready = append(ready, w)
			}
		}
	}
	if len(ix.topo) != len(p.Operators) {
		var cyc []string
		for v, d := range indeg {
			if d > 0 {
				cyc = append(cyc, p.Operators[v].Name)
			}
		}
		return nil, problemErr("the operator graph has a cycle through %v", cyc)
	}
	ix.topoPos = make([]int, len(p.Operators))
	for i, v := range ix.topo {
		ix.topoPos[v] = i
	}
	for v := range p.Operators {
		if len(ix.in[v]) == 0 {
			bad("operator %q has no input (every operator needs a path from a source)", p.Operators[v].Name)
		}
	}
	sink, ok := ix.ops[p.Objectives.Sink]
	if !ok {
		bad("objectives: sink %q is not an operator", p.Objectives.Sink)
	}
	ix.sink = sink
	if t := p.Objectives.Throughput; t < 0 || math.IsNaN(t) {
		bad("objectives: throughput %v", t)
	}
	if e := p.EndToEnd; e != nil {
		for _, n := range e.Operators {
			if _, ok := ix.ops[n]; !ok {
				bad("end-to-end accuracy: %q is not an operator", n)
			}
		}
		for r, row := range e.Rows {
			if len(row.Variants) != len(e.Operators) {
				bad("end-to-end accuracy row %d: %d variants for %d operators", r+1, len(row.Variants), len(e.Operators))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ix.computeDemand(1)
	if t := p.Objectives.Throughput; t > 0 {
		if ix.demand[sink] <= 0 {
			return nil, problemErr("objectives: throughput %v asked but the sink %q receives nothing at the sources' rates", t, p.Objectives.Sink)
		}
		ix.computeDemand(t / ix.demand[sink])
	}
	return ix, nil
}

// computeDemand sets rate and demand with every source rate scaled by k.
func (ix *index) computeDemand(k float64) {
	p := ix.p
	ix.rate = make([]float64, len(p.Sources))
	for s := range p.Sources {
		ix.rate[s] = p.Sources[s].Rate * k
	}
	ix.demand = make([]float64, len(p.Operators))
	for _, v := range ix.topo {
		d := math.Inf(1)
		for _, e := range ix.in[v] {
			var t float64
			if e.src >= 0 {
				t = ix.rate[e.src]
			} else {
				t = ix.demand[e.from]
			}
			d = min(d, t*e.ratio)
		}
		ix.demand[v] = d
	}
}

// SizeKB is the message size on e for the variant pair (fromVar is "" for a
// source): the most specific of Sizes that matches, else KB.
func (e *Edge) SizeKB(fromVar, toVar string) float64 { return edgeKB(e, fromVar, toVar) }

// edgeKB is Edge.SizeKB.
func edgeKB(e *Edge, fromVar, toVar string) float64 {
	best, rank := e.KB, -1
	for _, s := range e.Sizes {
		fa := s.FromVariant == "" || s.FromVariant == "default"
		ta := s.ToVariant == "" || s.ToVariant == "default"
		if (!fa && s.FromVariant != fromVar) || (!ta && s.ToVariant != toVar) {
			continue
		}
		r := 0
		if !fa {
			r += 2
		}
		if !ta {
			r++
		}
		if r > rank {
			best, rank = s.KB, r
		}
	}
	return best
}
