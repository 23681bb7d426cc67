package sched

import (
	"sync"
	"time"
)

// ArrivalAlpha weighs the old period estimate against a new gap: the
// frames of a real-time stream come at a steady rate, jittered by the
// source's pacing and the batcher.
const ArrivalAlpha = 0.8

// Arrivals predicts when each query's next batch reaches the scheduler,
// from the gaps between its batches so far (a real-time stream is periodic:
// DeepQuery's future queries, estimated here rather than announced by the
// client), and how many rows it will hold. Safe for concurrent use.
type Arrivals struct {
	mu sync.Mutex
	by map[string]*arrival
}

type arrival struct {
	last   time.Time
	period float64 // seconds; 0 until two arrivals
	jitter float64 // EWMA of |gap - period|, seconds
	rows   float64
	n      int
}

// NewArrivals returns an empty predictor.
func NewArrivals() *Arrivals { return &Arrivals{by: map[string]*arrival{}} }

// Observe records a batch of rows rows of query arriving at t.
func (a *Arrivals) Observe(query string, t time.Time, rows int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	x := a.by[query]
	if x == nil {
		x = &arrival{}
		a.by[query] = x
	}
	if x.n > 0 {
		gap := t.Sub(x.last).Seconds()
		if x.period == 0 {
			x.period = gap
		} else {
			x.jitter = ArrivalAlpha*x.jitter + (1-ArrivalAlpha)*abs(gap-x.period)
			x.period = ArrivalAlpha*x.period + (1-ArrivalAlpha)*gap
		}
		x.rows = ArrivalAlpha*x.rows + (1-ArrivalAlpha)*float64(rows)
	} else {
		x.rows = float64(rows)
	}
	x.last = t
	x.n++
}

// Prediction is a query's next batch as the predictor sees it.
type Prediction struct {
	// Next is when the next batch should arrive; Period the gap between
	// batches; Rows its expected size (at least 1).
	Next   time.Time
	Period time.Duration
	Rows   int
	// Last is when the latest one arrived; Jitter how far a gap strays
	// from Period (smoothed).
	Last   time.Time
	Jitter time.Duration
}

// Predict returns query's next batch; ok is false before two arrivals.
func (a *Arrivals) Predict(query string) (Prediction, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	x := a.by[query]
	if x == nil || x.period <= 0 {
		return Prediction{}, false
	}
	p := secs(x.period)
	return Prediction{Next: x.last.Add(p), Period: p, Rows: max(1, int(x.rows+0.5)), Last: x.last, Jitter: secs(x.jitter)}, true
}

// Forget drops a query's history (it ended).
func (a *Arrivals) Forget(query string) {
	a.mu.Lock()
	delete(a.by, query)
	a.mu.Unlock()
}
