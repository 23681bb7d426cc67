package ml

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// sim is a discrete-event harness: a generator pushes rows at given times, a model
// takes service(n) per batch, and the batcher decides. No wall clock is involved,
// so the run is exactly reproducible.
type sim struct {
	batches []int
	delays  []time.Duration // queue delay of every row, in order
	starts  []time.Duration // start time of every batch
}

func runSim(t *testing.T, b *Batcher, arrivals []time.Duration, service func(n int) time.Duration) sim {
	t.Helper()
	var s sim
	t0 := time.Unix(0, 0)
	var waiting []time.Duration // arrival times of queued rows, FIFO
	now, busyUntil := time.Duration(0), time.Duration(0)
	next := 0
	for steps := 0; next < len(arrivals) || len(waiting) > 0; steps++ {
		if steps > 10*len(arrivals)+1000 {
			t.Fatal("simulation does not progress")
		}
		for next < len(arrivals) && arrivals[next] <= now {
			b.Push(t0.Add(arrivals[next]), 1)
			waiting = append(waiting, arrivals[next])
			next++
		}
		if now >= busyUntil {
			if n := b.Cut(t0.Add(now)); n > 0 {
				if n > len(waiting) {
					t.Fatalf("cut %d rows with %d queued", n, len(waiting))
				}
				for _, a := range waiting[:n] {
					s.delays = append(s.delays, now-a)
				}
				waiting = waiting[n:]
				d := service(n)
				b.Observe(n, d)
				s.batches = append(s.batches, n)
				s.starts = append(s.starts, now)
				busyUntil = now + d
			}
		}
		// Advance to the next event: an arrival, the model going free, or the
		// oldest row's deadline.
		cand := []time.Duration{}
		if next < len(arrivals) {
			cand = append(cand, arrivals[next])
		}
		if busyUntil > now {
			cand = append(cand, busyUntil)
		} else if dl, ok := b.Deadline(); ok {
			cand = append(cand, dl.Sub(t0))
		}
		if len(cand) == 0 {
			break
		}
		now = max(slices.Min(cand), now)
	}
	return s
}

func steady(rate float64, from, to time.Duration) []time.Duration {
	var out []time.Duration
	step := time.Duration(float64(time.Second) / rate)
	for at := from; at < to; at += step {
		out = append(out, at)
	}
	return out
}

// linear is a model whose batch of n takes fixed + n*perRow.
func linear(fixed, perRow time.Duration) func(int) time.Duration {
	return func(n int) time.Duration { return fixed + time.Duration(n)*perRow }
}

func maxDur(ds []time.Duration) time.Duration { return slices.Max(ds) }

func meanDur(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

func median(xs []int) int {
	c := slices.Clone(xs)
	slices.Sort(c)
	return c[len(c)/2]
}

func TestAdaptiveBatchKeepsQueueDelayUnderMax(t *testing.T) {
	const maxDelay = 10 * time.Millisecond
	model := linear(2*time.Millisecond, 250*time.Microsecond) // stable from b=4 at 1000/s
	b, err := NewBatcher(BatchConfig{MaxBatch: 64, MaxDelay: maxDelay, Adaptive: true})
	if err != nil {
		t.Fatal(err)
	}
	s := runSim(t, b, steady(1000, 0, 2*time.Second), model)
	if got := maxDur(s.delays); got > maxDelay {
		t.Errorf("max queue delay %s > %s", got, maxDelay)
	}
	// After warm-up the batch is the smallest one the model keeps up with at 80%
	// utilisation: 2ms + 0.25ms*b <= 0.8*b ms -> b >= 4.
	late := s.batches[len(s.batches)/2:]
	t.Logf("first batches %v, steady %v, max delay %s, mean %s", s.batches[:12], late[:8], maxDur(s.delays), meanDur(s.delays))
	if m := median(late); m < 4 || m > 6 {
		t.Errorf("steady batch size %d, want 4..6 (batches %v)", m, late[:10])
	}
	if b.Target() < 4 || b.Target() > 6 {
		t.Errorf("target %d", b.Target())
	}
	if r := b.Rate(); r < 950 || r > 1050 {
		t.Errorf("measured rate %.0f rows/s, want ~1000", r)
	}
}

func TestAdaptiveBatchFollowsRate(t *testing.T) {
	const maxDelay = 20 * time.Millisecond
	model := linear(2*time.Millisecond, 100*time.Microsecond)
	b, err := NewBatcher(BatchConfig{MaxBatch: 64, MaxDelay: maxDelay, Adaptive: true})
	if err != nil {
		t.Fatal(err)
	}
	arr := append(steady(500, 0, time.Second), steady(4000, time.Second, 2*time.Second)...)
	s := runSim(t, b, arr, model)
	if got := maxDur(s.delays); got > maxDelay {
		t.Errorf("max queue delay %s > %s", got, maxDelay)
	}
	var slow, fast []int
	for i, st := range s.starts {
		switch {
		case st > 500*time.Millisecond && st < time.Second:
			slow = append(slow, s.batches[i])
		case st > 1500*time.Millisecond:
			fast = append(fast, s.batches[i])
		}
	}
	ms, mf := median(slow), median(fast)
	t.Logf("500/s batches %v; 4000/s batches %v; max delay %s", slow[:6], fast[:6], maxDur(s.delays))
	// 500/s: 2+0.1b <= 0.8*b/0.5 ms -> b >= 2; 4000/s: 2+0.1b <= 0.2b ms -> b >= 20.
	if ms < 2 || ms > 3 || mf < 20 || mf > 24 {
		t.Errorf("median batch %d at 500/s (want 2..3), %d at 4000/s (want 20..24)", ms, mf)
	}
}

// The baselines show the harness can fail: without batching the queue grows
// without bound, and Triton's fixed target makes every row wait the full delay.
func TestBaselinesMissWhatAdaptiveMeets(t *testing.T) {
	const maxDelay = 10 * time.Millisecond
	model := linear(2*time.Millisecond, 250*time.Microsecond)
	arr := steady(1000, 0, time.Second)

	one, _ := NewBatcher(BatchConfig{MaxBatch: 1, MaxDelay: maxDelay})
	if got := maxDur(runSim(t, one, arr, model).delays); got <= maxDelay {
		t.Errorf("batch 1 cannot keep up with 1000/s at 2.25ms a row, yet max delay %s", got)
	}
	triton, _ := NewBatcher(BatchConfig{MaxBatch: 64, MaxDelay: maxDelay})
	st := runSim(t, triton, arr, model)
	adaptive, _ := NewBatcher(BatchConfig{MaxBatch: 64, MaxDelay: maxDelay, Adaptive: true})
	sa := runSim(t, adaptive, arr, model)
	t.Logf("mean/max queue delay: triton %s/%s, adaptive %s/%s", meanDur(st.delays), maxDur(st.delays), meanDur(sa.delays), maxDur(sa.delays))
	if meanDur(sa.delays) >= meanDur(st.delays)/2 {
		t.Errorf("adaptive mean delay %s should be well under the fixed target's %s", meanDur(sa.delays), meanDur(st.delays))
	}
	if maxDur(st.delays) > maxDelay+model(64) {
		t.Errorf("triton max delay %s", maxDur(st.delays))
	}
}

func TestCutOnSizeOrDelay(t *testing.T) {
	t0 := time.Unix(100, 0)
	b, err := NewBatcher(BatchConfig{MaxBatch: 4, MaxDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.Push(t0, 3)
	if n := b.Cut(t0.Add(time.Millisecond)); n != 0 {
		t.Fatalf("cut %d before size or delay", n)
	}
	if dl, ok := b.Deadline(); !ok || !dl.Equal(t0.Add(5*time.Millisecond)) {
		t.Fatalf("deadline %v", dl)
	}
	if n := b.Cut(t0.Add(5 * time.Millisecond)); n != 3 {
		t.Fatalf("delay cut took %d, want 3", n)
	}
	b.Push(t0.Add(6*time.Millisecond), 2)
	b.Push(t0.Add(7*time.Millisecond), 7)
	if n := b.Cut(t0.Add(7 * time.Millisecond)); n != 4 {
		t.Fatalf("size cut took %d, want 4", n)
	}
	if old, _ := b.Oldest(); !old.Equal(t0.Add(7 * time.Millisecond)) {
		t.Fatalf("oldest after a partial take: %v", old)
	}
	if n := b.Cut(t0.Add(7 * time.Millisecond)); n != 4 || b.Queued() != 1 {
		t.Fatalf("second size cut %d, queued %d", n, b.Queued())
	}
}

func TestEstimateInterpolates(t *testing.T) {
	b, _ := NewBatcher(BatchConfig{MaxBatch: 16})
	if _, ok := b.Estimate(3); ok {
		t.Fatal("estimate without measurements")
	}
	b.Observe(2, 2*time.Millisecond)
	if d, _ := b.Estimate(4); d != 4*time.Millisecond {
		t.Errorf("one point scales per row: %s", d)
	}
	b.Observe(10, 6*time.Millisecond)
	if d, _ := b.Estimate(6); d != 4*time.Millisecond {
		t.Errorf("interpolated %s, want 4ms", d)
	}
	if d, _ := b.Estimate(14); d != 8*time.Millisecond {
		t.Errorf("extrapolated %s, want 8ms", d)
	}
	b.Observe(2, 4*time.Millisecond) // smoothed: 0.7*2 + 0.3*4 = 2.6ms
	if d, _ := b.Estimate(2); d < 2590*time.Microsecond || d > 2610*time.Microsecond {
		t.Errorf("smoothed %s, want 2.6ms", d)
	}
}

func TestBatchConfigErrors(t *testing.T) {
	for _, c := range []BatchConfig{{MaxBatch: -1}, {MaxDelay: -time.Second}, {Utilization: 2}} {
		if _, err := NewBatcher(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: want ErrConfig, got %v", c, err)
		}
	}
}
