package ml

import (
	"fmt"
	"math"
	"time"
)

// BatchConfig is the dynamic batching policy of one operator, after Triton's
// dynamic batcher: a batch is cut when it reaches the target size or when its
// oldest row has waited MaxDelay, whichever comes first.
type BatchConfig struct {
	// MaxBatch caps the rows of one batch (default 32).
	MaxBatch int
	// MaxDelay is the longest a row may wait in the queue before its batch is cut
	// (default 5ms). Zero is not "no wait": use 1ns to cut whatever is queued.
	MaxDelay time.Duration
	// Adaptive sizes batches from the measured input rate and batch latencies so
	// that the queue keeps up with the input and rows wait less than MaxDelay
	// (DeepQuery 4.4); without it the target is always MaxBatch (Triton).
	Adaptive bool
	// Utilization is the share of time the model may be busy at the chosen batch
	// size (default 0.8): the headroom that absorbs jitter.
	Utilization float64
}

func (c BatchConfig) withDefaults() (BatchConfig, error) {
	if c.MaxBatch == 0 {
		c.MaxBatch = 32
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 5 * time.Millisecond
	}
	if c.Utilization == 0 {
		c.Utilization = 0.8
	}
	if c.MaxBatch < 0 || c.MaxDelay < 0 || c.Utilization < 0 || c.Utilization > 1 {
		return c, fmt.Errorf("%w: batching max batch %d, max delay %s, utilization %g", ErrConfig, c.MaxBatch, c.MaxDelay, c.Utilization)
	}
	return c, nil
}

// Batcher decides when to cut a batch and how big. It is a pure state machine
// over explicit times: the caller pushes arrivals, asks for a cut whenever the
// model is free, and reports how long each batch took. So it is driven by a
// wall clock in the operator and by a simulated clock in tests.
type Batcher struct {
	cfg    BatchConfig
	queue  []arrival // FIFO runs of rows that arrived together
	head   int       // rows of queue[0] already taken
	queued int

	// input rate, rows per second, measured over windows of MaxDelay
	rate       float64
	winStart   time.Time
	winRows    int
	haveWindow bool
	haveRate   bool
	lat        []latencyEst // by batch size
	target     int
}

type arrival struct {
	at   time.Time
	rows int
}

// latencyEst is the smoothed processing time of one batch size (DeepQuery: D_b <-
// a*D_b + (1-a)*sample).
type latencyEst struct {
	d    float64 // seconds
	seen bool
	fast float64 // the fastest run seen, seconds
}

const latencySmoothing = 0.7 // weight of the old estimate
const rateSmoothing = 0.7

// NewBatcher returns a batcher for cfg (defaults filled in).
func NewBatcher(cfg BatchConfig) (*Batcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Batcher{cfg: cfg, lat: make([]latencyEst, cfg.MaxBatch+1), target: cfg.MaxBatch}
	if cfg.Adaptive {
		b.target = 1 // nothing is known yet: do not make anyone wait
	}
	return b, nil
}

// Config is the policy with defaults filled in.
func (b *Batcher) Config() BatchConfig { return b.cfg }

// Push records rows arriving at now.
func (b *Batcher) Push(now time.Time, rows int) {
	if rows <= 0 {
		return
	}
	b.queue = append(b.queue, arrival{now, rows})
	b.queued += rows
	b.observeRate(now, rows)
}

func (b *Batcher) observeRate(now time.Time, rows int) {
	if !b.haveWindow {
		b.winStart, b.winRows, b.haveWindow = now, rows, true
		return
	}
	el := now.Sub(b.winStart)
	if el < b.cfg.MaxDelay {
		b.winRows += rows
		return
	}
	// The rows of this push arrived at the end of the window: they close it and
	// open the next.
	inst := float64(b.winRows) / el.Seconds()
	if b.haveRate {
		b.rate = rateSmoothing*b.rate + (1-rateSmoothing)*inst
	} else {
		b.rate, b.haveRate = inst, true
	}
	b.winStart, b.winRows = now, rows
	b.retarget()
}

// Queued is the number of rows waiting.
func (b *Batcher) Queued() int { return b.queued }

// Deadline is when the oldest waiting row reaches MaxDelay; ok is false when the
// queue is empty.
func (b *Batcher) Deadline() (t time.Time, ok bool) {
	if b.queued == 0 {
		return time.Time{}, false
	}
	return b.queue[0].at.Add(b.cfg.MaxDelay), true
}

// Cut is called when the model is free. It returns how many rows to run now (0:
// keep waiting) and removes them from the queue, oldest first, along with the
// arrival time of each run taken (for queue-delay accounting).
func (b *Batcher) Cut(now time.Time) int {
	if b.queued == 0 {
		return 0
	}
	due := !now.Before(b.queue[0].at.Add(b.cfg.MaxDelay))
	if b.queued < b.target && !due {
		return 0
	}
	n := min(b.queued, b.cfg.MaxBatch)
	b.take(n)
	return n
}

// Flush takes up to MaxBatch waiting rows regardless of size and delay (the input
// has ended) and returns how many.
func (b *Batcher) Flush() int {
	n := min(b.queued, b.cfg.MaxBatch)
	b.take(n)
	return n
}

// Oldest is the arrival time of the oldest waiting row.
func (b *Batcher) Oldest() (time.Time, bool) {
	if b.queued == 0 {
		return time.Time{}, false
	}
	return b.queue[0].at, true
}

func (b *Batcher) take(n int) {
	b.queued -= n
	for n > 0 {
		a := &b.queue[0]
		left := a.rows - b.head
		if n < left {
			b.head += n
			return
		}
		n -= left
		b.head = 0
		b.queue = b.queue[1:]
	}
	if len(b.queue) == 0 {
		b.queue = b.queue[:0:0] // let the backing array go once drained
	}
}

// Observe records that a batch of n rows took d to process.
func (b *Batcher) Observe(n int, d time.Duration) {
	if n <= 0 || n > b.cfg.MaxBatch {
		return
	}
	e := &b.lat[n]
	if e.seen {
		e.d = latencySmoothing*e.d + (1-latencySmoothing)*d.Seconds()
		e.fast = min(e.fast, d.Seconds())
	} else {
		e.d, e.seen, e.fast = d.Seconds(), true, d.Seconds()
	}
	b.retarget()
}

// Target is the batch size the batcher waits for (MaxBatch when not adaptive).
func (b *Batcher) Target() int { return b.target }

// Rate is the measured input rate in rows per second (0 before the first window).
func (b *Batcher) Rate() float64 { return b.rate }

// Estimate is the predicted processing time of a batch of n rows: the measurement
// for n, else a linear interpolation between the nearest measured sizes, else a
// linear extrapolation from the two nearest, else per-row scaling from the one
// measured size (pessimistic: assumes batching gains nothing). ok is false when
// nothing was measured.
func (b *Batcher) Estimate(n int) (time.Duration, bool) {
	s, ok := b.estimate(n)
	return time.Duration(s * float64(time.Second)), ok
}

// Fastest is the fastest run of n rows seen, else Estimate(n).
func (b *Batcher) Fastest(n int) (time.Duration, bool) {
	if n >= 1 && n < len(b.lat) && b.lat[n].seen {
		return time.Duration(b.lat[n].fast * float64(time.Second)), true
	}
	return b.Estimate(n)
}

func (b *Batcher) estimate(n int) (float64, bool) {
	if n >= 1 && n < len(b.lat) && b.lat[n].seen {
		return b.lat[n].d, true
	}
	lo, hi := -1, -1
	for i := n - 1; i >= 1 && i < len(b.lat); i-- {
		if b.lat[i].seen {
			lo = i
			break
		}
	}
	for i := max(n+1, 1); i < len(b.lat); i++ {
		if b.lat[i].seen {
			hi = i
			break
		}
	}
	line := func(x0, x1 int) float64 {
		y0, y1 := b.lat[x0].d, b.lat[x1].d
		return y0 + (y1-y0)*float64(n-x0)/float64(x1-x0)
	}
	switch {
	case lo > 0 && hi > 0:
		return line(lo, hi), true
	case lo > 0:
		for i := lo - 1; i >= 1; i-- {
			if b.lat[i].seen {
				return math.Max(line(i, lo), b.lat[lo].d), true
			}
		}
		return b.lat[lo].d * float64(n) / float64(lo), true
	case hi > 0:
		for i := hi + 1; i < len(b.lat); i++ {
			if b.lat[i].seen {
				return math.Max(line(hi, i), 0), true
			}
		}
		return b.lat[hi].d * float64(n) / float64(hi), true
	}
	return 0, false
}

// retarget picks the smallest batch the model can keep up with at the measured
// rate, with Utilization headroom: D(b) <= u*b/rate. The smallest such batch is
// also the one whose rows wait least to fill it ((b-1)/rate). When no size is
// predicted to keep up, the target doubles (up to MaxBatch: the most throughput,
// with MaxDelay still bounding the wait).
func (b *Batcher) retarget() {
	if !b.cfg.Adaptive || !b.haveRate || b.rate <= 0 {
		return
	}
	// Until some size is predicted to keep up, grow the target geometrically:
	// predictions beyond the measured sizes are pessimistic (per-row scaling), and
	// measuring the next size corrects them without a jump to MaxBatch.
	t := min(b.cfg.MaxBatch, 2*b.target)
	for n := 1; n <= b.cfg.MaxBatch; n++ {
		d, ok := b.estimate(n)
		if !ok {
			return // no latency yet: keep the current target
		}
		if d <= b.cfg.Utilization*float64(n)/b.rate {
			t = n
			break
		}
	}
	// A batch that takes longer to fill than MaxDelay is cut by the delay
	// anyway; waiting for it only adds the fill time to every batch.
	if fill := 1 + int(b.rate*b.cfg.MaxDelay.Seconds()); t > fill {
		t = max(fill, 1)
	}
	b.target = t
}
