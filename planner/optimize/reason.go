package optimize

import (
	"context"
	"fmt"
	"math"
	"time"
)

// explain builds the infeasible plan's Reason: which target cannot be met and
// the best that can. The searches are exact feasibility searches (the branch
// and bound stopping at its first plan) bounded by the options' time budget.
func explain(ctx context.Context, in *instance, o Options, start time.Time) (*Plan, error) {
	deadline := start.Add(o.TimeBudget)
	pl := &Plan{Feasible: false, Reachable: &Reachable{}}
	all := in.allCombos()
	if len(all) == 0 {
		pl.Reason = "no variant combination"
		return pl, nil
	}
	T := in.ix.demand[in.ix.sink]
	// Highest accuracy placeable at the requested throughput.
	loose := *in
	loose.target = math.Inf(-1)
	maxAcc, placed, timedOut := math.Inf(-1), false, false
	for _, c := range all {
		ok, err := feasible(ctx, &loose, [][]int{c.vars}, deadline)
		if err != nil {
			return nil, err
		}
		if ok == nil {
			timedOut = true
			break
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
	if len(accurate) == 0 {
		pl.Reason = fmt.Sprintf("accuracy target %.4g is above what any variant combination reaches (at most %.4g)", in.target, finite(all[0].acc))
		if placed {
			pl.Reason += fmt.Sprintf("; at %.4g items/s the highest reachable accuracy is %.4g", T, finite(maxAcc))
		}
		return pl, nil
	}
	var vars [][]int
	for _, c := range accurate {
		vars = append(vars, c.vars)
	}
	// Highest throughput at the accuracy target: bisection on the sources'
	// common scale factor.
	ok, err := feasible(ctx, in, vars, deadline)
	if err != nil {
		return nil, err
	}
	if ok != nil && *ok {
		pl.Reason = "this strategy found no plan meeting the targets, although one exists (try strategy auto or exhaustive)"
		return pl, nil
	}
	lo, hi := 0.0, 1.0
	for range 30 {
		mid := (lo + hi) / 2
		sc := in.scaled(mid)
		ok, err := feasible(ctx, sc, vars, deadline)
		if err != nil {
			return nil, err
		}
		if ok == nil {
			timedOut = true
			break
		}
		if *ok {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-6 {
			break
		}
	}
	maxT := lo * T
	pl.Reachable.MaxThroughput = Float(maxT)
	acc := "any accuracy"
	if !math.IsInf(in.target, -1) {
		acc = fmt.Sprintf("accuracy >= %.4g", in.target)
	}
	pl.Reason = fmt.Sprintf("throughput %.4g items/s cannot be sustained at %s (capacity, A2 or bandwidth): at most %.4g items/s can", T, acc, maxT)
	if placed {
		pl.Reason += fmt.Sprintf("; at %.4g items/s the highest reachable accuracy is %.4g", T, finite(maxAcc))
	} else if !timedOut {
		pl.Reason += fmt.Sprintf("; no variant combination can be placed at %.4g items/s", T)
	}
	if timedOut {
		pl.Reason += " (search stopped at the time budget; bounds are the best found)"
	}
	return pl, nil
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
	return &c
}
