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
	for _, s := range c.queries {
		if s.req.Owner == user && !s.isEnded() {
			n++
		}
	}
	if n >= limit {
		return fmt.Errorf("%w: %s already runs %d queries, the most one user may run at once", deploy.ErrLimit, user, n)
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
