package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// ErrQuery: a submitted query failed; the error carries the coordinator's
// or the failing worker's message.
var ErrQuery = errors.New("query failed")

// ErrCoordinatorLost: the coordinator stopped answering (or forgot the
// query) while a client waited for it.
var ErrCoordinatorLost = errors.New("coordinator lost")

// Client talks to a coordinator over NATS: submit a script and stream its
// results back, list workers and queries, stop queries.
type Client struct {
	nc *nats.Conn
	// User is who the client is on the control subjects: its NATS
	// identity (natsserver.Auth.Identity; default natsserver.Anonymous).
	// The server's permissions decide whether it may act as User.
	User string
	// Timeout bounds each control request (default 30s: a submission waits
	// for every worker to build its part).
	Timeout time.Duration
	// Allocator holds decoded result batches (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Heartbeat is how often Submit checks that the coordinator still
	// knows its query (default 1s); after lostAfter checks in a row
	// without an answer it gives up with ErrCoordinatorLost.
	Heartbeat time.Duration
	// Namespace is the coordinator's subject namespace ("" the default).
	Namespace string
}

// lostAfter is how many liveness checks in a row may go unanswered.
const lostAfter = 3

// NewClient makes a client on nc.
func NewClient(nc *nats.Conn) *Client {
	return &Client{nc: nc, User: natsserver.Anonymous, Timeout: 30 * time.Second, Heartbeat: time.Second}
}

// alive asks the coordinator whether it still knows query: nil if so,
// ErrCoordinatorLost wrapped with why not if it answered that it does not,
// another error if it did not answer.
func (c *Client) alive(query string, timeout time.Duration) error {
	body, _ := json.Marshal(deploy.StopRequest{Query: query})
	msg, err := c.nc.Request(deploy.InNamespace(c.Namespace, deploy.SubjectQuery), body, timeout)
	if err != nil {
		return err
	}
	var ack deploy.Ack
	if err := json.Unmarshal(msg.Data, &ack); err != nil {
		return err
	}
	if ack.Error != "" {
		return fmt.Errorf("%w: %s", ErrCoordinatorLost, ack.Error)
	}
	return nil
}

func (c *Client) request(ctx context.Context, subject string, req, rep any) error {
	return c.requestFor(ctx, c.Timeout, subject, req, rep)
}

// requestFor is request waiting up to timeout for the answer.
func (c *Client) requestFor(ctx context.Context, timeout time.Duration, subject string, req, rep any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := requestChecked(ctx, c.nc, subject, body)
	if errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, nats.ErrAuthorization) {
		return fmt.Errorf("%w: %s as %s: %w", ErrDenied, subject, c.User, err)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("no coordinator is listening on %s (start one with `tierflow coordinator`): %w", subject, err)
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(msg.Data, rep)
}

// Workers lists the registered workers (SHOW WORKERS).
func (c *Client) Workers(ctx context.Context) ([]deploy.WorkerInfo, error) {
	var out []deploy.WorkerInfo
	return out, c.request(ctx, deploy.InNamespace(c.Namespace, deploy.WorkersSubject(c.User)), struct{}{}, &out)
}

// Queries lists the client's queries (SHOW QUERIES), or every query when
// the client is one of the coordinator's admins.
func (c *Client) Queries(ctx context.Context) ([]deploy.QueryInfo, error) {
	var out []deploy.QueryInfo
	return out, c.request(ctx, deploy.InNamespace(c.Namespace, deploy.QueriesSubject(c.User)), struct{}{}, &out)
}

// Stop stops a query (STOP QUERY), gracefully unless abort.
func (c *Client) Stop(ctx context.Context, query string, abort bool) error {
	_, err := c.StopSaid(ctx, query, abort)
	return err
}

// StopSaid stops a query and returns what the coordinator said became of
// it once its workers ended it (Coordinator.StopAndWait). The request
// waits as long as the coordinator does, whatever c.Timeout says.
func (c *Client) StopSaid(ctx context.Context, query string, abort bool) (string, error) {
	var ack deploy.Ack
	if err := c.requestFor(ctx, max(c.Timeout, 2*clientStopWait), deploy.InNamespace(c.Namespace, deploy.StopSubject(c.User)), deploy.StopRequest{Query: query, Abort: abort}, &ack); err != nil {
		return "", err
	}
	if ack.Error != "" {
		return "", deploy.RemoteError(ack.Error, ack.ErrorKind)
	}
	return ack.Said, nil
}

// NewQueryName returns a fresh query name ("q-" and 8 hex digits).
func NewQueryName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "q-" + hex.EncodeToString(b[:])
}

// Submit runs a script's query on the cluster and writes its result rows to
// out as they arrive. name may be empty (a fresh one is picked). It returns
// when the query is done, with the coordinator's final view of it. When ctx
// ends first the query is stopped gracefully and Submit waits (a bounded
// time) for what it flushes.
func (c *Client) Submit(ctx context.Context, script deploy.Script, name string, out sinks.Writer) (deploy.QueryInfo, error) {
	if name == "" {
		name = NewQueryName()
	}
	if err := deploy.ValidName("query", name); err != nil {
		return deploy.QueryInfo{}, err
	}
	mem := c.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	resultsSubj := deploy.InNamespace(c.Namespace, deploy.UserSubject(c.User, name, "results"))
	doneSubj := deploy.InNamespace(c.Namespace, deploy.UserSubject(c.User, name, "done"))
	// One subscription over the query's subjects keeps the order the
	// messages came in: results, then done. A channel subscription would
	// drop what does not fit its channel (a slow consumer): a client slower
	// than the workers would lose result rows and the end markers. Instead
	// the handler waits for room, and meanwhile the client library buffers
	// without a limit (pending limits off): the workers publish a query's
	// results once, at most what it returns. The subjects are the
	// submitter's own (tierflow.u.<user>): no one else may read them.
	ch := make(chan *nats.Msg, 1024)
	quit := make(chan struct{})
	defer close(quit)
	allSubj := deploy.InNamespace(c.Namespace, deploy.UserSubject(c.User, name, "*"))
	sub, err := c.nc.Subscribe(allSubj, func(m *nats.Msg) {
		if m.Subject != resultsSubj && m.Subject != doneSubj {
			return // the workers' status, start and stop
		}
		select {
		case ch <- m:
		case <-quit:
		}
	})
	if err != nil {
		return deploy.QueryInfo{}, err
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	if err := checkSubscribed(c.nc, allSubj); err != nil {
		return deploy.QueryInfo{}, err
	}
	var rep deploy.SubmitReply
	if err := c.request(ctx, deploy.InNamespace(c.Namespace, deploy.SubmitSubject(c.User)), deploy.SubmitRequest{Query: name, Script: script}, &rep); err != nil {
		return deploy.QueryInfo{Query: name}, err
	}
	if rep.Error != "" {
		return deploy.QueryInfo{Query: name, State: deploy.StateFailed, Error: rep.Error, ErrorKind: rep.ErrorKind},
			fmt.Errorf("%w: %w", ErrQuery, deploy.RemoteError(rep.Error, rep.ErrorKind))
	}
	// Results are written an epoch at a time, once every sink has
	// committed it, and never twice across a recovery (epochs).
	ep := newEpochs(out, mem)
	if p := rep.Placement; p != nil {
		for _, op := range p.Operators {
			if op.Name == "sink" {
				seen := []int{}
				for _, w := range op.Workers {
					if !slices.Contains(seen, w) {
						seen = append(seen, w)
					}
				}
				ep.sinkWorkers += len(seen)
				ep.sinks += len(op.Workers)
			}
		}
	}
	var (
		info     deploy.QueryInfo
		done     bool
		stopping bool
		grace    <-chan time.Time
	)
	ctxDone := ctx.Done()
	// The coordinator's done message is what ends the wait: if the
	// coordinator dies, it never comes. Check on it every heartbeat, off
	// this loop so results keep flowing.
	hb := c.Heartbeat
	if hb <= 0 {
		hb = time.Second
	}
	beat := time.NewTicker(hb)
	defer beat.Stop()
	checks := make(chan error, 1)
	checking, misses := false, 0
	// A NATS outage: once the connection is back, ask for the query to
	// be resumed as a new generation (outage.go).
	rs := &resumer{reconnects: c.nc.Stats().Reconnects, answers: make(chan resumed, 1)}
	var away *endedAway
	lookBack := func() {
		if rs.reconnected(c.nc) && !done {
			rs.wanted, rs.stale = true, max(rs.stale, ep.gen)
		}
		if rs.wanted && !rs.asking && connected(c.nc) {
			rs.asking, rs.wanted = true, false
			written, gen := ep.written, rs.stale
			go func() {
				g, err := c.resume(name, written, gen, c.Timeout)
				rs.answers <- resumed{g, err}
			}()
		}
	}
	for !(done && (ep.ended() || info.State != deploy.StateFinished) && !rs.asking && !rs.wanted) {
		select {
		case <-beat.C:
			if c.nc.IsClosed() {
				// The server went away and every reconnect failed: the
				// connection gives up (nats.go's MaxReconnects), and no
				// result, done message or answer can come any more.
				ep.flushAll()
				return info, fmt.Errorf("%w: %w: query %s: the NATS connection closed: the server went away and every reconnect failed; the query's state is unknown",
					ErrQuery, ErrCoordinatorLost, name)
			}
			lookBack()
			if !checking && !done && !rs.asking && connected(c.nc) {
				checking = true
				go func() { checks <- c.alive(name, hb) }()
			}
		case a := <-rs.answers:
			rs.asking = false
			switch {
			case a.err == nil:
				misses = 0
				ep.expect(a.gen)
				held := rs.held
				rs.held = nil
				if rs.wanted {
					break // lost again meanwhile: those are stale too
				}
				for _, m := range held {
					if err := ep.receive(m); err != nil {
						return info, fmt.Errorf("results of %s: %w", name, err)
					}
				}
			case errors.As(a.err, &away):
				info.Query, info.State, info.Error, info.ErrorKind = name, away.state, away.err, away.kind
				return info, fmt.Errorf("%w: %w", ErrQuery, a.err)
			case errors.Is(a.err, ErrCoordinatorLost):
				return info, fmt.Errorf("%w: resuming %s after the NATS connection came back: %w", ErrQuery, name, a.err)
			default:
				rs.wanted = true // ask again at the next beat
				if !connected(c.nc) || time.Since(rs.back) < resumeGrace(hb) {
					break
				}
				if misses++; misses >= lostAfter {
					return info, fmt.Errorf("%w: %w: query %s: no coordinator answered a resume after the NATS connection came back (%v)", ErrQuery, ErrCoordinatorLost, name, a.err)
				}
			}
		case err := <-checks:
			checking = false
			switch {
			case err == nil:
				misses = 0
			case errors.Is(err, ErrCoordinatorLost):
				return info, fmt.Errorf("%w: %w (was it restarted?)", ErrQuery, err)
			case !connected(c.nc) || rs.asking || rs.wanted:
				// The server is away (or just back): no coordinator can
				// answer now; the connection reconnects and the query is
				// resumed once it is back.
			default:
				if misses++; misses >= lostAfter {
					return info, fmt.Errorf("%w: %w: query %s: no answer from a coordinator on %s for %d heartbeats of %s (%v); the query's state is unknown",
						ErrQuery, ErrCoordinatorLost, name, c.nc.ConnectedUrlRedacted(), lostAfter, hb, err)
				}
			}
		case m := <-ch:
			lookBack()
			switch {
			case m.Subject == doneSubj:
				if err := json.Unmarshal(m.Data, &info); err != nil {
					return info, err
				}
				done = true
				if grace == nil {
					// Results cross the server before the worker's final
					// status, so they are here; allow a little slack anyway.
					grace = time.After(5 * time.Second)
				}
			default:
				if done && !stopping && m.Header.Get(deploy.HeaderEnd) == "" {
					// Results still coming after the done message (a
					// slow writer drains the buffer): the grace runs from
					// the last of them.
					grace = time.After(5 * time.Second)
				}
				if rs.asking || rs.wanted {
					if g, _ := headerInt(m, deploy.HeaderGen); int(g) > rs.stale {
						rs.held = append(rs.held, m)
					}
					break
				}
				if err := ep.receive(m); err != nil {
					return info, fmt.Errorf("results of %s: %w", name, err)
				}
			}
		case <-ctxDone:
			ctxDone = nil
			if !connected(c.nc) {
				// No coordinator can hear a stop while the server is away:
				// waiting for one would only hold the interrupt up.
				ep.flushAll()
				return info, fmt.Errorf("%w: query %s: interrupted while the NATS server was unreachable, so it was not asked to stop; its state is unknown", ErrQuery, name)
			}
			if !stopping {
				stopping = true
				// The stop's answer waits for the query to end, which
				// needs this loop to keep reading its results.
				go func() { _ = c.Stop(context.Background(), name, false) }()
				grace = time.After(15 * time.Second)
			}
		case <-grace:
			ep.flushAll()
			if done {
				return info, fmt.Errorf("%w: %s ended but %d of %d result streams did not end", ErrQuery, name, ep.sinkWorkers-ep.ends, ep.sinkWorkers)
			}
			_ = c.Stop(context.Background(), name, true)
			return info, fmt.Errorf("%w: %s did not stop in time", ErrQuery, name)
		}
	}
	// What a failed query's sinks sent is written too, complete or not (as
	// a one-process run would have).
	ep.flushAll()
	if info.State == deploy.StateFailed {
		return info, fmt.Errorf("%w: %w", ErrQuery, deploy.RemoteError(info.Error, info.ErrorKind))
	}
	return info, ep.err
}
