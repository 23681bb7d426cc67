package harness

import (
	"sort"
	"sync"
)

// queues hold the frames waiting for a worker, in deadline order: one per
// worker (a frame goes to the worker its schedule names), or one shared by
// all workers (EDF on the next free worker).
type queues struct {
	mu     sync.Mutex
	cond   *sync.Cond
	q      [][]*frame
	shared bool
	closed bool
	// dropped receives what pick dropped.
	dropped func([]*frame)
}

func newQueues(workers int, shared bool) *queues {
	n := workers
	if shared {
		n = 1
	}
	qs := &queues{q: make([][]*frame, n), shared: shared}
	qs.cond = sync.NewCond(&qs.mu)
	return qs
}

func (qs *queues) index(worker int) int {
	if qs.shared {
		return 0
	}
	return worker % len(qs.q)
}

func (qs *queues) push(f *frame) {
	qs.mu.Lock()
	i := qs.index(f.worker)
	q := qs.q[i]
	at := sort.Search(len(q), func(j int) bool { return q[j].deadline.After(f.deadline) })
	q = append(q, nil)
	copy(q[at+1:], q[at:])
	q[at] = f
	qs.q[i] = q
	qs.mu.Unlock()
	qs.cond.Broadcast()
}

// take waits for worker k's next batch as pick chooses it from the queue;
// nil once the queues are closed.
func (qs *queues) take(k int, pick func([]*frame) (batch, drop []*frame)) []*frame {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	i := qs.index(k)
	for {
		for len(qs.q[i]) == 0 && !qs.closed {
			qs.cond.Wait()
		}
		if qs.closed {
			return nil
		}
		batch, drop := pick(qs.q[i])
		if len(batch)+len(drop) > 0 {
			gone := map[*frame]bool{}
			for _, f := range batch {
				gone[f] = true
			}
			for _, f := range drop {
				gone[f] = true
			}
			rest := qs.q[i][:0:0]
			for _, f := range qs.q[i] {
				if !gone[f] {
					rest = append(rest, f)
				}
			}
			qs.q[i] = rest
		}
		if len(drop) > 0 && qs.dropped != nil {
			qs.dropped(drop)
		}
		if len(batch) > 0 {
			return batch
		}
	}
}

func (qs *queues) close() {
	qs.mu.Lock()
	qs.closed = true
	qs.mu.Unlock()
	qs.cond.Broadcast()
}
