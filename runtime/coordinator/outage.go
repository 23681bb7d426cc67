package coordinator

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// maxOutage bounds how long a recovery from a NATS server outage waits for
// the server to come back before it places the query on whatever it has.
const maxOutage = 60 * time.Second

// outage is the coordinator's view of its own NATS connection. While the
// server is away no heartbeat can arrive, so no worker is expired; when the
// connection comes back every worker gets a fresh expiry to heartbeat in.
type outage struct {
	mu         sync.Mutex
	reconnects uint64    // the connection's count when last looked at
	downSince  time.Time // zero while connected
	down, up   time.Time // the last outage, once over
}

// serverDown looks at the coordinator's connection: true while it is not
// connected. The first look after it reconnected closes the outage and
// restarts every worker's expiry.
func (c *Coordinator) serverDown() bool {
	st, n := c.nc.Status(), c.nc.Stats().Reconnects
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if st != nats.CONNECTED {
		if o.downSince.IsZero() {
			o.downSince = now
			c.cfg.Log.Warn("NATS server connection lost: no worker expires until it is back")
			c.countOutage()
		}
		return true
	}
	if n == o.reconnects && o.downSince.IsZero() {
		return false
	}
	if o.downSince.IsZero() {
		o.downSince = now // an outage between two looks
	}
	o.down, o.up, o.reconnects, o.downSince = o.downSince, now, n, time.Time{}
	c.mu.Lock()
	for _, w := range c.workers {
		w.LastSeen = now
	}
	c.mu.Unlock()
	c.cfg.Log.Warn("NATS server connection back", "down_s", now.Sub(o.down).Seconds())
	return false
}

// countOutage starts counting, for every running query that reads core
// NATS streams, what is published on them from when the server is back
// until the query is re-deployed: its old generation's results are stale
// by then (its client missed some), so those messages are lost. The
// subscriptions are made while the server is away and reach it first
// thing on the reconnect.
func (c *Coordinator) countOutage() {
	for _, s := range c.supervisors() {
		s.mu.Lock()
		if s.started() && !s.replayable && s.outageCount == nil {
			s.outageCount = c.countCoreNATS(s.req.Script, false)
		}
		s.mu.Unlock()
	}
}

// takeOutageCount is the outage's count of the query's core NATS messages
// for a recovery from it (nil: none, or another kind of recovery).
func (s *supervisor) takeOutageCount(lost string) func() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lost != control.LostServer {
		return nil
	}
	f := s.outageCount
	s.outageCount = nil
	return f
}

// dropOutageCount ends the outage's count of a query that ended before a
// recovery took it.
func (s *supervisor) dropOutageCount() {
	s.mu.Lock()
	f := s.outageCount
	s.outageCount = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// lastOutage is the last outage the coordinator saw end (zero: none).
func (c *Coordinator) lastOutage() (down, up time.Time) {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	return c.out.down, c.out.up
}

// outageSince: the coordinator's connection was lost after t (and is back,
// or not yet).
func (c *Coordinator) outageSince(t time.Time) bool {
	if c.serverDown() {
		return true
	}
	_, up := c.lastOutage()
	return up.After(t)
}

// workersBack: every one of names has heartbeated since the last outage
// ended (a recovery from it waits for them, so the query keeps its plan).
func (c *Coordinator) workersBack(names []string) bool {
	if c.serverDown() {
		return false
	}
	_, up := c.lastOutage()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if w := c.workers[n]; w == nil || !w.LastSeen.After(up) {
			return false
		}
	}
	return true
}

// outageWait is how long a recovery from an outage waits for the query's
// workers: while the server is away (up to maxOutage), then a few
// heartbeats for the workers to reconnect.
func (c *Coordinator) outageWait(names []string) {
	deadline := time.Now().Add(maxOutage)
	back := time.Time{}
	for time.Now().Before(deadline) {
		if c.workersBack(names) {
			return
		}
		if !c.serverDown() {
			if back.IsZero() {
				back = time.Now()
			}
			if time.Since(back) > 2*c.cfg.Expiry {
				return
			}
		}
		select {
		case <-c.stop:
			return
		case <-time.After(c.cfg.Heartbeat / 4):
		}
	}
}

// onResume re-deploys a query its client asks for after the client lost
// its connection to NATS (deploy.ResumeRequest): whatever the sinks sent
// while the client was away is gone, so the query runs again as a new
// generation from an epoch the client has written.
func (c *Coordinator) onResume(m *nats.Msg) {
	var req deploy.ResumeRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.ResumeReply{Error: "bad resume request: " + err.Error()})
		return
	}
	user := lastToken(m.Subject)
	// A coordinator that restarted with the server (one process) may not
	// have learned the query back from its workers yet.
	for c.learning() {
		if _, ok := c.Query(req.Query); ok {
			break
		}
		select {
		case <-c.stop:
			return
		case <-time.After(c.cfg.Heartbeat / 4):
		}
	}
	s := c.supervisor(req.Query)
	err := fmt.Errorf("%w: %s", ErrUnknownQuery, req.Query)
	if s != nil {
		err = s.resumeAsked(user, c.isAdmin(user), req.Written)
	}
	if err != nil {
		rep := deploy.ResumeReply{Error: err.Error()}
		if s != nil && s.isEnded() {
			endedAs(&rep, s.snapshot())
		}
		reply(m, rep)
		return
	}
	c.serverDown() // the client may be back before the coordinator looked
	down, _ := c.lastOutage()
	if down.IsZero() {
		down = time.Now()
	}
	s.recover(control.LostServer, down)
	info := s.snapshot()
	gen, ended, state := info.Generation, !info.Ended.IsZero(), info.State
	if gen <= req.Generation {
		rep := deploy.ResumeReply{Generation: gen, Error: fmt.Sprintf("query %s could not be re-deployed after the outage", req.Query)}
		if ended {
			rep.Error = fmt.Sprintf("query %s ended (%s) while its client was disconnected", req.Query, state)
			endedAs(&rep, info)
		}
		reply(m, rep)
		return
	}
	reply(m, deploy.ResumeReply{Generation: gen})
}

// endedAs says in rep how query info, which has ended, ended.
func endedAs(rep *deploy.ResumeReply, info deploy.QueryInfo) {
	rep.Ended, rep.State, rep.QueryError, rep.ErrorKind = true, info.State, info.Error, info.ErrorKind
}

// resumeAsked checks that user may resume the query after its client lost
// its connection (its owner or an admin) and that it runs, and holds the
// epoch the client has written for the recovery (outageEpoch).
func (s *supervisor) resumeAsked(user string, admin bool, written uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.info.Owner != user && !admin:
		return fmt.Errorf("%w: %s may not resume query %s (submitted by %s)", ErrDenied, user, s.id, s.info.Owner)
	case s.ended():
		return fmt.Errorf("query %s ended (%s) while its client was disconnected: its last results may be missing", s.id, s.info.State)
	case s.state == genDeploying:
		return fmt.Errorf("query %s was still deploying when its client lost its connection", s.id)
	}
	s.resumeFrom = &written
	s.state = genRecovering
	return nil
}

// outageEpoch (with s.mu held) is the epoch a recovery from an outage
// resumes from: the committed epoch, or the client's written one when it
// asked and is behind (it lost results in flight). The query's committed
// epoch comes down to it too, and the generations running now no longer
// move it: a later recovery (a worker expiring, a worker gone while this
// one deploys) that resumed at the sinks' frontier would skip the epochs
// the client lost, and the client, which reads only the newest
// generation, would never get them.
func outageEpoch(s *supervisor, committed uint64) uint64 {
	if s.resumeFrom != nil {
		committed = min(committed, *s.resumeFrom)
		s.resumeFrom = nil
		s.info.Committed = min(s.info.Committed, committed)
		s.unseenBelow = max(s.unseenBelow, s.info.Generation+1)
	}
	return committed
}

// disconnected counts the core NATS messages the query's recoveries lost
// (dataflow.DropDisconnected).
func disconnected(rs []control.Recovery) dataflow.DropCounts {
	var n int64
	for _, r := range rs {
		n += r.LostMessages
	}
	if n == 0 {
		return nil
	}
	return dataflow.DropCounts{dataflow.DropDisconnected: n}
}

// resume asks the coordinator to re-deploy query after this client's
// connection came back (deploy.ResumeRequest) and returns the generation
// whose results count from now on.
func (c *Client) resume(query string, written uint64, gen int, timeout time.Duration) (int, error) {
	body, _ := json.Marshal(deploy.ResumeRequest{Query: query, Written: written, Generation: gen})
	msg, err := c.nc.Request(deploy.InNamespace(c.Namespace, deploy.ResumeSubject(c.User)), body, timeout)
	if err != nil {
		return 0, err
	}
	var rep deploy.ResumeReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return 0, err
	}
	switch {
	case rep.Ended:
		return 0, &endedAway{query: query, state: rep.State, err: rep.QueryError, kind: rep.ErrorKind}
	case rep.Error != "":
		return 0, fmt.Errorf("%w: %s", ErrCoordinatorLost, rep.Error)
	}
	return rep.Generation, nil
}

// endedAway is a resume's answer when the query ended while its client was
// disconnected: how it ended, which is what the client reports (the
// coordinator is there; the query is over).
type endedAway struct {
	query, state, err, kind string
}

func (e *endedAway) Error() string {
	if e.err != "" {
		return fmt.Sprintf("query %s %s while its client was disconnected (its last results may be missing): %s", e.query, e.state, e.err)
	}
	return fmt.Sprintf("query %s %s while its client was disconnected: its last results may be missing", e.query, e.state)
}

// Unwrap is the query's own failure, with its kind (a limit, its input).
func (e *endedAway) Unwrap() error {
	if e.err == "" {
		return nil
	}
	return deploy.RemoteError(e.err, e.kind)
}

// resumer is Submit's side of a NATS outage: once the client's connection
// has come back, results of the generation it was reading may have been
// lost on the way, so it asks for a new generation and, until the answer,
// holds what arrives of newer generations (older ones are stale).
type resumer struct {
	reconnects uint64
	back       time.Time    // when the connection was last seen back
	asking     bool         // a resume request is out
	wanted     bool         // one must be asked for
	stale      int          // generations up to it are stale
	held       []*nats.Msg  // results of newer generations, until the answer
	answers    chan resumed // the answers to resume requests
}

type resumed struct {
	gen int
	err error
}

// reconnected: the connection came back since the last look.
func (r *resumer) reconnected(nc *nats.Conn) bool {
	n := nc.Stats().Reconnects
	if n == r.reconnects {
		return false
	}
	r.reconnects, r.back = n, time.Now()
	return true
}

// resumeGrace is how long after its connection came back a client keeps
// asking for a resume without counting unanswered requests: the
// coordinator reconnects at its own pace, and until it has, the server
// answers "no responders".
func resumeGrace(heartbeat time.Duration) time.Duration {
	return max(10*heartbeat, 10*time.Second)
}

// connected: the client's connection is up, so an unanswered request means
// the coordinator is not answering.
func connected(nc *nats.Conn) bool { return nc.Status() == nats.CONNECTED }
