package optimize

import (
	"context"
	"time"
)

// Auto is the default: JellyBean's plan as the incumbent, then the exact branch
// and bound (Exhaustive) seeded with its cost, within the time budget. So it is
// never worse than jellybean, and it is the proven optimum (Optimal) whenever
// the search finishes in the budget; otherwise it returns the best plan found
// with GaveUp set.
type Auto struct{}

func (Auto) Name() string { return "auto" }
func (Auto) Doc() string {
	return "default: jellybean as incumbent, then exact branch and bound within the time budget"
}

// DefaultAutoBudget bounds auto's exact phase when Options.TimeBudget is zero:
// the planner must stay interactive.
const DefaultAutoBudget = 2 * time.Second

func (Auto) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	start := time.Now()
	if o.TimeBudget <= 0 {
		o.TimeBudget = DefaultAutoBudget
	}
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	inc := in.jellybean(o)
	pl, err := exact(ctx, in, inc, start.Add(o.TimeBudget))
	if err != nil {
		return nil, err
	}
	return finish(ctx, in, pl, "auto", start, o)
}
