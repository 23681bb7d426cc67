package optimize

import (
	"context"
	"fmt"
	"math"
)

// PTE is the hypothetical PyTorch-on-the-edge baseline of JellyBean 6.1: the
// whole workflow with the most accurate variants on GPU machines "pretended"
// to sit where the data is, paying their price and no network at all. The
// machine is PTC's kind, the cloud GPU cheapest per unit of whole-workflow
// throughput, in as many copies as the demand needs (pretended machines are
// not limited to the cloud's count), so PTC costs PTE plus the network
// whenever the cloud has enough of them. Not deployable: it shows the compute
// floor of end-to-end serving.
type PTE struct{}

func (PTE) Name() string { return "pte" }
func (PTE) Doc() string {
	return "baseline (JellyBean 6.1 PTE, hypothetical): copies of the cheapest cloud GPU pretended at the sources, no network cost"
}

func (PTE) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	n := 0
	pl, err := endToEndBaseline(ctx, p, o, "pte", func(in *instance, vars []int) ([]int, []float64, int, string) {
		best, cost := -1, math.Inf(1)
		for _, w := range in.cloudWorkers(vars) {
			if c := in.price[w] * in.workflowLoad(vars, w); c < cost {
				best, cost = w, c
			}
		}
		if best < 0 {
			return nil, nil, -1, in.shortOfCloud(vars)
		}
		ws := make([]int, 0, 4)
		for range int(math.Ceil(in.workflowLoad(vars, best) - 1e-9)) {
			ws = append(ws, best)
		}
		ws, share := in.fillWorkflow(vars, ws)
		n = len(ws)
		at := 0
		for s := range in.p.Sources {
			at = max(at, in.ix.sourceTier[s])
		}
		return ws, share, at, ""
	})
	if err == nil && pl.Feasible {
		pl.Note = fmt.Sprintf("hypothetical: %d cloud GPU machine(s) pretended to sit with the sources", n)
		if n > 1 {
			// Copies of one machine: number them, as they are not that worker.
			for i := range pl.Operators {
				for k := range pl.Operators[i].Workers {
					pl.Operators[i].Workers[k].Name += fmt.Sprintf("#%d", k+1)
				}
			}
		}
	}
	return pl, err
}
