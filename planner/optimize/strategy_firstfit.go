package optimize

import "context"

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
	return fitBaseline(ctx, p, o, "first-fit", func(in *instance, s *partial, op, v int, vars []int) []int {
		return in.greedyFill(op, v, vars, s, func(int) bool { return true },
			func(w int, _, _ float64) float64 { return in.price[w] / in.caps[op][v][w] })
	})
}
