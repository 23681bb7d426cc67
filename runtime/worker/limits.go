package worker

import (
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// A query's memory on this worker is one dataflow.Memory budget, a child of
// the worker's guard: its operators' Arrow buffers (the budget's
// allocator), the records the relay decoded in place of their messages and
// the frames it keeps until their ack (charged by the relay), and the
// state each operator declares beside its records (its Account). Growth
// past the query's limit is refused where it is asked for, so the
// operator that asked spills or fails the query with its name; the guard
// refuses growth past the worker's own limit the same way, whichever
// query asks.

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

// overError is why q was failed for its memory: what its budget holds, by
// holder, the largest first.
func overError(q *query, worker string, budget *dataflow.Memory) error {
	var parts []string
	for i, h := range q.mem.Holders() {
		if i == 4 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", h.Name, dataflow.Bytes(h.Held)))
	}
	return fmt.Errorf("%w: %w: query %s holds %s on worker %s (%s), over %s's limit of %s", deploy.ErrLimit, dataflow.ErrMemory,
		q.id, dataflow.Bytes(q.mem.Used()), worker, strings.Join(parts, ", "), budget.Name(), dataflow.Bytes(budget.Limit()))
}

// watchMemory fails q when its budget passed its limit through a charge
// that could not be refused, until stop closes.
func (w *Worker) watchMemory(q *query, stop <-chan struct{}) {
	if q.mem == nil || q.mem.Limit() <= 0 {
		return
	}
	select {
	case <-stop:
		return
	case <-q.mem.OverLimit():
	}
	w.failForMemory(q, overError(q, w.cfg.Name, q.mem))
}

// failForMemory stops q with err, the reason its status will carry.
func (w *Worker) failForMemory(q *query, err error) {
	q.limitErr.CompareAndSwap(nil, &err)
	w.cfg.Log.Warn("query failed for its memory", "query", q.id, "err", err)
	w.mu.Lock()
	cancel := q.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// limitErrorOf is the memory refusal in err's chain (a budget's, or the
// model arena's: onnx.ArenaError), reported as the query's limit
// (deploy.ErrLimit: the coordinator does not place it again).
func limitErrorOf(err error) error {
	if errors.Is(err, dataflow.ErrMemory) && !errors.Is(err, deploy.ErrLimit) {
		return fmt.Errorf("%w: %w", deploy.ErrLimit, err)
	}
	return err
}

// admitFraction is how full the guard may be for the worker to take on a
// new query part: past it the part is refused, with what holds the memory.
const admitFraction = 0.9

// admit refuses a new part while the worker's guard is nearly full (by its
// charges or by the process's live heap, which includes what nothing
// charged).
func (w *Worker) admit(query string) error {
	g := w.memGuard
	if g.Limit() <= 0 {
		return nil
	}
	used := max(g.Used(), heapLive())
	if float64(used) <= admitFraction*float64(g.Limit()) {
		return nil
	}
	return fmt.Errorf("%w: %w: worker %s holds %s of its %s memory guard: no room for query %s now", deploy.ErrLimit, dataflow.ErrMemory,
		w.cfg.Name, dataflow.Bytes(used), dataflow.Bytes(g.Limit()), query)
}

// heapSample is how often the guard's watchdog reads the live heap.
const heapSample = 100 * time.Millisecond

// watchHeap is the guard's backstop for what no account charges: when the
// process's live heap passes the guard, the query holding the most of this
// worker's budget fails (one at a time, while the heap stays over), so the
// worker refuses or fails a query rather than die.
func (w *Worker) watchHeap() {
	defer w.wg.Done()
	t := time.NewTicker(heapSample)
	defer t.Stop()
	var failed string
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		live := heapLive()
		if live <= w.memGuard.Limit() {
			failed = ""
			continue
		}
		var top *query
		w.mu.Lock()
		for _, q := range w.queries {
			if q.started && q.id != failed && (top == nil || q.mem.Used() > top.mem.Used()) {
				top = q
			}
		}
		w.mu.Unlock()
		if top == nil {
			continue
		}
		failed = top.id
		w.failForMemory(top, fmt.Errorf("%w: %w: worker %s's live heap is %s, over its memory guard of %s; query %s holds the most (%s)",
			deploy.ErrLimit, dataflow.ErrMemory, w.cfg.Name, dataflow.Bytes(live), dataflow.Bytes(w.memGuard.Limit()), top.id, dataflow.Bytes(top.mem.Used())))
	}
}

// heapLive is the Go heap the process holds: the live bytes the last
// garbage collection marked (garbage made since is not held: GOMEMLIMIT
// has the collector reclaim it as the heap nears the limit).
func heapLive() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// memoryReport is the worker's memory for its heartbeat: the coordinator
// blames the query holding the most if the worker dies with its memory
// this full (deploy.WorkerMemory.Culprit).
func (w *Worker) memoryReport() *deploy.WorkerMemory {
	m := &deploy.WorkerMemory{GuardBytes: w.memGuard.Limit(), HeapBytes: heapLive()}
	w.mu.Lock()
	for _, q := range w.queries {
		u := q.mem.Used()
		m.HeldBytes += u
		if u > m.TopBytes {
			m.Top, m.TopBytes = q.id, u
		}
	}
	w.mu.Unlock()
	return m
}
