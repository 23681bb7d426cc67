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
