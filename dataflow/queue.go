package dataflow

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// queue is the inbox of one operator instance: all channels into the
// instance merge here, each in its sender's order. It is bounded by capacity
// messages when blocking (concurrent mode) and unbounded when stepping,
// where the scheduler instead holds sources back while a queue is full.
//
// The consumer takes everything queued at once (swapping buffers), so the
// lock is taken once per burst, not once per message; at most 2*capacity
// messages are live per instance (queued plus being handled).
type queue struct {
	mu       sync.Mutex
	buf      []Message
	capacity int
	blocking bool
	closed   bool
	failed   error         // set by Fail: the consumer fails with it
	notEmpty chan struct{} // 1-buffered wake-up for the consumer
	notFull  chan struct{} // 1-buffered wake-up for one blocked producer
	done     chan struct{} // closed on close, wakes every blocked producer
	res      *residence    // the worker's: arrivals from other workers
}

var _ ResidenceMeter = (*queue)(nil)

func newQueue(capacity int, res *residence) *queue {
	return &queue{
		res:      res,
		capacity: capacity,
		notEmpty: make(chan struct{}, 1),
		notFull:  make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *queue) setBlocking(b bool) {
	q.mu.Lock()
	q.blocking = b
	q.mu.Unlock()
}

// Residence implements ResidenceMeter: the worker's, over every instance
// (a query's part on a worker is one dataflow worker).
func (q *queue) Residence() time.Duration {
	if q.res == nil {
		return 0
	}
	return q.res.take()
}

// Deliver implements Inbox.
func (q *queue) Deliver(ctx context.Context, m Message) error {
	for {
		q.mu.Lock()
		if q.closed || q.failed != nil {
			q.mu.Unlock()
			m.release()
			return fmt.Errorf("%w: inbox of finished or failed instance (channel %v)", ErrClosed, m.Channel)
		}
		if !q.blocking || len(q.buf) < q.capacity {
			if m.Kind == Data && m.Arrived != 0 && q.res != nil {
				q.res.arrive(m.Ingest, m.Arrived)
			}
			q.buf = append(q.buf, m)
			room := len(q.buf) < q.capacity
			q.mu.Unlock()
			signal(q.notEmpty)
			if room {
				// Pass the wake-up on to the next blocked producer.
				signal(q.notFull)
			}
			return nil
		}
		q.mu.Unlock()
		// Waiting for room downstream is not this query's CPU time.
		resume := Waiting(ctx)
		select {
		case <-q.notFull:
		case <-q.done:
		case <-ctx.Done():
			resume()
			m.release()
			return ctx.Err()
		}
		resume()
	}
}

// Fail implements Inbox.
func (q *queue) Fail(ch ChannelID, err error) {
	q.mu.Lock()
	if q.failed == nil && !q.closed {
		q.failed = fmt.Errorf("%w: channel %v: %w", ErrTransport, ch, err)
	}
	q.mu.Unlock()
	signal(q.notEmpty)
}

// failure is the error a transport reported, if any.
func (q *queue) failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}

// take moves everything queued into dst (which must be empty) and returns
// it; the queue keeps dst's old backing array for reuse.
func (q *queue) take(dst []Message) []Message {
	q.mu.Lock()
	out := q.buf
	q.buf = dst[:0]
	q.mu.Unlock()
	if len(out) > 0 {
		signal(q.notFull)
	}
	return out
}

// wait blocks until something is queued, the queue closes, timeout fires
// (nil: never) or ctx ends.
func (q *queue) wait(ctx context.Context, timeout <-chan time.Time) error {
	for {
		q.mu.Lock()
		n, closed, failed := len(q.buf), q.closed, q.failed != nil
		q.mu.Unlock()
		if n > 0 || closed || failed {
			return nil
		}
		select {
		case <-q.notEmpty:
		case <-timeout:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}

// room reports whether a producer could deliver without exceeding capacity.
func (q *queue) room() bool { return q.len() < q.capacity }

// close rejects further deliveries, releases what is queued and wakes every
// blocked producer. It is idempotent.
func (q *queue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	buf := q.buf
	q.buf = nil
	q.mu.Unlock()
	close(q.done)
	for i := range buf {
		buf[i].release()
	}
}
