package optimize

import "context"

// PTE is the hypothetical PyTorch-on-the-edge baseline of JellyBean 6.1: PTC's
// machines (cloud GPUs, whole workflow, most accurate variants) pretended to
// sit where the data is, so it pays their price and no network at all ("PTC is
// equivalent to PTE plus networking costs"). It is not a deployable plan: the
// edge has no such machines; it shows the compute floor of end-to-end serving.
type PTE struct{}

func (PTE) Name() string { return "pte" }
func (PTE) Doc() string {
	return "baseline (JellyBean 6.1 PTE, hypothetical): PTC's cloud GPUs pretended at the sources, no network cost"
}

func (PTE) Optimize(ctx context.Context, p *Problem, o Options) (*Plan, error) {
	pl, err := endToEndBaseline(ctx, p, o, "pte", func(in *instance, vars []int) ([]int, []float64, int, string) {
		ws, share := in.cheapestCloud(vars)
		at := 0
		for s := range in.p.Sources {
			at = max(at, in.ix.sourceTier[s])
		}
		return ws, share, at, in.shortOfCloud(vars)
	})
	if err == nil && pl.Feasible {
		pl.Note = "hypothetical: the cloud GPUs are pretended to sit with the sources"
	}
	return pl, err
}
