package optimize

import "context"

// SPC is the Spark-on-the-cloud baseline of JellyBean 6.1: the inputs are
// shipped to the cloud and the whole workflow, with the most accurate
// variants, runs data parallel on all the cloud GPU workers of the setup (each
// takes a share of the items in proportion to its whole-workflow throughput),
// every one of them paid. Spark's own overhead over PyTorch (the paper measures
// it) is not in this cost model: SPC here is PTC with every cloud GPU kept.
type SPC struct{}

func (SPC) Name() string { return "spc" }
func (SPC) Doc() string {
	return "baseline (JellyBean 6.1 SPC): whole workflow data parallel on all cloud GPUs, most accurate variants"
}

func (SPC) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	return endToEndBaseline(ctx, p, o, "spc", func(in *instance, vars []int) ([]int, []float64, int, string) {
		ws := in.cloudWorkers(vars)
		tp := 0.0
		for _, w := range ws {
			tp += 1 / in.workflowLoad(vars, w)
		}
		if len(ws) == 0 || tp < 1-1e-9 {
			return nil, nil, -1, in.shortOfCloud(vars)
		}
		share := make([]float64, len(ws))
		for k, w := range ws {
			share[k] = 1 / in.workflowLoad(vars, w) / tp
		}
		return ws, share, -1, ""
	})
}
