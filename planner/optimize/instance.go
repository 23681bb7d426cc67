package optimize

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// instance is a problem prepared for search: indices, demands and every cost the
// model gives, in flat tables.
type instance struct {
	ix       *index
	p        *Problem
	nOps, nW int
	caps     [][][]float64 // [op][variant][worker]
	price    []float64
	link     []float64 // [a*nW+b] cost per hour per item/s per KB
	allowed  []bool
	slink    []float64 // [s*nW+b]
	sallowed []bool
	// kb[op][in-edge][fromVariant][toVariant]; fromVariant 0 for sources.
	kb       [][][][]float64
	accTable map[string]float64 // end-to-end accuracy by variant key
	accOps   []int              // operators of the end-to-end table
	target   float64            // accuracy target (-Inf when none)
	hasBW    bool               // some tier pair has a bandwidth cap
	// left is per worker the share of its capacity Problem.Reserved leaves
	// (nil: all of it); caps already hold the reduced capacities.
	left []float64
	// noPlan: the exact search has proved that no plan meets the targets
	// (explain then need not ask again).
	noPlan bool
}

const eps = 1e-9

func newInstance(p *Problem, m CostModel) (*instance, error) {
	if m == nil {
		m = PrototypeModel{}
	}
	ix, err := indexProblem(p)
	if err != nil {
		return nil, err
	}
	c, err := m.Prepare(p)
	if err != nil {
		return nil, err
	}
	in := &instance{ix: ix, p: p, nOps: len(p.Operators), nW: len(p.Workers), target: math.Inf(-1)}
	if p.Objectives.MinAccuracy != nil {
		in.target = *p.Objectives.MinAccuracy
	}
	in.caps = make([][][]float64, in.nOps)
	for o := range p.Operators {
		in.caps[o] = make([][]float64, len(p.Operators[o].Variants))
		for v := range p.Operators[o].Variants {
			row := make([]float64, in.nW)
			for w := range row {
				x := c.Capacity(o, v, w)
				if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("%w: cost model gives capacity %v for %s/%s on %s", ErrInvalidProblem, x,
						p.Operators[o].Name, p.Operators[o].Variants[v].Name, p.Workers[w].Name)
				}
				row[w] = x
			}
			in.caps[o][v] = row
		}
	}
	in.price = make([]float64, in.nW)
	for w := range in.price {
		in.price[w] = c.Price(w)
	}
	in.link = make([]float64, in.nW*in.nW)
	in.allowed = make([]bool, in.nW*in.nW)
	for a := range in.nW {
		for b := range in.nW {
			in.link[a*in.nW+b], in.allowed[a*in.nW+b] = c.Link(a, b)
		}
	}
	ns := len(p.Sources)
	in.slink = make([]float64, ns*in.nW)
	in.sallowed = make([]bool, ns*in.nW)
	for s := range ns {
		for b := range in.nW {
			in.slink[s*in.nW+b], in.sallowed[s*in.nW+b] = c.SourceLink(s, b)
		}
	}
	in.kb = make([][][][]float64, in.nOps)
	for v := range p.Operators {
		in.kb[v] = make([][][]float64, len(ix.in[v]))
		for k, e := range ix.in[v] {
			nf := 1
			if e.from >= 0 {
				nf = len(p.Operators[e.from].Variants)
			}
			t := make([][]float64, nf)
			for f := range nf {
				fv := ""
				if e.from >= 0 {
					fv = p.Operators[e.from].Variants[f].Name
				}
				t[f] = make([]float64, len(p.Operators[v].Variants))
				for s := range p.Operators[v].Variants {
					t[f][s] = edgeKB(e.edge, fv, p.Operators[v].Variants[s].Name)
				}
			}
			in.kb[v][k] = t
		}
	}
	for _, row := range ix.tierBW {
		for _, x := range row {
			in.hasBW = in.hasBW || x > 0
		}
	}
	if e := p.EndToEnd; e != nil {
		in.accTable = map[string]float64{}
		for _, n := range e.Operators {
			in.accOps = append(in.accOps, ix.ops[n])
		}
		for _, r := range e.Rows {
			in.accTable[strings.Join(r.Variants, "\x00")] = r.Accuracy
		}
	}
	if err := in.reserve(p.Reserved); err != nil {
		return nil, err
	}
	return in, nil
}

// accuracies returns every operator's output accuracy for a variant choice
// (vars[op] = variant index). +Inf means "no ML upstream" (no constraint), -Inf
// means no profile row covers the inputs.
func (in *instance) accuracies(vars []int) []float64 {
	p := in.p
	acc := make([]float64, in.nOps)
	for _, v := range in.ix.topo {
		acc[v] = in.opAccuracy(v, vars, acc)
	}
	if in.accTable != nil {
		key := make([]string, len(in.accOps))
		for i, o := range in.accOps {
			key[i] = p.Operators[o].Variants[vars[o]].Name
		}
		if a, ok := in.accTable[strings.Join(key, "\x00")]; ok {
			acc[in.ix.sink] = a
		}
	}
	return acc
}

func (in *instance) opAccuracy(v int, vars []int, acc []float64) float64 {
	op := &in.p.Operators[v]
	va := &op.Variants[vars[v]]
	if len(in.ix.accIn[v]) > 0 && len(va.Profile) > 0 {
		best, found := math.Inf(-1), false
		for _, r := range va.Profile {
			ok := true
			for i, u := range in.ix.accIn[v] {
				if r.Inputs[i] > acc[u]+eps {
					ok = false
					break
				}
			}
			if ok && r.Output > best {
				best, found = r.Output, true
			}
		}
		if found {
			return best
		}
		if va.Accuracy != nil {
			return *va.Accuracy
		}
		return math.Inf(-1)
	}
	if len(in.ix.accIn[v]) == 0 {
		best, found := math.Inf(-1), false
		for _, r := range va.Profile {
			if len(r.Inputs) == 0 && r.Output > best {
				best, found = r.Output, true
			}
		}
		if found {
			return best
		}
	}
	if va.Accuracy != nil {
		return *va.Accuracy
	}
	// No accuracy data (a relational operator): as good as its worst input.
	a := math.Inf(1)
	for _, e := range in.ix.in[v] {
		if e.from >= 0 {
			a = min(a, acc[e.from])
		}
	}
	return a
}

// sinkAccuracy is the plan accuracy of a variant choice.
func (in *instance) sinkAccuracy(vars []int) float64 {
	return in.accuracies(vars)[in.ix.sink]
}

// meetsAccuracy reports whether a sink accuracy meets the target.
func (in *instance) meetsAccuracy(a float64) bool {
	return a >= in.target-eps
}

// combos enumerates every variant combination in a deterministic order (the
// first operator varies slowest), calling f until it returns false.
func (in *instance) combos(f func(vars []int) bool) {
	vars := make([]int, in.nOps)
	var rec func(i int) bool
	rec = func(i int) bool {
		if i == in.nOps {
			return f(vars)
		}
		for s := range in.p.Operators[i].Variants {
			vars[i] = s
			if !rec(i + 1) {
				return false
			}
		}
		return true
	}
	rec(0)
}

// numCombos is the number of variant combinations, capped at limit+1.
func (in *instance) numCombos(limit int) int {
	n := 1
	for _, op := range in.p.Operators {
		n *= len(op.Variants)
		if n > limit {
			return limit + 1
		}
	}
	return n
}

// accurateCombos lists the variant combinations meeting the accuracy target,
// sorted by accuracy descending (ties in enumeration order).
type combo struct {
	vars []int
	acc  float64
}

func (in *instance) allCombos() []combo {
	var cs []combo
	in.combos(func(vars []int) bool {
		cs = append(cs, combo{vars: append([]int(nil), vars...), acc: in.sinkAccuracy(vars)})
		return true
	})
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].acc > cs[j].acc })
	return cs
}

func finite(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return x
}
