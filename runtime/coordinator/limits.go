package coordinator

import (
	"fmt"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// QueriesPerUserByCapacity (Limits.QueriesPerUser; `tierflow coordinator`'s
// default) bounds each user's running queries by the cluster's capacity:
// the cores of its live workers together. Each query running on a worker
// gets an equal share of its processors (dataflow.CPUShare), so a user
// running n queries where another runs one takes n/(n+1) of them: with n
// unbounded (1,000 submits in a loop, each accepted once the rate allows),
// the other's query gets nothing. Held to the cores, the queries of one
// user spread over the cluster leave another user's query on a worker of c
// cores at least c/(c+1) of a core, half of one at the least: what a query
// of one pipeline runs on. A submission past it is refused at once, naming
// the bound, and the others never wait for it.
const QueriesPerUserByCapacity = -1

// admit (called with c.mu held) refuses a submission of user's while it
// already runs Limits.QueriesPerUser queries (QueriesPerUserByCapacity:
// as many as cores, the live workers' together).
func (c *Coordinator) admit(user string, cores int) error {
	limit, why := c.cfg.Limits.QueriesPerUser, "the most one user may run at once"
	if limit == QueriesPerUserByCapacity {
		limit = max(cores, 1)
		why = fmt.Sprintf("one per core of the live workers (%d), the most one user may run at once (--max-queries-per-user)", cores)
	}
	if limit <= 0 {
		return nil
	}
	n := 0
	for _, s := range c.queries {
		if s.req.Owner == user && !s.isEnded() {
			n++
		}
	}
	if n >= limit {
		return fmt.Errorf("%w: %s already runs %s, %s", deploy.ErrLimit, user, cli.Count(n, "query"), why)
	}
	return nil
}

// limitRunTime fails query s if it still runs after Limits.RunTime.
func (c *Coordinator) limitRunTime(s *supervisor) {
	d := c.cfg.Limits.RunTime
	if d <= 0 {
		return
	}
	time.AfterFunc(d, func() {
		select {
		case <-c.stop:
			return
		default:
		}
		if !s.isEnded() {
			c.cfg.Log.Warn("query past its run time limit", "query", s.id, "limit", d)
			s.fail(fmt.Errorf("%w: query %s ran past its run time limit of %s", deploy.ErrLimit, s.id, d))
		}
	})
}

// poisonError is why the query the lost worker w's last heartbeat blamed
// (deploy.WorkerMemory.Culprit) fails instead of being recovered.
func poisonError(w deploy.WorkerInfo) error {
	m := w.Memory
	limit, of := m.GuardBytes, "memory guard"
	if limit <= 0 {
		limit, of = int64(w.MemoryBytes), "memory"
	}
	return fmt.Errorf("%w: worker %s was lost while query %s held %s of the %s its queries held (live heap %s, %s %s): not placed on another worker",
		deploy.ErrLimit, w.Name, m.Top, dataflow.Bytes(m.TopBytes), dataflow.Bytes(m.HeldBytes), dataflow.Bytes(m.HeapBytes), of, dataflow.Bytes(limit))
}
