package coordinator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/runtime/deploy"
)

// onStop answers a client's stop or abort of a query (its owner's or an
// admin's) once the query's workers have ended it.
func (c *Coordinator) onStop(m *nats.Msg) {
	var req deploy.StopRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.Ack{Error: "bad stop request"})
		return
	}
	// The answer waits for the query to end (or for the wait to pass),
	// off the subscription's goroutine: other stops are not held up.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		said, err := c.StopAndWait(lastToken(m.Subject), req.Query, req.Abort, clientStopWait)
		if err != nil {
			reply(m, deploy.Ack{Error: err.Error(), ErrorKind: deploy.KindOf(err)})
			return
		}
		reply(m, deploy.Ack{Said: said})
	}()
}

// clientStopWait bounds how long a client's stop waits for the query's workers
// to end it: a worker's own stop of a part waits as long (its
// stopReplyWait), and a worker that says nothing by then is lost to
// heartbeats soon after.
const clientStopWait = 10 * time.Second

// StopAndWait stops a query on behalf of user (StopAs) and waits, up to
// wait, for its workers to end it. What it says is what became of the
// query: aborted or stopped, had already ended, or, after wait, that its
// workers have not ended it yet (an error for an abort, which must end
// at once; a graceful stop may still be draining).
func (c *Coordinator) StopAndWait(user, id string, abort bool, wait time.Duration) (string, error) {
	s := c.supervisor(id)
	if s != nil && s.isEnded() {
		if err := c.StopAs(user, id, abort); err != nil { // the same refusal for another's query
			return "", err
		}
		return fmt.Sprintf("query %s had already ended (%s)", id, s.snapshot().State), nil
	}
	if err := c.StopAs(user, id, abort); err != nil {
		return "", err
	}
	verb := "stopped"
	if abort {
		verb = "aborted"
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.over:
	case <-t.C:
	case <-c.stop:
	}
	info := s.snapshot()
	if !s.isEnded() {
		var still []string
		for w, st := range info.WorkerStates {
			if st != deploy.StateStopped && st != deploy.StateFinished && st != deploy.StateFailed {
				still = append(still, w)
			}
		}
		slices.Sort(still)
		if len(still) == 0 {
			still = info.Workers
		}
		msg := fmt.Sprintf("query %s (%s) has not ended %s after the %s was asked: workers %s have not reported its end", id, info.State, wait, strings.TrimSuffix(verb, "ed"), strings.Join(still, ", "))
		if abort {
			return "", fmt.Errorf("%w: %s", ErrNotStopped, msg)
		}
		return msg + " (a graceful stop drains what is in flight first)", nil
	}
	by := ""
	if user != info.Owner {
		by = " by " + user
	}
	said := fmt.Sprintf("query %s %s%s: %s on %s", id, verb, by, info.State, strings.Join(info.Workers, ", "))
	if info.Error != "" {
		said += " (" + info.Error + ")"
	}
	c.cfg.Log.Info("query stopped on request", "query", id, "user", user, "abort", abort, "state", info.State)
	return said, nil
}

// StopAs stops a query on behalf of user: its owner or an admin.
func (c *Coordinator) StopAs(user, id string, abort bool) error {
	s := c.supervisor(id)
	owner := ""
	if s != nil {
		owner = s.req.Owner
	}
	if s != nil && owner != user && !c.isAdmin(user) {
		c.cfg.Log.Warn("stop refused", "query", id, "user", user, "owner", owner)
		return fmt.Errorf("%w: %s may not stop query %s (submitted by %s)", ErrDenied, user, id, owner)
	}
	return c.Stop(id, abort)
}

// Stop stops a query: gracefully (its sources end and what is in flight
// drains to the sink) or, with abort, at once.
func (c *Coordinator) Stop(id string, abort bool) error {
	s := c.supervisor(id)
	if s == nil {
		return fmt.Errorf("%w: %s", ErrUnknownQuery, id)
	}
	return s.stop(abort)
}
