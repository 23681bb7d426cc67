package physical

import (
	"time"

	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/optimize"
)

// LatencyPercentile is the latency profile a latency bound plans with: the
// slow end (Jellyfish plans with P99; the catalog keeps P90).
const LatencyPercentile = 90

// latencyBatching makes a query's LATENCY bound a planned objective for an
// ML operator (Jellyfish 3.3, 4.1): its compute budget is the bound minus
// the network time of one item from its sources (the edge's bytes at the
// tier link's bandwidth), and its batch size the one the variant's
// by-batch profile allows in that budget (catalog.Latency.PickBatch: a row
// may queue as long as a batch runs, and the batches must carry the
// rate). A call's or the catalog's own max_batch stays; without a by-batch
// profile nothing changes.
func latencyBatching(b *Batching, pr *optimize.Problem, sources []Source, st *lower.Stage, op *Operator, latencyMs, rate float64) {
	if b == nil || st.Model == nil || len(op.Workers) == 0 {
		return
	}
	v := st.Model.Variant(op.Variant)
	if v == nil {
		return
	}
	w := op.Workers[0]
	for _, x := range op.Workers {
		if x.ItemsPerSec > w.ItemsPerSec {
			w = x
		}
	}
	l, ok := v.Latency[w.Name]
	if !ok {
		l, ok = v.Latency[w.Type]
	}
	if !ok || len(l.ByBatch) == 0 {
		return
	}
	budget := latencyMs - networkMs(pr, sources, op, w.Tier)
	b.ComputeBudgetMs = budget
	if b.BatchFrom != "planner" {
		return
	}
	n, _ := l.PickBatch(LatencyPercentile, budget, rate, MaxPlannedBatch*2)
	b.MaxBatch, b.BatchFrom = n, "latency"
	// A row waits for its batch at most what the budget leaves after
	// running it twice (queueing behind one batch, then its own).
	if left := time.Duration((budget - 2*l.BatchMs(n, LatencyPercentile)) * float64(time.Millisecond)); left < b.MaxDelay {
		b.MaxDelay, b.DelayFrom = max(left, 0), "latency"
	}
}

// networkMs is the time one item takes from the operator's source inputs
// to tier: its KB over the tier link's bandwidth (0 on one tier, or when
// the link has no bandwidth cap). The KB is the edge's for the chosen
// variant: resized before the link when that variant takes smaller images.
func networkMs(pr *optimize.Problem, sources []Source, op *Operator, tier string) float64 {
	worst := 0.0
	for i := range pr.Edges {
		e := &pr.Edges[i]
		if e.To != op.Name {
			continue
		}
		for _, s := range sources {
			if s.Name != e.From || s.Tier == tier {
				continue
			}
			for _, tl := range pr.TierLinks {
				if tl.From == s.Tier && tl.To == tier && tl.BandwidthMBps > 0 {
					worst = max(worst, e.SizeKB("", op.Variant)/1024/tl.BandwidthMBps*1000)
				}
			}
		}
	}
	return worst
}
