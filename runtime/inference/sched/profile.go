package sched

import (
	"math"
	"math/bits"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
)

// ProfileAlpha weighs the old estimate of a batch time against a new
// measurement (DeepQuery 5.1: D <- a*D + (1-a)*sample): runs on a shared CPU
// vary, and one slow run should not make every later prediction slow.
const ProfileAlpha = 0.8

// Profiles are the predicted run times of a batch, per session key and batch
// size: measured when a session opens (Measure), interpolated between the
// measured sizes, and corrected by every run (Observe). Safe for concurrent
// use.
//
// A key with a measured profile keeps its shape and is corrected by one
// factor, an EWMA of measured over predicted time: a run at any size tells
// how loaded the device is now, which holds for every size (most sizes a
// policy picks are run once, so a per-size EWMA would never learn). The
// EWMA is of the ratio's logarithm: on a CPU other processes share, one run
// in twenty takes ten times the others, and a plain mean would let each
// such run shrink every prediction's budget for the next dozen runs. A key
// without a measured profile learns each size it runs (DeepQuery's
// per-size EWMA).
//
// Batches in one band of sizes (1, 2-3, 4-7, ...: Band) that ran
// MinBandRuns times or more are corrected by their band's own EWMA instead:
// the shape measured when the session opened does not hold under every
// load. On this machine, with a real-time query's one-row runs and a
// best-effort query's parts of 5-30 rows on one session, the one factor
// learnt from both predicted the real-time runs 1.5x too slow and the
// parts a fifth too fast (bench shared's trace): the parts then overran
// into the real-time batches they were sized to end before.
type Profiles struct {
	mu    sync.Mutex
	byKy  map[string]map[int]float64 // key -> rows -> seconds
	base  map[string]bool            // keys measured by Measure
	scale map[string]float64         // EWMA of log(measured/predicted)
	// dev is the EWMA of |log ratio - scale|: how far one run strays
	// from the correction, what a fit within a budget must allow for.
	dev map[string]float64
	// recent are the latest RecentRuns log ratios (measured over the
	// uncorrected profile), oldest first: their quantile is the
	// conservative correction (Conservative).
	recent map[string][]float64
	// band is each key's EWMA of the log ratio per Band, and its runs.
	band  map[string]map[int]float64
	bandN map[string]map[int]int
}

// MinBandRuns is how many runs a band of sizes needs before its own
// correction replaces the key's.
const MinBandRuns = 4

// Band is the band of batch sizes rows falls in: floor(log2(rows)).
func Band(rows int) int { return bits.Len(uint(max(rows, 1))) - 1 }

// RecentRuns is how many runs of a key the conservative correction looks
// back on; MinRecent how many it needs before it speaks.
const (
	RecentRuns = 64
	MinRecent  = 8
)

// NewProfiles returns empty profiles.
func NewProfiles() *Profiles {
	return &Profiles{byKy: map[string]map[int]float64{}, base: map[string]bool{}, scale: map[string]float64{}, dev: map[string]float64{}, recent: map[string][]float64{},
		band: map[string]map[int]float64{}, bandN: map[string]map[int]int{}}
}

// Scale is the correction factor of key's measured profile (1: none yet).
func (p *Profiles) Scale(key string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return math.Exp(p.scale[key])
}

// Observe folds a measured run of rows rows into the profile.
func (p *Profiles) Observe(key string, rows int, d time.Duration) {
	if rows <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.base[key] {
		if pred := p.raw(key, rows); pred > 0 && d > 0 {
			s := p.scale[key]
			r := math.Log(d.Seconds() / pred)
			p.dev[key] = ProfileAlpha*p.dev[key] + (1-ProfileAlpha)*abs(r-s)
			p.scale[key] = ProfileAlpha*s + (1-ProfileAlpha)*r
			if p.band[key] == nil {
				p.band[key], p.bandN[key] = map[int]float64{}, map[int]int{}
			}
			b := Band(rows)
			if p.bandN[key][b] == 0 {
				p.band[key][b] = s // a new band starts from the key's correction
			}
			p.band[key][b] = ProfileAlpha*p.band[key][b] + (1-ProfileAlpha)*r
			p.bandN[key][b]++
			h := append(p.recent[key], r)
			if len(h) > RecentRuns {
				h = h[len(h)-RecentRuns:]
			}
			p.recent[key] = h
		}
		return
	}
	m := p.byKy[key]
	if m == nil {
		m = map[int]float64{}
		p.byKy[key] = m
	}
	s := d.Seconds()
	if old, ok := m[rows]; ok {
		s = ProfileAlpha*old + (1-ProfileAlpha)*s
	}
	m[rows] = s
}

// Predict is the expected run time of rows rows on key: the measured value,
// else a line between the two nearest measured sizes, else (beyond them)
// the nearest size scaled by rows. ok is false when the key has no
// measurement.
func (p *Profiles) Predict(key string, rows int) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.raw(key, rows)
	if s <= 0 {
		return 0, false
	}
	if _, ok := p.scale[key]; ok {
		s *= math.Exp(p.correction(key, rows))
	}
	return secs(s), true
}

// correction is the log factor a run of rows rows of key is corrected by:
// its band's, else the nearest band's (the lower on a tie) with
// MinBandRuns runs, else the key's. A size never run is more like the
// sizes near it than like the mix of all: a part of 40 rows beside 20-row
// parts and one-row real-time runs. Called with mu held.
func (p *Profiles) correction(key string, rows int) float64 {
	n, b := p.bandN[key], Band(rows)
	if len(n) == 0 {
		return p.scale[key]
	}
	for d := 0; d <= 64; d++ {
		if n[b-d] >= MinBandRuns {
			return p.band[key][b-d]
		}
		if n[b+d] >= MinBandRuns {
			return p.band[key][b+d]
		}
	}
	return p.scale[key]
}

// raw is the profile's seconds for rows, before the correction; 0 when
// key has no measurement. Called with mu held.
func (p *Profiles) raw(key string, rows int) float64 {
	m := p.byKy[key]
	if len(m) == 0 || rows <= 0 {
		return 0
	}
	if s, ok := m[rows]; ok {
		return s
	}
	sizes := make([]int, 0, len(m))
	for b := range m {
		sizes = append(sizes, b)
	}
	sort.Ints(sizes)
	i := sort.SearchInts(sizes, rows)
	switch {
	case i == 0:
		// Below the smallest: no faster than a linear share of it, no
		// slower than it (a batch costs at least its fixed part).
		b := sizes[0]
		return m[b] * max(float64(rows)/float64(b), 0.5)
	case i == len(sizes):
		b := sizes[len(sizes)-1]
		return m[b] * float64(rows) / float64(b)
	}
	lo, hi := sizes[i-1], sizes[i]
	f := float64(rows-lo) / float64(hi-lo)
	return m[lo] + f*(m[hi]-m[lo])
}

// Largest is the most rows (1..limit) of key predicted to run within
// budget even when the run is spread deviations (of the log ratio) slower
// than the corrected profile says, 0 when not even one row fits, limit
// when the key has no profile (nothing to judge by: the first run measures
// it).
func (p *Profiles) Largest(key string, limit int, budget time.Duration, spread float64) int {
	if _, ok := p.Predict(key, 1); !ok {
		return limit
	}
	p.mu.Lock()
	pess := math.Exp(spread * p.dev[key])
	p.mu.Unlock()
	budget = time.Duration(float64(budget) / pess)
	// Batch time grows with rows: binary search the largest that fits.
	lo, hi := 0, limit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if d, _ := p.Predict(key, mid); d <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Conservative is how much slower than Predict a run of key is at the
// q-quantile (0..1) of its recent runs: the q-quantile of the recent log
// ratios over the EWMA correction, at least 1. A budget divided by it
// holds for a share q of runs where the mean holds for about half: on a
// CPU other processes share, the runs that overrun are the ones that
// delay a real-time batch. 1 before MinRecent runs, or for a key without
// a measured profile.
func (p *Profiles) Conservative(key string, q float64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.recent[key]
	if len(h) < MinRecent || q <= 0 {
		return 1
	}
	xs := slices.Clone(h)
	sort.Float64s(xs)
	i := min(int(math.Ceil(min(q, 1)*float64(len(xs))))-1, len(xs)-1)
	return math.Exp(max(xs[max(i, 0)]-p.scale[key], 0))
}

// Sizes lists the batch sizes measured for key, ascending.
func (p *Profiles) Sizes(key string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for b := range p.byKy[key] {
		out = append(out, b)
	}
	sort.Ints(out)
	return out
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Measure runs sess on zero inputs at each batch size (after one warm-up
// run) and records the times: the profile a policy starts from. A session
// whose inputs are not all float32 tensors with a leading batch dimension
// and fixed others is left to be profiled by its runs.
func (p *Profiles) Measure(key string, sess ml.Session, sizes []int) error {
	ins := sess.Inputs()
	for _, in := range ins {
		if in.DType != ml.Float32 || len(in.Shape) == 0 {
			return nil
		}
		for _, d := range in.Shape[1:] {
			if d < 0 {
				return nil
			}
		}
		if in.Shape[0] > 0 {
			return nil // a fixed batch: nothing to vary
		}
	}
	run := func(b int) (time.Duration, error) {
		inputs := make([]ml.Tensor, len(ins))
		for i, in := range ins {
			shape := append([]int64{int64(b)}, in.Shape[1:]...)
			n := 1
			for _, d := range shape {
				n *= int(d)
			}
			inputs[i] = ml.Tensor{DType: ml.Float32, Shape: shape, F32: make([]float32, n)}
		}
		outs := make([]ml.Tensor, len(sess.Outputs()))
		for i, o := range sess.Outputs() {
			outs[i] = ml.Tensor{DType: o.DType}
		}
		start := time.Now()
		err := sess.Run(inputs, outs)
		return time.Since(start), err
	}
	for _, b := range sizes {
		if _, err := run(b); err != nil { // warm-up: the first run of a shape allocates
			return err
		}
		// The median of three: on a shared machine one run may catch
		// whatever else ran; Observe corrects the rest later.
		var ds []time.Duration
		for range 3 {
			d, err := run(b)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		p.mu.Lock()
		if p.byKy[key] == nil {
			p.byKy[key] = map[int]float64{}
		}
		p.byKy[key][b] = ds[1].Seconds()
		p.base[key] = true
		p.mu.Unlock()
	}
	// A larger batch never takes less time: a noisy measurement of a small
	// one is lifted to the larger one below it, so the profile stays
	// monotone (Largest searches it).
	p.mu.Lock()
	defer p.mu.Unlock()
	ordered := make([]int, 0, len(p.byKy[key]))
	for b := range p.byKy[key] {
		ordered = append(ordered, b)
	}
	sort.Ints(ordered)
	for i := 1; i < len(ordered); i++ {
		m := p.byKy[key]
		m[ordered[i]] = max(m[ordered[i]], m[ordered[i-1]])
	}
	return nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
