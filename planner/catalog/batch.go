package catalog

import (
	"math"
	"sort"
)

// Batches are the batch sizes ByBatch was measured at, smallest first.
func (l Latency) Batches() []int {
	var out []int
	for b := range l.ByBatch {
		out = append(out, b)
	}
	sort.Ints(out)
	return out
}

// BatchMs is the latency of one call of b rows at percentile p (50, 75,
// 90), in milliseconds: measured when b was profiled, else interpolated
// linearly between the two measured sizes around it, else (past the
// largest, or nothing measured) the per-item latency times b, the
// conservative end.
func (l Latency) BatchMs(b, p int) float64 {
	if b < 1 {
		b = 1
	}
	if x, ok := l.ByBatch[b]; ok {
		return x.At(p)
	}
	bs := l.Batches()
	i := sort.SearchInts(bs, b)
	switch {
	case len(bs) == 0 || i == len(bs):
		per := l.At(p)
		if len(bs) > 0 {
			last := bs[len(bs)-1]
			per = math.Max(per, l.ByBatch[last].At(p)/float64(last))
		}
		return per * float64(b)
	case i == 0:
		return l.ByBatch[bs[0]].At(p)
	}
	lo, hi := bs[i-1], bs[i]
	a, c := l.ByBatch[lo].At(p), l.ByBatch[hi].At(p)
	return a + (c-a)*float64(b-lo)/float64(hi-lo)
}

// PickBatch chooses the batch size of an ML operator under a latency
// budget (Jellyfish 4.1): a request may wait for a batch as long as the
// batch runs, so a batch of b rows needs 2*l(b) <= budgetMs (eq. 6), and
// its throughput b/l(b) must carry rate rows per second (eq. 7). Among the
// profiled sizes up to maxBatch that meet the budget it takes the smallest
// that carries the rate (the lowest latency that keeps up); when none
// does, the one with the highest throughput. ok is false when even one row
// does not fit the budget (the variant cannot meet the SLO), and b is then
// 1.
func (l Latency) PickBatch(p int, budgetMs, rate float64, maxBatch int) (b int, ok bool) {
	sizes := l.Batches()
	if len(sizes) == 0 {
		sizes = []int{1}
	}
	best, bestTput := 0, -1.0
	for _, s := range sizes {
		if maxBatch > 0 && s > maxBatch {
			break
		}
		ms := l.BatchMs(s, p)
		if 2*ms > budgetMs {
			continue
		}
		tput := float64(s) / ms * 1000
		if tput >= rate {
			return s, true
		}
		if tput > bestTput {
			best, bestTput = s, tput
		}
	}
	if best == 0 {
		return 1, false
	}
	return best, true
}
