package connectors

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
)

// msgQueue hands messages (a core NATS *nats.Msg or a jetstream.Msg) from
// a nats.go delivery goroutine (a subscription's or a Consume's handler) to
// the source's reader, which takes all that are waiting at once. Why: reading a subscription one NextMsg at a time costs
// a channel receive, a select on the context and a timer check per
// message, and a message's trip from the connection to the reader was most
// of what a source spent beside decoding (bench/ingest's BenchmarkIngest, core_vs_bare); here
// a message costs an append under a lock that the reader takes once per
// turn.
//
// The queue holds at most maxMsgs messages and, past one, maxBytes of
// payload; put waits for room beyond that, so the subscription's own
// pending limits (and their counted drops) apply as before behind it.
type msgQueue[M any] struct {
	mu       sync.Mutex
	msgs     []M
	size     func(M) int // a message's payload bytes
	bytes    int
	maxMsgs  int
	maxBytes int
	// waiting: the reader waits on ready for a message; full: the handler
	// waits on room.
	waiting, full bool
	ready, room   chan struct{} // each holds one wake-up
	stop          chan struct{} // closed by close: put gives up waiting
	stopped       bool
	// idle is called each time the reader finds the queue empty, before
	// it waits (nil: nothing).
	idle func()
	// err, once set by fail, is what take returns when the queue is
	// empty: the delivery ended.
	err error
}

func newMsgQueue[M any](maxMsgs, maxBytes int, size func(M) int, idle func()) *msgQueue[M] {
	return &msgQueue[M]{maxMsgs: max(maxMsgs, 1), maxBytes: maxBytes, size: size, idle: idle,
		ready: make(chan struct{}, 1), room: make(chan struct{}, 1), stop: make(chan struct{})}
}

func natsMsgSize(m *nats.Msg) int { return len(m.Data) }

// put appends m, waiting while the queue is full; after close it drops m
// (the source is gone).
func (q *msgQueue[M]) put(m M) {
	n := q.size(m)
	q.mu.Lock()
	for len(q.msgs) >= q.maxMsgs || len(q.msgs) > 0 && q.bytes+n > q.maxBytes {
		if q.stopped {
			q.mu.Unlock()
			return
		}
		q.full = true
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-q.stop:
		}
		q.mu.Lock()
	}
	q.msgs = append(q.msgs, m)
	q.bytes += n
	q.wake()
}

// wake wakes a waiting reader; q.mu is held and is unlocked.
func (q *msgQueue[M]) wake() {
	wake := q.waiting
	q.waiting = false
	q.mu.Unlock()
	if wake {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// fail ends the delivery: the reader gets err once it has taken what is
// queued.
func (q *msgQueue[M]) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.wake()
}

// take waits until messages are queued (or ctx ends: its error) and
// returns them all; buf, which the caller has done with, becomes the
// queue's next buffer.
func (q *msgQueue[M]) take(ctx context.Context, buf []M) ([]M, error) {
	clear(buf)
	for {
		q.mu.Lock()
		if len(q.msgs) > 0 {
			got := q.msgs
			q.msgs, q.bytes = buf[:0], 0
			full := q.full
			q.full = false
			q.mu.Unlock()
			if full {
				select {
				case q.room <- struct{}{}:
				default:
				}
			}
			return got, nil
		}
		if q.err != nil {
			err := q.err
			q.mu.Unlock()
			return nil, err
		}
		q.waiting = true
		q.mu.Unlock()
		if q.idle != nil {
			q.idle()
		}
		// Waiting for input is not the query's CPU time (dataflow.CPU).
		resume := dataflow.Waiting(ctx)
		select {
		case <-q.ready:
			resume()
		case <-ctx.Done():
			resume()
			q.mu.Lock()
			q.waiting = false
			q.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// close releases a handler waiting for room; what it puts afterwards is
// dropped.
func (q *msgQueue[M]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.stopped {
		q.stopped = true
		close(q.stop)
	}
}
