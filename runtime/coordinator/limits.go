package coordinator

import (
	"fmt"
	"time"

	"github.com/tierflow/tierflow/runtime/deploy"
)

// admit (called with c.mu held) refuses a submission of user's while it
// already runs Limits.QueriesPerUser queries.
func (c *Coordinator) admit(user string) error {
	limit := c.cfg.Limits.QueriesPerUser
	if limit <= 0 {
		return nil
	}
	n := 0
	for _, q := range c.queries {
		if q.info.Owner == user && q.info.Ended.IsZero() {
			n++
		}
	}
	if n >= limit {
		return fmt.Errorf("%w: %s already runs %d queries, the most one user may run at once", deploy.ErrLimit, user, n)
	}
	return nil
}

// limitRunTime fails query id if it still runs after Limits.RunTime.
func (c *Coordinator) limitRunTime(id string) {
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
		if q, ok := c.Query(id); ok && q.Ended.IsZero() {
			c.cfg.Log.Warn("query past its run time limit", "query", id, "limit", d)
			c.fail(id, fmt.Errorf("%w: query %s ran past its run time limit of %s", deploy.ErrLimit, id, d))
		}
	})
}
