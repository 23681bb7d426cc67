package worker

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/runtime/deploy"
)

// meter is a query's allocator on this worker: the worker's own, counting
// the bytes the query's operators hold, so that a query past its memory
// limit is stopped instead of starving the others. (Records the relay
// decodes in place reference the received message and are not counted;
// what a query accumulates - window and join state, batches being built -
// is.)
type meter struct {
	memory.Allocator
	inUse atomic.Int64
	// limit (0: none); over closes the first time inUse passes it, at the
	// allocation that does, so even a short burst is caught.
	limit int64
	over  chan struct{}
	once  sync.Once
}

func newMeter(a memory.Allocator, limit int64) *meter {
	return &meter{Allocator: a, limit: limit, over: make(chan struct{})}
}

func (m *meter) add(n int64) {
	if used := m.inUse.Add(n); m.limit > 0 && used > m.limit {
		m.once.Do(func() { close(m.over) })
	}
}

func (m *meter) Allocate(n int) []byte {
	m.add(int64(n))
	return m.Allocator.Allocate(n)
}

func (m *meter) Reallocate(n int, b []byte) []byte {
	m.add(int64(n - len(b)))
	return m.Allocator.Reallocate(n, b)
}

func (m *meter) Free(b []byte) {
	m.inUse.Add(-int64(len(b)))
	m.Allocator.Free(b)
}

// applyLimits sets what the deployment's limits change in how the part is
// built: the source batch size and the relay's credit window follow
// RowsInFlight.
func applyLimits(l deploy.Limits, sc *deploy.Script) (window int) {
	if l.RowsInFlight <= 0 {
		return 0
	}
	batch := sc.BatchSize
	if batch <= 0 {
		batch = 4096 // operators/exec's default
	}
	batch = min(batch, l.RowsInFlight)
	sc.BatchSize = batch
	return max(1, l.RowsInFlight/batch)
}

// watchMemory fails q when its meter passes its limit (or already has),
// until stop closes.
func (w *Worker) watchMemory(q *query, stop <-chan struct{}) {
	if q.mem == nil || q.mem.limit <= 0 {
		return
	}
	select {
	case <-stop:
		return
	case <-q.mem.over:
	}
	err := fmt.Errorf("%w: query %s holds %d bytes on worker %s, over its memory limit of %d", deploy.ErrLimit, q.id, q.mem.inUse.Load(), w.cfg.Name, q.mem.limit)
	q.limitErr.CompareAndSwap(nil, &err)
	w.cfg.Log.Warn("query over its memory limit", "query", q.id, "limit", q.mem.limit)
	q.cancel()
}
