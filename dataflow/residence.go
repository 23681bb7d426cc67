package dataflow

import (
	"sync"
	"time"
)

// ResidenceMeter is an Inbox that measures how long the batches it takes
// from other workers stay on this worker: from their arrival
// (Header.Arrived) to their results at a sink here, queueing, batching and
// the models' compute under whatever else the machine runs included.
// Residence is the longest such time completed since its last call (0:
// none). A transport hands it back to the batches' sender (the relay's
// acks), whose data adaptation then plans with the time the receiver
// measured rather than a profile's (operators/ml's sidePlan).
type ResidenceMeter interface {
	Residence() time.Duration
}

// residenceKeep bounds the arrivals a worker remembers: a batch whose
// result comes after this many later arrivals goes unmeasured, which
// at a stream's rates is seconds, past any latency bound.
const residenceKeep = 1024

// residence pairs the arrivals of a worker's remote batches with their
// results at its sinks by the batches' ingest stamp, which every operator
// passes on (a row-at-a-time operator the arriving batch's, a batcher its
// oldest row's, a window the latest it received): no operator carries a
// second stamp, and a result whose stamp never arrived from a link (a
// source on this worker) is simply not a sample.
type residence struct {
	mu      sync.Mutex
	arrived map[int64]int64 // ingest -> arrival, Unix ns on this worker's clock
	order   []int64         // their ingest stamps, oldest first
	longest time.Duration   // since the last take
}

func (r *residence) arrive(ingest, at int64) {
	if ingest == 0 || at == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.arrived == nil {
		r.arrived = make(map[int64]int64)
	}
	if _, ok := r.arrived[ingest]; ok {
		return // the first arrival of rows stamped so is the oldest
	}
	if len(r.order) >= residenceKeep {
		delete(r.arrived, r.order[0])
		r.order = r.order[1:]
	}
	r.arrived[ingest] = at
	r.order = append(r.order, ingest)
}

// finish takes a result stamped ingest written at now.
func (r *residence) finish(ingest, now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.arrived[ingest]; ok && now > at {
		r.longest = max(r.longest, time.Duration(now-at))
	}
}

func (r *residence) take() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.longest
	r.longest = 0
	return d
}
