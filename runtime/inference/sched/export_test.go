package sched

import "time"

// Test hooks: the batches running, the requests queued (waiting or
// running), and a clock tests move by hand.

func RunningBatches(s *Scheduler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

func Requests(s *Scheduler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queues {
		n += len(q.Pending)
	}
	return n
}

func SetClock(s *Scheduler, now func() time.Time) {
	s.mu.Lock()
	s.now = now
	s.mu.Unlock()
}

// SetTook has the scheduler measure each part's run by took (rows, the
// part's) instead of the wall clock.
func SetTook(s *Scheduler, took func(rows int) time.Duration) {
	s.mu.Lock()
	s.took = func(_ time.Time, rows int) time.Duration { return took(rows) }
	s.mu.Unlock()
}

// SetMeasured replaces key's measured profile (as Measure leaves it, with no
// correction yet): a test that compares sizes near each other cannot rely
// on a noisy machine's timings of 8 and 16 rows differing.
func SetMeasured(p *Profiles, key string, runs map[int]time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[int]float64{}
	for rows, d := range runs {
		m[rows] = d.Seconds()
	}
	p.byKy[key], p.base[key] = m, true
	delete(p.scale, key)
	delete(p.dev, key)
	delete(p.band, key)
	delete(p.bandN, key)
	delete(p.recent, key)
}
