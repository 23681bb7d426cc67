package optimize

import (
	"context"
	"time"
)

// MostAccurate is the model-selection ablation of JellyBean 6.1/6.3: the most
// accurate variant combination (as the BF/FF baselines use, "since none of them
// solves the model selection problem"), placed by Algorithm 1 over the
// topological orders. It shows what choosing models buys.
type MostAccurate struct{}

func (MostAccurate) Name() string { return "most-accurate" }
func (MostAccurate) Doc() string {
	return "baseline: most accurate variants, placed by JellyBean's Algorithm 1"
}

func (MostAccurate) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	start := time.Now()
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	var pl *Plan
	if vars := in.mostAccurate(); vars != nil {
		var best *sol
		bestCost := 0.0
		for _, order := range in.topoOrders(o.TopoOrders, o.Seed) {
			if s, c := in.algorithm1(vars, order, o.BeamWorkerAssignment); s != nil && (best == nil || c < bestCost-1e-12) {
				best, bestCost = s, c
			}
		}
		if best != nil {
			pl = in.evaluate(*best)
		}
	}
	return finish(ctx, in, pl, "most-accurate", start, o)
}
