package optimize

import (
	"context"
	"time"
)

// FirstFit is the First Fit baseline of JellyBean 6.1 (classic VM placement):
// the most accurate variants, and for each operator in topological order the
// cheapest workers by compute cost per item (price/capacity) regardless of
// tier or network cost, until its demand is covered. Unlike the paper's FF it
// keeps A2, because this cost model prices A2 violations at +Inf (C_B).
type FirstFit struct{}

func (FirstFit) Name() string { return "first-fit" }
func (FirstFit) Doc() string {
	return "baseline (JellyBean 6.1 FF): most accurate variants, cheapest compute per item anywhere A2 allows"
}

func (FirstFit) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	start := time.Now()
	o = o.withDefaults()
	in, err := newInstance(p, o.CostModel)
	if err != nil {
		return nil, err
	}
	var pl *Plan
	if vars := in.mostAccurate(); vars != nil {
		s := newPartial(in)
		ok := true
		for _, op := range in.ix.topo {
			v := vars[op]
			ws := in.greedyFill(op, v, vars, s, func(int) bool { return true },
				func(w int, _, _ float64) float64 { return in.price[w] / in.caps[op][v][w] })
			if ws == nil || !in.place(op, v, ws, vars, s) {
				ok = false
				break
			}
		}
		if ok {
			pl = in.evaluate(s.sol(vars))
		}
	}
	return finish(ctx, in, pl, "first-fit", start, o)
}
