package optimize

import "context"

// PTC is the PyTorch-on-the-cloud baseline of JellyBean 6.1: the whole workflow
// with the most accurate variants on cloud GPU workers (data parallel, every
// worker runs every operator), the ones cheapest per unit of whole-workflow
// throughput first, as many as the demand needs; the raw inputs travel from
// the sources to the cloud. The paper's "single GPU worker" when one carries
// the demand.
type PTC struct{}

func (PTC) Name() string { return "ptc" }
func (PTC) Doc() string {
	return "baseline (JellyBean 6.1 PTC): whole workflow on the cheapest cloud GPUs, most accurate variants, inputs shipped to the cloud"
}

func (PTC) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	return endToEndBaseline(ctx, p, o, "ptc", func(in *instance, vars []int) ([]int, []float64, int, string) {
		ws, share := in.cheapestCloud(vars)
		return ws, share, -1, in.shortOfCloud(vars)
	})
}
