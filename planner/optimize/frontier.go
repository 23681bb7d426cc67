package optimize

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// The accuracy/cost trade-off. Both the BUDGET objective (the most accurate
// plan within a cost per hour) and the Pareto frontier (every plan that no
// other beats on both accuracy and cost) walk the sink accuracies that the
// variant combinations reach, most accurate first, and ask the exact branch
// and bound for the cheapest placement of each level's combinations, pruned
// at a cost bound: the budget, or the cheapest plan of the levels above (a
// costlier one would be dominated). Each answer is therefore exact within
// the search's time budget, and the walk asks as few questions as it can.

// level is the variant combinations with one sink accuracy.
type level struct {
	acc    float64
	combos [][]int
}

// levels groups the combinations meeting the accuracy floor by sink
// accuracy, most accurate first.
func (in *instance) levels() []level {
	var out []level
	for _, c := range in.allCombos() {
		if !in.meetsAccuracy(c.acc) || math.IsInf(c.acc, -1) || math.IsNaN(c.acc) {
			continue
		}
		if n := len(out); n > 0 && math.Abs(out[n-1].acc-c.acc) <= eps {
			out[n-1].combos = append(out[n-1].combos, c.vars)
			continue
		}
		out = append(out, level{acc: c.acc, combos: [][]int{c.vars}})
	}
	return out
}

// cheapestBelow is the exact search restricted to combos: the cheapest
// feasible plan costing less than bound (+Inf: any), nil when there is none.
// gaveUp reports that the deadline cut the search, so "none" or the plan
// found is not proven.
func cheapestBelow(ctx context.Context, in *instance, combos [][]int, bound float64, deadline time.Time) (pl *Plan, gaveUp bool, err error) {
	b := newBnB(ctx, in)
	// The level's combinations replace the accuracy target: the leaf then
	// checks nothing more, and the bounds consider only these.
	b.combos = combos
	b.best = bound
	b.computeLambda()
	b.run(deadline)
	if b.cancelErr != nil {
		return nil, false, b.cancelErr
	}
	if !b.found {
		return nil, b.gaveUp, nil
	}
	pl = in.evaluate(b.bestSol)
	if !pl.Feasible {
		return nil, b.gaveUp, nil
	}
	pl.Optimal = !b.gaveUp
	return pl, b.gaveUp, nil
}

// Frontier returns the accuracy/cost Pareto frontier of p: for each sink
// accuracy some plan reaches at the throughput target (and at or above
// MinAccuracy), the cheapest plan, kept when it is cheaper than every more
// accurate one. Plans come most accurate first, so costs strictly fall and
// the last is the cheapest plan of all. Each plan is proven the cheapest of
// its accuracy unless GaveUp is set (o.TimeBudget ran out; the default is
// DefaultAutoBudget for the whole walk). p's Budget is ignored: the frontier
// is what a budget chooses from.
func Frontier(ctx context.Context, p *Problem, o Options) ([]*Plan, error) {
	start := time.Now()
	if o.TimeBudget <= 0 {
		o.TimeBudget = DefaultAutoBudget
	}
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	deadline := start.Add(o.TimeBudget)
	var out []*Plan
	bound := math.Inf(1)
	for _, lv := range in.levels() {
		// A level costing the same as a more accurate one is dominated, so
		// the bound is strict: cheapestBelow finds only cheaper plans.
		pl, gave, err := cheapestBelow(ctx, in, lv.combos, bound*(1-1e-12), deadline)
		if err != nil {
			return nil, err
		}
		if pl == nil {
			continue
		}
		pl.Strategy, pl.GaveUp = "frontier", gave
		if gave {
			pl.Note = "search time budget ran out: not proven the cheapest of its accuracy"
		}
		pl.OptimizerMs = sinceMs(start)
		out = append(out, pl)
		bound = pl.TotalCost
	}
	return out, nil
}

// WithinBudget solves the dual objective: the most accurate plan whose total
// cost per hour stays within p.Objectives.Budget (throughput and MinAccuracy
// still constraints), the cheapest of that accuracy. It walks the accuracy
// levels from the top and stops at the first with a plan within budget, so
// the answer is proven the most accurate within budget unless GaveUp. When no
// plan fits, the plan is infeasible and its Reason names the cheapest cost
// reachable (Reachable.MinCost), or why no plan meets the other targets.
func WithinBudget(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	start := time.Now()
	if o.TimeBudget <= 0 {
		o.TimeBudget = DefaultAutoBudget
	}
	o = o.withDefaults()
	budget := p.Objectives.Budget
	if budget <= 0 || math.IsNaN(budget) || math.IsInf(budget, 0) {
		return nil, problemErr("budget %v per hour: want a positive number", budget)
	}
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	deadline := start.Add(o.TimeBudget)
	unsure := false
	// Costs agree with the evaluator to rounding; a plan at the budget
	// exactly fits.
	bound := budget*(1+1e-12) + 1e-12
	for _, lv := range in.levels() {
		pl, gave, err := cheapestBelow(ctx, in, lv.combos, bound, deadline)
		if err != nil {
			return nil, err
		}
		unsure = unsure || gave
		if pl == nil {
			continue
		}
		pl.Strategy, pl.GaveUp = "budget", unsure
		if unsure {
			pl.Note = "search time budget ran out: a more accurate plan within budget may exist"
		}
		pl.OptimizerMs = sinceMs(start)
		return pl, nil
	}
	// Nothing within budget: say what the cheapest plan costs.
	cheap, err := Auto{}.Optimize(ctx, withoutBudget(p), o)
	if err != nil {
		return nil, err
	}
	pl := &Plan{Strategy: "budget", Feasible: false, Operators: []OperatorPlan{}, Reachable: &Reachable{}, GaveUp: unsure}
	switch {
	case cheap.Feasible:
		c := cheap.TotalCost
		pl.Reachable.MinCost = &c
		pl.Reason = fmt.Sprintf("budget %.4g per hour is below the cheapest plan that meets the other targets: %.4f per hour (accuracy %.4g, compute %.4f, network %.4f)",
			budget, c, cheap.Accuracy, cheap.ComputeCost, cheap.NetworkCost)
	default:
		pl.Reason, pl.Reachable = cheap.Reason, cheap.Reachable
	}
	pl.OptimizerMs = sinceMs(start)
	return pl, nil
}

// withoutBudget is p with its cost objective dropped (the other targets kept).
func withoutBudget(p *Problem) *Problem {
	q := *p
	q.Objectives.Budget = 0
	q.Reserved = slices.Clone(p.Reserved)
	return &q
}
