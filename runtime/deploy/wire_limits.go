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
	// already runs this many queries.
	QueriesPerUser int `json:"queries_per_user,omitempty"`
}
