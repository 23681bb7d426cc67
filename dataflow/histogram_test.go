package dataflow

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The histogram's percentiles stay within a bucket's width (19%) of the exact
// ones, for durations spread over six orders of magnitude.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var c histCounters
	var ds []time.Duration
	for i := 0; i < 20000; i++ {
		d := time.Duration(float64(time.Microsecond) * (1 + rng.ExpFloat64()*float64(1+i%1000)))
		ds = append(ds, d)
		c.observe(d)
	}
	slices.Sort(ds)
	h := c.snapshot()
	if h.Count != uint64(len(ds)) {
		t.Fatalf("count %d, want %d", h.Count, len(ds))
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		exact := ds[max(0, int(q*float64(len(ds)))-1)]
		got := h.Quantile(q)
		if r := float64(got) / float64(exact); r < 0.81 || r > 1.19 {
			t.Errorf("q%.2f: %v, exact %v (ratio %.3f)", q, got, exact, r)
		}
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	if got, want := h.Mean(), sum/time.Duration(len(ds)); got != want {
		t.Errorf("mean %v, want %v", got, want)
	}
}

// Snapshots add up (a query's histogram is the sum of its instances') and
// survive the JSON of a worker's status report.
func TestHistogramAddAndJSON(t *testing.T) {
	var a, b histCounters
	for i := 1; i <= 100; i++ {
		a.observe(time.Duration(i) * time.Microsecond)
		b.observe(time.Duration(i) * time.Millisecond)
	}
	var sum Histogram
	sum.Add(a.snapshot())
	sum.Add(b.snapshot())
	raw, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Count != 200 {
		t.Fatalf("count %d, want 200", back.Count)
	}
	// Half the observations are at most 100 µs, half at least 1 ms.
	if p := back.Quantile(0.5); p > 120*time.Microsecond {
		t.Errorf("p50 %v, want about 100 µs", p)
	}
	if p := back.Quantile(0.51); p < 800*time.Microsecond {
		t.Errorf("p51 %v, want about 1 ms", p)
	}
	if (Histogram{}).Quantile(0.5) != 0 {
		t.Error("an empty histogram has no percentile")
	}
	if bucketOf(0) != 0 || bucketOf(time.Duration(1<<62)) != histBuckets-1 {
		t.Error("out-of-range durations land in the end buckets")
	}
}

// Cumulative counts every sample at or below each bound, as Prometheus's
// cumulative buckets do.
func TestHistogramCumulative(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond, time.Second} {
		h.AddSample(d)
	}
	got := h.Cumulative([]time.Duration{500 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond, 2 * time.Second})
	if fmt.Sprint(got) != "[0 1 3 4]" {
		t.Fatalf("cumulative %v, want [0 1 3 4]", got)
	}
}
