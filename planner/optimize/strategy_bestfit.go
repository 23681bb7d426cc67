package optimize

import (
	"context"
	"time"
)

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
			if ws == nil || !in.place(op, v, ws, vars, s) {
				ok = false
				break
			}
		}
		if ok {
			pl = in.evaluate(s.sol(vars))
		}
	}
	return finish(ctx, in, pl, "best-fit", start, o)
}
