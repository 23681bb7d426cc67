package deploy

import (
	"errors"
	"time"
)

// ErrLimit: a query was refused or stopped for going past a resource limit
// of the cluster (run time, memory, queries per user), so that one client's
// query cannot starve the others.
var ErrLimit = errors.New("resource limit")

// Limits bound what one query may take. The coordinator holds them
// (tierflow coordinator --max-...) and sends each worker the part it
// enforces with the deployment. Zero fields are unlimited.
type Limits struct {
	// RunTime: the coordinator fails a query still running after this long.
	RunTime time.Duration `json:"run_time,omitempty"`
	// MemoryBytes: a worker fails its part of a query when the query's
	// operators hold more than this in Arrow buffers on that worker.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// RowsInFlight bounds the rows a query has in flight on each link
	// between workers: sources batch at most this many rows and the relay's
	// credit window holds RowsInFlight / batch rows batches.
	RowsInFlight int `json:"rows_in_flight,omitempty"`
	// QueriesPerUser: the coordinator refuses a submission while its user
	// already runs this many queries (0: no bound; -1: one per core of the
	// live workers, coordinator.QueriesPerUserByCapacity).
	QueriesPerUser int `json:"queries_per_user,omitempty"`
	// StreamBytes bounds each JetStream stream a secured coordinator makes
	// for a query (the server discards its oldest messages past it), and
	// StreamsPerUser how many of them one user may hold (0: no bound):
	// together, the most of the shared store one user's queries can take.
	StreamBytes    int64 `json:"stream_bytes,omitempty"`
	StreamsPerUser int   `json:"streams_per_user,omitempty"`
}

// SpillBytes is the state a GROUP BY or a join of two tables holds before
// it spills to disk (operators/exec Options.MemoryLimit), on the
// coordinator's compile and the worker's alike (the graph's shape follows
// it): half the query's memory, so that what the operator holds leaves
// the other half to the batches in flight to and from it, which the
// budget counts too, and to the partition it joins or combines when it
// reads the spill back. An aggregation also spills when the budget
// refuses it first (rel.SpillAggregate). 0: no limit, nothing spills.
func (l Limits) SpillBytes() int64 { return l.MemoryBytes / 2 }

// WorkerMemory is a worker's memory as its heartbeat reports it: its guard
// (tierflow worker --max-memory; 0: none), what its queries' budgets hold
// together, the process's live Go heap, and the query holding the most.
// The coordinator keeps the last one, to tell what a lost worker died of.
type WorkerMemory struct {
	GuardBytes int64  `json:"guard_bytes,omitempty"`
	HeldBytes  int64  `json:"held_bytes"`
	HeapBytes  int64  `json:"heap_bytes"`
	Top        string `json:"top,omitempty"`
	TopBytes   int64  `json:"top_bytes,omitempty"`
}

// Culprit is the query to blame for the worker's death when this was its
// last report: one that held most of what the queries held, while the
// worker used at least half of its memory (its guard, else machine, the
// machine's memory). A query that grows past the guard within one
// heartbeat interval is what kills a worker the guard's watchdog did not
// catch; with the worker that full and one query holding most of it, that
// query is the likeliest cause, and placing it on the next worker would
// kill that one too. "" when nothing points at a query: the worker died
// of something else, and its queries are recovered.
func (m *WorkerMemory) Culprit(machine uint64) string {
	if m == nil || m.Top == "" {
		return ""
	}
	limit := m.GuardBytes
	if limit <= 0 {
		limit = int64(machine)
	}
	used := max(m.HeldBytes, m.HeapBytes)
	if limit <= 0 || 2*used < limit || 2*m.TopBytes < m.HeldBytes {
		return ""
	}
	return m.Top
}
