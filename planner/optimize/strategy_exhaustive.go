package optimize

import (
	"context"
	"fmt"
	"time"
)

// Exhaustive is the exact optimum of the cost model under A2 over the decision
// space of the package comment (every variant combination; per operator every
// set of distinct free workers and every choice of its remainder worker such
// that each worker carries items), found by branch and bound (see bnb). When
// the time budget runs out it returns the best plan found so far with GaveUp set
// and a Note "gave up after N s".
type Exhaustive struct{}

func (Exhaustive) Name() string { return "exhaustive" }
func (Exhaustive) Doc() string {
	return "exact optimum under A2 by branch and bound; gives up (best so far) after the time budget"
}

func (Exhaustive) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	start := time.Now()
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	pl, err := exact(ctx, in, nil, start.Add(o.TimeBudget))
	if err != nil {
		return nil, err
	}
	return finish(ctx, in, pl, "exhaustive", start, o)
}

// exact runs the branch and bound, seeded with an incumbent when given (its
// cost prunes from the start). The plan is the incumbent when nothing cheaper
// exists; nil when nothing feasible was found.
func exact(ctx context.Context, in *instance, incumbent *sol, deadline time.Time) (*Plan, error) {
	b := newBnB(ctx, in)
	var incPlan *Plan
	if incumbent != nil {
		incPlan = in.evaluate(*incumbent)
		if incPlan.Feasible {
			b.best = incPlan.TotalCost
		} else {
			incPlan = nil
		}
	}
	start := time.Now()
	b.computeLambda()
	b.run(deadline)
	if b.cancelErr != nil {
		return nil, b.cancelErr
	}
	var pl *Plan
	switch {
	case b.found:
		pl = in.evaluate(b.bestSol)
	case incPlan != nil:
		pl = incPlan
	default:
		pl = nil
	}
	if pl == nil {
		if b.gaveUp {
			return &Plan{GaveUp: true, Note: fmt.Sprintf("gave up after %.3g s with no feasible plan found", time.Since(start).Seconds())}, nil
		}
		in.noPlan = true
		return nil, nil
	}
	if b.gaveUp {
		pl.GaveUp = true
		pl.Note = fmt.Sprintf("gave up after %.3g s: best plan found so far, not proven optimal", time.Since(start).Seconds())
	} else {
		pl.Optimal = true
	}
	return pl, nil
}
