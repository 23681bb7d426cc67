package ml

import (
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Result is one output record, in the order its input was submitted.
type Result struct {
	Record arrow.Record // input columns + output columns + error column; caller releases
	Tag    any          // the tag given to Submit (a timestamp, a sequence number)
	Err    error        // a whole-record failure (wrong schema); Record is nil then
}

// RunnerStats describe the batches a Runner ran.
type RunnerStats struct {
	Batches       int
	Rows          int
	MaxBatch      int
	MaxQueueDelay time.Duration // longest wait of a row from Submit to its batch start
	Target        int           // the batcher's current target size
	Rate          float64       // measured input rows per second
}

// Runner is the ML operator's execution loop: records are submitted as they come,
// rows are batched across records by the Batcher (cut on size or delay, adaptive
// when configured), batches run on the Model one at a time, and each input record
// comes back as one output record, in submission order, once all its rows ran.
type Runner struct {
	m   *Model
	b   *Batcher
	mem memory.Allocator
	now func() time.Time

	in      chan submission
	out     chan Result
	closeMu sync.Mutex
	closed  bool
	done    chan struct{}

	jobs  []*jobState // FIFO: submitted, not yet emitted
	mu    sync.Mutex
	stats RunnerStats
}

type submission struct {
	rec arrow.Record
	tag any
	at  time.Time
}

type jobState struct {
	j     *job
	tag   any
	taken int // rows handed to batches
	err   error
}

// NewRunner starts the loop. mem allocates the output columns.
func NewRunner(m *Model, mem memory.Allocator, cfg BatchConfig) (*Runner, error) {
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = m.MaxBatch()
	}
	cfg.MaxBatch = min(cfg.MaxBatch, max(m.MaxBatch(), 1))
	b, err := NewBatcher(cfg)
	if err != nil {
		return nil, err
	}
	r := &Runner{m: m, b: b, mem: mem, now: time.Now,
		in: make(chan submission, 64), out: make(chan Result, 64), done: make(chan struct{})}
	go r.loop()
	return r, nil
}

// Submit queues rec (retained until its result is emitted). It blocks when the
// input queue is full: that is the operator's backpressure.
func (r *Runner) Submit(rec arrow.Record, tag any) error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return ErrClosed
	}
	rec.Retain()
	r.in <- submission{rec: rec, tag: tag, at: r.now()}
	return nil
}

// Results delivers the outputs in submission order; it is closed after Close once
// every submitted record has come back.
func (r *Runner) Results() <-chan Result { return r.out }

// Close ends the input: queued rows are run without waiting for MaxDelay.
func (r *Runner) Close() {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.in)
	}
}

// Stats returns a snapshot of the batches run so far.
func (r *Runner) Stats() RunnerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

func (r *Runner) loop() {
	defer close(r.out)
	open := true
	var timer *time.Timer
	for open || r.b.Queued() > 0 {
		if open {
			var timeout <-chan time.Time
			if dl, ok := r.b.Deadline(); ok {
				if timer == nil {
					timer = time.NewTimer(time.Until(dl))
				} else {
					timer.Reset(time.Until(dl))
				}
				timeout = timer.C
			}
			select {
			case s, ok := <-r.in:
				if !ok {
					open = false
				} else {
					r.accept(s)
				}
			case <-timeout:
			}
			// Take everything already waiting, so one cut sees it all.
		drain:
			for open {
				select {
				case s, ok := <-r.in:
					if !ok {
						open = false
						break drain
					}
					r.accept(s)
				default:
					break drain
				}
			}
		}
		for {
			oldest, _ := r.b.Oldest()
			n := r.b.Cut(r.now())
			if n == 0 && !open {
				n = r.b.Flush()
			}
			if n == 0 {
				break
			}
			r.run(n, oldest)
		}
		r.emit()
	}
	if timer != nil {
		timer.Stop()
	}
	r.emit()
}

func (r *Runner) accept(s submission) {
	j, err := r.m.newJob(r.mem, s.rec)
	s.rec.Release() // the job holds its own reference
	js := &jobState{j: j, tag: s.tag, err: err}
	r.jobs = append(r.jobs, js)
	if err == nil {
		r.b.Push(s.at, j.n)
	}
}

// run takes the next n rows, across records, and runs them as one batch.
func (r *Runner) run(n int, oldest time.Time) {
	var segs []segment
	for _, js := range r.jobs {
		if n == 0 {
			break
		}
		if js.err != nil || js.taken == js.j.n {
			continue
		}
		segs = appendSegment(segs, js.j, &js.taken, &n)
	}
	rows, start := runSegments(r.m, r.b, segs, r.now)
	r.mu.Lock()
	r.stats.addBatch(rows, start.Sub(oldest), r.b)
	r.mu.Unlock()
}

// appendSegment cuts the next rows of j, past *taken and at most *n, into
// segs and counts them off both: the Operator and the Runner batch across
// records the same way and differ only in which jobs they skip.
func appendSegment(segs []segment, j *job, taken, n *int) []segment {
	k := min(*n, j.n-*taken)
	segs = append(segs, segment{j: j, start: *taken, n: k})
	*taken += k
	*n -= k
	return segs
}

// runSegments runs segs as one batch on m and feeds its duration back to b,
// whose target size follows the measured latency.
func runSegments(m *Model, b *Batcher, segs []segment, now func() time.Time) (rows int, start time.Time) {
	for _, s := range segs {
		rows += s.n
	}
	start = now()
	m.runBatch(segs)
	b.Observe(rows, now().Sub(start))
	return rows, start
}

// addBatch counts one batch of rows whose oldest row waited waited.
func (s *RunnerStats) addBatch(rows int, waited time.Duration, b *Batcher) {
	s.Batches++
	s.Rows += rows
	s.MaxBatch = max(s.MaxBatch, rows)
	s.MaxQueueDelay = max(s.MaxQueueDelay, waited)
	s.Target = b.Target()
	s.Rate = b.Rate()
}

// emit sends every finished record at the head of the queue.
func (r *Runner) emit() {
	for len(r.jobs) > 0 {
		js := r.jobs[0]
		if js.err != nil {
			r.out <- Result{Tag: js.tag, Err: fmt.Errorf("ml operator: %w", js.err)}
		} else if js.j.done == js.j.n {
			r.out <- Result{Record: js.j.finish(r.mem), Tag: js.tag}
		} else {
			return
		}
		r.jobs[0] = nil
		r.jobs = r.jobs[1:]
	}
}
