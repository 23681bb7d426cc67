package optimize

import (
	"context"
	"fmt"
	"math"
	"time"
)

// explainBudget caps the time explain spends, whatever the strategy's budget:
// a sweep of infeasible targets must stay quick.
const explainBudget = time.Second

// explain builds the infeasible plan's Reason: which target cannot be met and
// the best that can. Each question goes to an oracle: Algorithm 1 first (a plan
// it finds proves feasibility at once), then the exact feasibility search (the
// branch and bound stopping at its first plan) on a slice of the time left.
// Answers the oracle could not settle in time are reported as bounds.
func explain(ctx context.Context, in *instance, o Options, _ time.Time) (*Plan, error) {
	deadline := time.Now().Add(min(o.TimeBudget, explainBudget))
	pl := &Plan{Feasible: false, Reachable: &Reachable{}, Operators: []OperatorPlan{}}
	all := in.allCombos()
	if len(all) == 0 {
		pl.Reason = "no variant combination"
		return pl, nil
	}
	T := in.ix.demand[in.ix.sink]
	oracle := func(x *instance, combos [][]int) (*bool, error) {
		yes := true
		for _, vars := range combos {
			if s, _ := x.algorithm1(vars, x.ix.topo, o.BeamWorkerAssignment); s != nil {
				return &yes, nil
			}
		}
		slice := time.Until(deadline) / 4
		if slice <= 0 {
			return nil, nil
		}
		return feasible(ctx, x, combos, time.Now().Add(slice))
	}
	// Highest accuracy placeable at the requested throughput.
	loose := *in
	loose.target = math.Inf(-1)
	loose.noPlan = false
	maxAcc, placed, unsure := math.Inf(-1), false, false
	for _, c := range all {
		ok, err := oracle(&loose, [][]int{c.vars})
		if err != nil {
			return nil, err
		}
		if ok == nil {
			unsure = true
			continue
		}
		if *ok {
			maxAcc, placed = c.acc, true
			break
		}
	}
	if placed {
		pl.Reachable.MaxAccuracy = Float(finite(maxAcc))
	}
	accurate := all[:0:0]
	for _, c := range all {
		if in.meetsAccuracy(c.acc) {
			accurate = append(accurate, c)
		}
	}
	atT := func() string {
		switch {
		case placed && unsure:
			return fmt.Sprintf("; at %.4g items/s an accuracy of %.4g is reachable (higher ones not settled in time)", T, finite(maxAcc))
		case placed:
			return fmt.Sprintf("; at %.4g items/s the highest reachable accuracy is %.4g", T, finite(maxAcc))
		case !unsure:
			return fmt.Sprintf("; no variant combination can be placed at %.4g items/s", T)
		}
		return ""
	}
	if len(accurate) == 0 {
		pl.Reason = fmt.Sprintf("accuracy target %.4g is above what any variant combination reaches (at most %.4g)", in.target, finite(all[0].acc)) + atT()
		return pl, nil
	}
	var vars [][]int
	for _, c := range accurate {
		vars = append(vars, c.vars)
	}
	var ok *bool
	if in.noPlan {
		ok = new(bool) // proved by the strategy's own exact search
	} else {
		var err error
		if ok, err = oracle(in, vars); err != nil {
			return nil, err
		}
	}
	if ok != nil && *ok {
		pl.Reason = "this strategy found no plan meeting the targets, although one exists (try strategy auto or exhaustive)"
		return pl, nil
	}
	// Highest throughput at the accuracy target: bisection on the sources'
	// common scale factor, from the bound every operator's capacity alone
	// gives (shared workers and A2 only lower it).
	lo, hi := 0.0, min(1.0, in.capacityBound(vars))
	settled := ok != nil
	for i := range 30 {
		// 0.1%: finer steps sit right at the capacity limit, where each
		// infeasibility proof costs the most, for digits nobody reads.
		if hi-lo < 1e-3*hi {
			break
		}
		mid := (lo + hi) / 2
		if i == 0 && hi < 1 {
			mid = hi // the bound is often reached: try it first
		}
		ok, err := oracle(in.scaled(mid), vars)
		if err != nil {
			return nil, err
		}
		switch {
		case ok == nil:
			settled = false
			hi = mid // unknown: narrow from above, but say so
		case *ok:
			lo = mid
		default:
			hi = mid
		}
	}
	pl.Reachable.MaxThroughput = Float(lo * T)
	acc := "any accuracy"
	if !math.IsInf(in.target, -1) {
		acc = fmt.Sprintf("accuracy >= %.4g", in.target)
	}
	if settled {
		pl.Reason = fmt.Sprintf("throughput %.4g items/s cannot be sustained at %s (capacity, A2 or bandwidth): at most %.4g items/s can", T, acc, lo*T)
	} else {
		pl.Reason = fmt.Sprintf("throughput %.4g items/s is not reachable at %s within the time budget: %.4g items/s is (higher not settled)", T, acc, lo*T)
	}
	pl.Reason += atT()
	return pl, nil
}

// capacityBound is the highest scale of the demands that every operator could
// carry alone on all workers, for the best of the combinations: an upper bound
// on the reachable throughput scale.
func (in *instance) capacityBound(combos [][]int) float64 {
	best := 0.0
	for _, vars := range combos {
		s := math.Inf(1)
		for o := range in.nOps {
			d := in.ix.demand[o]
			if d <= 0 {
				continue
			}
			c := 0.0
			for _, x := range in.caps[o][vars[o]] {
				c += x
			}
			s = min(s, c/d)
		}
		best = max(best, s)
	}
	return best
}

// feasible reports whether some plan with one of the variant combinations
// exists; nil when the deadline came first.
func feasible(ctx context.Context, in *instance, combos [][]int, deadline time.Time) (*bool, error) {
	b := newBnB(ctx, in)
	b.combos = combos
	b.firstOnly = true
	b.run(deadline)
	if b.cancelErr != nil {
		return nil, b.cancelErr
	}
	if b.found {
		t := true
		return &t, nil
	}
	if b.gaveUp {
		return nil, nil
	}
	f := false
	return &f, nil
}

// scaled is the instance with every source rate (and so every demand) times k.
func (in *instance) scaled(k float64) *instance {
	// Demands are minima of rates times ratios, so they scale by k too.
	ix := *in.ix
	ix.rate = make([]float64, len(in.ix.rate))
	for s := range ix.rate {
		ix.rate[s] = in.ix.rate[s] * k
	}
	ix.demand = make([]float64, len(in.ix.demand))
	for i := range ix.demand {
		ix.demand[i] = in.ix.demand[i] * k
	}
	c := *in
	c.ix = &ix
	c.noPlan = false // proved at the original demands only
	return &c
}
