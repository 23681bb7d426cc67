package optimize_test

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// randomProblem builds a small random DAG on a random tiered infrastructure.
func randomProblem(rng *rand.Rand) *optimize.Problem {
	p := &optimize.Problem{Name: "random", CommCostScaling: []float64{0.1, 1}[rng.Intn(2)]}
	nt := 2 + rng.Intn(2)
	for i := range nt {
		locs := 1
		if i == 0 && rng.Intn(4) == 0 {
			locs = 2 // TCoeff 2 on the lowest tier
		}
		p.Tiers = append(p.Tiers, optimize.Tier{Name: fmt.Sprintf("t%d", i), Locations: locs})
	}
	nw := 3 + rng.Intn(3)
	for i := range nw {
		t := rng.Intn(nt)
		p.Workers = append(p.Workers, optimize.Worker{Name: fmt.Sprintf("w%d", i), Tier: p.Tiers[t].Name,
			Type: fmt.Sprintf("type%d", rng.Intn(3)), Price: float64(1+rng.Intn(30)) / 10})
	}
	for a := range nt {
		for b := a; b < nt; b++ {
			if a != b || rng.Intn(3) == 0 {
				l := optimize.TierLink{From: p.Tiers[a].Name, To: p.Tiers[b].Name, Multiplier: float64(rng.Intn(4)) / 2}
				if rng.Intn(4) == 0 {
					l.BandwidthMBps = float64(1 + rng.Intn(20))
				}
				p.TierLinks = append(p.TierLinks, l)
			}
		}
	}
	if rng.Intn(2) == 0 {
		a, b := rng.Intn(nw), rng.Intn(nw)
		p.WorkerLinks = append(p.WorkerLinks, optimize.WorkerLink{From: p.Workers[a].Name, To: p.Workers[b].Name, Multiplier: float64(rng.Intn(5))})
	}
	ns := 1 + rng.Intn(2)
	for i := range ns {
		p.Sources = append(p.Sources, optimize.Source{Name: fmt.Sprintf("s%d", i), Rate: float64(2 + rng.Intn(20)), Tier: "t0"})
	}
	if rng.Intn(3) == 0 {
		p.SourceLinks = append(p.SourceLinks, optimize.SourceLink{Source: "s0", Worker: p.Workers[rng.Intn(nw)].Name, Multiplier: 2})
	}
	no := 2 + rng.Intn(2)
	for i := range no {
		op := optimize.Operator{Name: fmt.Sprintf("op%d", i)}
		// In-edges: a source or an earlier operator, sometimes two.
		k := 1 + rng.Intn(2)
		from := map[string]bool{}
		for range k {
			var f string
			if i == 0 || rng.Intn(3) == 0 {
				f = p.Sources[rng.Intn(ns)].Name
			} else {
				f = fmt.Sprintf("op%d", rng.Intn(i))
			}
			if from[f] {
				continue
			}
			from[f] = true
			e := optimize.Edge{From: f, To: op.Name, Ratio: []float64{0.5, 1, 1, 2}[rng.Intn(4)], KB: float64(1 + rng.Intn(500))}
			if rng.Intn(3) == 0 {
				e.Sizes = []optimize.MessageSize{{ToVariant: "v1", KB: float64(1 + rng.Intn(50))}}
			}
			p.Edges = append(p.Edges, e)
			if f[0] == 'o' {
				op.AccuracyInputs = append(op.AccuracyInputs, f)
			}
		}
		nv := 1 + rng.Intn(2)
		for v := range nv {
			va := optimize.Variant{Name: fmt.Sprintf("v%d", v), ProxyCost: float64(1 + rng.Intn(10)), LatencyMs: map[string]float64{}}
			for _, w := range p.Workers {
				if rng.Intn(5) > 0 {
					va.LatencyMs[w.Name] = float64(20 + rng.Intn(400))
				}
			}
			if len(op.AccuracyInputs) == 0 {
				va.Accuracy = optimize.Float(float64(50 + rng.Intn(50)))
			} else {
				for range 2 {
					row := optimize.AccuracyRow{Output: float64(40 + rng.Intn(60))}
					for range op.AccuracyInputs {
						row.Inputs = append(row.Inputs, float64(40+rng.Intn(60)))
					}
					va.Profile = append(va.Profile, row)
				}
				va.Accuracy = optimize.Float(float64(30 + rng.Intn(20)))
			}
			op.Variants = append(op.Variants, va)
		}
		p.Operators = append(p.Operators, op)
	}
	p.Objectives.Sink = p.Operators[no-1].Name
	if rng.Intn(3) > 0 {
		p.Objectives.MinAccuracy = optimize.Float(float64(30 + rng.Intn(60)))
	}
	if rng.Intn(4) == 0 {
		p.Objectives.Throughput = float64(1 + rng.Intn(30))
	}
	return p
}

// bruteForce enumerates every plan of the decision space independently of the
// optimizer: every variant combination, every owner (or none) per worker, every
// remainder worker that leaves the others short of the demand, each costed by
// Evaluate. It returns the cheapest feasible total, or +Inf.
func bruteForce(t *testing.T, p *optimize.Problem) float64 {
	t.Helper()
	best := math.Inf(1)
	bruteForceEach(t, p, func(pl *optimize.Plan) {
		best = math.Min(best, pl.TotalCost)
	})
	return best
}

// bruteForceEach calls f with every feasible plan of the enumeration.
func bruteForceEach(t *testing.T, p *optimize.Problem, f func(*optimize.Plan)) {
	t.Helper()
	no, nw := len(p.Operators), len(p.Workers)
	tcoeff := map[string]float64{}
	for i := range p.Tiers {
		k := 1.0
		for j := i; j < len(p.Tiers); j++ {
			k *= float64(max(p.Tiers[j].Locations, 1))
		}
		tcoeff[p.Tiers[i].Name] = k
	}
	// Demands, operators in index order (the generator keeps edges forward).
	rate := map[string]float64{}
	for _, s := range p.Sources {
		rate[s.Name] = s.Rate
	}
	demand := func(scale float64) []float64 {
		d := map[string]float64{}
		for k, v := range rate {
			d[k] = v * scale
		}
		out := make([]float64, no)
		for i, op := range p.Operators {
			m := math.Inf(1)
			for _, e := range p.Edges {
				if e.To == op.Name {
					m = math.Min(m, d[e.From]*e.Ratio)
				}
			}
			d[op.Name], out[i] = m, m
		}
		return out
	}
	T := demand(1)
	if p.Objectives.Throughput > 0 {
		T = demand(p.Objectives.Throughput / T[no-1])
	}
	capOf := func(o, v, w int) float64 {
		l, ok := p.Operators[o].Variants[v].LatencyMs[p.Workers[w].Name]
		if !ok {
			return 0
		}
		return tcoeff[p.Workers[w].Tier] * 1000 / l
	}
	ev, err := optimize.NewEvaluator(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	vars := make([]int, no)
	owner := make([]int, nw)
	var tryOwners func(w int)
	try := func() {
		// Per operator: the set it owns and its valid remainder workers.
		sets := make([][]int, no)
		for w, o := range owner {
			if o >= 0 {
				sets[o] = append(sets[o], w)
			}
		}
		rems := make([][]int, no)
		for o := range no {
			sum := 0.0
			for _, w := range sets[o] {
				c := capOf(o, vars[o], w)
				if c <= 0 {
					return
				}
				sum += c
			}
			if sum < T[o]-1e-9 {
				return
			}
			if len(sets[o]) == 0 {
				rems[o] = []int{-1}
				continue
			}
			for _, r := range sets[o] {
				if sum-capOf(o, vars[o], r) < T[o]-1e-9 {
					rems[o] = append(rems[o], r)
				}
			}
			if rems[o] == nil {
				return
			}
		}
		pick := make([]int, no)
		var rec func(o int)
		rec = func(o int) {
			if o == no {
				var a optimize.Assignment
				for i := range no {
					c := optimize.Choice{Operator: p.Operators[i].Name, Variant: p.Operators[i].Variants[vars[i]].Name, Workers: []string{}}
					for _, w := range sets[i] {
						if w != pick[i] {
							c.Workers = append(c.Workers, p.Workers[w].Name)
						}
					}
					if pick[i] >= 0 {
						c.Workers = append(c.Workers, p.Workers[pick[i]].Name)
					}
					a = append(a, c)
				}
				pl, err := ev.Evaluate(a)
				if err != nil {
					t.Fatal(err)
				}
				if pl.Feasible {
					f(pl)
				}
				return
			}
			for _, r := range rems[o] {
				pick[o] = r
				rec(o + 1)
			}
		}
		rec(0)
	}
	// have[o]: capacity owned so far; only sound pruning: an operator that
	// cannot reach its demand even with every worker still undecided.
	have := make([]float64, no)
	tryOwners = func(w int) {
		for o := range no {
			rest := have[o]
			for x := w; x < nw; x++ {
				rest += capOf(o, vars[o], x)
			}
			if rest < T[o]-1e-9 {
				return
			}
		}
		if w == nw {
			try()
			return
		}
		for o := -1; o < no; o++ {
			owner[w] = o
			if o >= 0 {
				have[o] += capOf(o, vars[o], w)
			}
			tryOwners(w + 1)
			if o >= 0 {
				have[o] -= capOf(o, vars[o], w)
			}
		}
	}
	var tryVars func(o int)
	tryVars = func(o int) {
		if o == no {
			// Skip combinations below the accuracy target (an unplaced
			// assignment still reports the combination's accuracy).
			if min := p.Objectives.MinAccuracy; min != nil {
				var a optimize.Assignment
				for i := range no {
					a = append(a, optimize.Choice{Operator: p.Operators[i].Name, Variant: p.Operators[i].Variants[vars[i]].Name})
				}
				pl, err := ev.Evaluate(a)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range pl.Violations {
					if strings.HasPrefix(v, "accuracy") {
						return
					}
				}
			}
			tryOwners(0)
			return
		}
		for v := range p.Operators[o].Variants {
			vars[o] = v
			tryVars(o + 1)
		}
	}
	tryVars(0)
}

func TestPropertyRandomProblems(t *testing.T) {
	reg := optimize.DefaultRegistry()
	ctx := context.Background()
	feasibleCases := 0
	for seed := int64(1); seed <= 300; seed++ {
		p := randomProblem(rand.New(rand.NewSource(seed)))
		want := bruteForce(t, p)
		plans := map[string]*optimize.Plan{}
		for _, name := range reg.Names() {
			if s, _ := reg.Lookup(name); optimize.IsWholeWorkflow(s) {
				continue // outside the decision space Evaluate and the brute force cover
			}
			pl, err := reg.Optimize(ctx, name, p, optimize.Options{Seed: seed})
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, name, err)
			}
			plans[name] = pl
			if !pl.Feasible {
				if pl.Reason == "" {
					t.Errorf("seed %d %s: infeasible without a reason", seed, name)
				}
				continue
			}
			// The plan is what Evaluate says it is, and satisfies everything.
			ev, err := optimize.Evaluate(p, pl.Assignment(), nil)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, name, err)
			}
			if !ev.Feasible {
				t.Errorf("seed %d %s: plan violates %v", seed, name, ev.Violations)
			}
			if math.Abs(ev.TotalCost-pl.TotalCost) > 1e-9 {
				t.Errorf("seed %d %s: reported cost %v, evaluated %v", seed, name, pl.TotalCost, ev.TotalCost)
			}
			if pl.TotalCost < want-1e-9 {
				t.Errorf("seed %d %s: cost %v below the brute-force optimum %v", seed, name, pl.TotalCost, want)
			}
		}
		ex := plans["exhaustive"]
		if math.IsInf(want, 1) {
			if ex.Feasible {
				t.Errorf("seed %d: exhaustive found %v, brute force nothing", seed, ex.TotalCost)
			}
			checkReachable(t, seed, p, ex)
			continue
		}
		feasibleCases++
		if !ex.Feasible || math.Abs(ex.TotalCost-want) > 1e-9 || !ex.Optimal {
			t.Errorf("seed %d: exhaustive %v (feasible %v, optimal %v), brute force %v", seed, ex.TotalCost, ex.Feasible, ex.Optimal, want)
		}
		au := plans["auto"]
		if !au.Feasible || math.Abs(au.TotalCost-want) > 1e-9 {
			t.Errorf("seed %d: auto %v (feasible %v), optimum %v", seed, au.TotalCost, au.Feasible, want)
		}
		if jb := plans["jellybean"]; jb.Feasible && au.TotalCost > jb.TotalCost+1e-9 {
			t.Errorf("seed %d: auto %v worse than jellybean %v", seed, au.TotalCost, jb.TotalCost)
		}
	}
	if feasibleCases < 100 {
		t.Fatalf("only %d of the random problems are feasible: the generator no longer exercises the search", feasibleCases)
	}
}

func TestDeterministicForSeed(t *testing.T) {
	p := aicityXLarge(20, 70)
	for _, name := range optimize.DefaultRegistry().Names() {
		var first optimize.Assignment
		for range 2 {
			pl, err := optimize.DefaultRegistry().Optimize(context.Background(), name, p, optimize.Options{Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			a := pl.Assignment()
			if first == nil {
				first = a
			} else if !reflect.DeepEqual(first, a) {
				t.Errorf("%s: two runs with seed 7 differ:\n%v\n%v", name, first, a)
			}
		}
	}
}

// checkReachable verifies an infeasible plan's bounds: just below the reported
// highest throughput (or at the reported highest accuracy) a plan exists, and
// just above it none does.
func checkReachable(t *testing.T, seed int64, p *optimize.Problem, pl *optimize.Plan) {
	t.Helper()
	r := pl.Reachable
	if r == nil || !strings.Contains(pl.Reason, "at most") && !strings.Contains(pl.Reason, "highest reachable") {
		return // nothing settled to check
	}
	try := func(edit func(q *optimize.Problem)) bool {
		q := *p
		edit(&q)
		got, err := optimize.Exhaustive{}.Optimize(context.Background(), &q, optimize.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return got.Feasible
	}
	if m := r.MaxThroughput; m != nil && *m > 1e-6 && strings.Contains(pl.Reason, "at most") {
		if !try(func(q *optimize.Problem) { q.Objectives.Throughput = *m * 0.999 }) {
			t.Errorf("seed %d: reported max throughput %v, but 0.999 of it is infeasible", seed, *m)
		}
		if try(func(q *optimize.Problem) { q.Objectives.Throughput = *m * 1.01 }) {
			t.Errorf("seed %d: reported max throughput %v, but 1.01 of it is feasible", seed, *m)
		}
	}
	if a := r.MaxAccuracy; a != nil && strings.Contains(pl.Reason, "highest reachable") {
		if !try(func(q *optimize.Problem) { q.Objectives.MinAccuracy = optimize.Float(*a) }) {
			t.Errorf("seed %d: reported max accuracy %v is not reachable", seed, *a)
		}
		if try(func(q *optimize.Problem) { q.Objectives.MinAccuracy = optimize.Float(*a + 1e-6) }) {
			t.Errorf("seed %d: accuracy above the reported max %v is reachable", seed, *a)
		}
	}
}
