package optimize

import "context"

// BestFit is the Best Fit baseline of JellyBean 6.1 (geo-distributed database
// placement, to cut network cost): the most accurate variants, and for each
// operator in topological order the cheapest workers (compute per item) in the
// tier its input already sits in (its sources' tier or its parents' highest
// worker tier), moving one tier up only when that tier cannot cover the demand.
type BestFit struct{}

func (BestFit) Name() string { return "best-fit" }
func (BestFit) Doc() string {
	return "baseline (JellyBean 6.1 BF): most accurate variants, cheapest workers in the tier of the input first"
}

func (BestFit) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	return fitBaseline(ctx, p, o, "best-fit", func(in *instance, s *partial, op, v int, vars []int) []int {
		home := 0
		for _, e := range in.ix.in[op] {
			if e.src >= 0 {
				home = max(home, in.ix.sourceTier[e.src])
				continue
			}
			for _, w := range s.ws[e.from] {
				home = max(home, in.ix.workerTier[w])
			}
		}
		var ws []int
		for top := home; top < len(in.p.Tiers) && ws == nil; top++ {
			ws = in.greedyFill(op, v, vars, s, func(w int) bool { return in.ix.workerTier[w] <= top },
				func(w int, _, _ float64) float64 {
					// Home tier first, then each tier up; cheapest compute within.
					return float64(in.ix.workerTier[w]-home)*1e12 + in.price[w]/in.caps[op][v][w]
				})
		}
		return ws
	})
}
