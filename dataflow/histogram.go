package dataflow

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histBuckets covers durations up to 2^40 ns (18 minutes) at four buckets per
// power of two.
const (
	histSub     = 4
	histBuckets = 40 * histSub
)

// Histogram is a snapshot of durations counted in log-spaced buckets, four per
// power of two, so a percentile read from it is within 19% of the true value.
// Snapshots of several instances add up, which is how a query's latency
// percentiles are made from its workers' reports.
type Histogram struct {
	// Buckets holds the non-empty buckets by index (see bucketOf).
	Buckets map[int]uint64 `json:"buckets,omitempty"`
	Count   uint64         `json:"count"`
	SumNs   uint64         `json:"sum_ns"`
}

// bucketOf is the bucket of d: 4·⌊log2 d⌋ plus the two bits after the
// leading one.
func bucketOf(d time.Duration) int {
	ns := uint64(max(d, 1))
	lg := 63 - bits.LeadingZeros64(ns)
	sub := 0
	if lg >= 2 {
		sub = int(ns>>(lg-2)) & (histSub - 1)
	} else {
		sub = int(ns<<(2-lg)) & (histSub - 1)
	}
	return min(lg*histSub+sub, histBuckets-1)
}

// bucketMid is a representative duration of bucket i: the middle of its range.
func bucketMid(i int) time.Duration {
	lg, sub := i/histSub, i%histSub
	lo := math.Ldexp(1+float64(sub)/histSub, lg)
	hi := math.Ldexp(1+float64(sub+1)/histSub, lg)
	return time.Duration((lo + hi) / 2)
}

// Add adds o's counts to h.
func (h *Histogram) Add(o Histogram) {
	if len(o.Buckets) > 0 && h.Buckets == nil {
		h.Buckets = make(map[int]uint64, len(o.Buckets))
	}
	for i, n := range o.Buckets {
		h.Buckets[i] += n
	}
	h.Count += o.Count
	h.SumNs += o.SumNs
}

// Quantile is the duration at quantile q in [0, 1] (0 when empty).
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.Count)))
	rank = max(rank, 1)
	var seen uint64
	for i := 0; i < histBuckets; i++ {
		seen += h.Buckets[i]
		if seen >= rank {
			return bucketMid(i)
		}
	}
	return bucketMid(histBuckets - 1)
}

// Mean is the average duration (0 when empty).
func (h Histogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return time.Duration(h.SumNs / h.Count)
}

// histCounters is the live, lock-free side of a Histogram.
type histCounters struct {
	b     [histBuckets]atomic.Uint64
	count atomic.Uint64
	sum   atomic.Uint64
}

func (c *histCounters) observe(d time.Duration) { c.observeN(d, 1) }

// observeN counts n samples of d (the rows of one batch, which share its
// ingest time).
func (c *histCounters) observeN(d time.Duration, n uint64) {
	c.b[bucketOf(d)].Add(n)
	c.count.Add(n)
	c.sum.Add(uint64(max(d, 0)) * n)
}

func (c *histCounters) snapshot() Histogram {
	h := Histogram{Count: c.count.Load(), SumNs: c.sum.Load()}
	for i := range c.b {
		if n := c.b[i].Load(); n > 0 {
			if h.Buckets == nil {
				h.Buckets = map[int]uint64{}
			}
			h.Buckets[i] = n
		}
	}
	return h
}

// AddSample counts one sample of d (for histograms built outside the
// engine: tests, benchmarks).
func (h *Histogram) AddSample(d time.Duration) {
	if h.Buckets == nil {
		h.Buckets = map[int]uint64{}
	}
	h.Buckets[bucketOf(d)]++
	h.Count++
	h.SumNs += uint64(max(d, 0))
}

// bucketHi is the upper end of bucket i's range.
func bucketHi(i int) time.Duration {
	lg, sub := i/histSub, i%histSub
	return time.Duration(math.Ldexp(1+float64(sub+1)/histSub, lg))
}

// Cumulative counts, for each bound, the samples in buckets that end at or
// below it: a Prometheus histogram's cumulative buckets, exact at bucket
// edges and conservative (counted in the next bound) in between.
func (h Histogram) Cumulative(bounds []time.Duration) []uint64 {
	out := make([]uint64, len(bounds))
	for i, n := range h.Buckets {
		hi := bucketHi(i)
		for j, b := range bounds {
			if hi <= b {
				out[j] += n
			}
		}
	}
	return out
}
