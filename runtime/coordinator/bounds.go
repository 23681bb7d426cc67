package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Bounds keep one user from holding up the coordinator for the others:
// what a submission may weigh, how often a user may submit, how many of a
// user's submissions are compiled at once, and how long the coordinator
// remembers ended queries. Zero fields take the defaults below, except the
// rate, which is unlimited at zero (embedded runs and tests submit as one
// user as fast as they like; `tierflow coordinator` sets one).
type Bounds struct {
	// ScriptBytes is the largest submission (the request as it arrives,
	// script and all); default DefaultScriptBytes.
	ScriptBytes int
	// SubmitsPerMinute and SubmitBurst: a user's submissions over a token
	// bucket of SubmitBurst (default 10) refilled at SubmitsPerMinute; one
	// past it is refused at once, with when to try again.
	SubmitsPerMinute float64
	SubmitBurst      int
	// CompilingPerUser is how many of one user's submissions are compiled
	// and placed at once (default 2), so that a user submitting huge
	// scripts holds at most that many of the coordinator's Compilers
	// (default: GOMAXPROCS, at least 4). More wait their turn, up to a
	// SubmitBurst of them: a client submitting its queries together (one
	// per edge source, say) is served in order, not refused.
	CompilingPerUser int
	Compilers        int
	// KeepEnded is how many ended queries of each user the coordinator
	// remembers (SHOW QUERIES; default 100), and KeepEndedFor for how long
	// (default 1h); older ones are forgotten and their names are free.
	KeepEnded    int
	KeepEndedFor time.Duration
}

// DefaultScriptBytes is the default largest submission: far more than any
// script a person writes, far less than what stalls a compile.
const DefaultScriptBytes = 1 << 20

func (b *Bounds) defaults() {
	if b.ScriptBytes <= 0 {
		b.ScriptBytes = DefaultScriptBytes
	}
	if b.SubmitBurst <= 0 {
		b.SubmitBurst = 10
	}
	if b.CompilingPerUser <= 0 {
		b.CompilingPerUser = 2
	}
	if b.Compilers <= 0 {
		b.Compilers = max(4, runtime.GOMAXPROCS(0))
	}
	if b.KeepEnded <= 0 {
		b.KeepEnded = 100
	}
	if b.KeepEndedFor <= 0 {
		b.KeepEndedFor = time.Hour
	}
}

// intake is the coordinator's state of the submissions under way: each
// user's token bucket and compiles, and the compilers' slots.
type intake struct {
	mu       sync.Mutex
	tokens   map[string]float64
	refilled map[string]time.Time
	users    map[string]*userIntake
	slots    chan struct{}
}

// userIntake is one user's submissions admitted and not yet answered, and
// the turns (CompilingPerUser of them) they take to be compiled.
type userIntake struct {
	pending int
	turns   chan struct{}
}

// take admits one submission of user's past the rate and the bound on
// what waits, or says why not; the submission then takes one of turns to
// be compiled, and done must be called when it is answered.
func (c *Coordinator) take(user string) (turns chan struct{}, done func(), err error) {
	b, in := &c.cfg.Bounds, &c.in
	in.mu.Lock()
	defer in.mu.Unlock()
	if b.SubmitsPerMinute > 0 {
		now := time.Now()
		tok, seen := in.tokens[user]
		if !seen {
			tok = float64(b.SubmitBurst)
		} else {
			tok = min(float64(b.SubmitBurst), tok+now.Sub(in.refilled[user]).Minutes()*b.SubmitsPerMinute)
		}
		in.refilled[user] = now
		if tok < 1 {
			in.tokens[user] = tok
			wait := time.Duration((1 - tok) / b.SubmitsPerMinute * float64(time.Minute))
			return nil, nil, fmt.Errorf("%w: %s submitted more than %s at once or %g a minute; try again in %s",
				deploy.ErrLimit, user, cli.Count(b.SubmitBurst, "query"), b.SubmitsPerMinute, wait.Round(100*time.Millisecond))
		}
		in.tokens[user] = tok - 1
	}
	u := in.users[user]
	if u == nil {
		u = &userIntake{turns: make(chan struct{}, b.CompilingPerUser)}
		in.users[user] = u
	}
	if u.pending >= b.CompilingPerUser+b.SubmitBurst {
		return nil, nil, fmt.Errorf("%w: %s already has %s waiting to be compiled; wait for their replies", deploy.ErrLimit, user, cli.Count(u.pending, "submission"))
	}
	u.pending++
	return u.turns, func() {
		in.mu.Lock()
		if u.pending--; u.pending <= 0 {
			delete(in.users, user)
		}
		in.mu.Unlock()
	}, nil
}

// onSubmit takes a submission off the control subjects' loop: its size and
// its user's rate are checked at once, and the compile and deployment run
// on one of the compilers, so that a big script delays only its own reply.
func (c *Coordinator) onSubmit(m *nats.Msg) {
	user := lastToken(m.Subject)
	if n := len(m.Data); n > c.cfg.Bounds.ScriptBytes {
		c.cfg.Log.Warn("submission refused", "user", user, "bytes", n)
		reply(m, deploy.SubmitReply{Error: fmt.Sprintf("%v: a submission of %d bytes is over the coordinator's limit of %d bytes", deploy.ErrLimit, n, c.cfg.Bounds.ScriptBytes),
			ErrorKind: deploy.KindInput})
		return
	}
	var req deploy.SubmitRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(m, deploy.SubmitReply{Error: "bad submission: " + err.Error()})
		return
	}
	// The server let this client publish on this subject only: its token
	// is who submits, whatever the request says.
	req.Owner = user
	turns, done, err := c.take(user)
	if err != nil {
		c.cfg.Log.Warn("submission refused", "query", req.Query, "user", user, "err", err)
		reply(m, deploy.SubmitReply{Query: req.Query, Error: err.Error()})
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer done()
		for _, sem := range []chan struct{}{turns, c.in.slots} {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-c.stop:
				return
			}
		}
		defer c.recoverInto(m)
		p, err := c.Submit(context.Background(), req)
		if err != nil {
			reply(m, deploy.SubmitReply{Query: req.Query, Error: err.Error(), ErrorKind: deploy.KindOf(err)})
			return
		}
		reply(m, deploy.SubmitReply{Query: req.Query, Placement: p})
	}()
}

// recoverInto answers m with the panic of a submission's compile (guard's
// work, on the compiler's goroutine).
func (c *Coordinator) recoverInto(m *nats.Msg) {
	if p := recover(); p != nil {
		c.guard(m.Subject, func(*nats.Msg) { panic(p) })(m)
	}
}

// prune forgets ended queries past the bounds (each user's oldest beyond
// KeepEnded, and any ended more than KeepEndedFor ago): SHOW QUERIES
// stays small and their names are free again.
func (c *Coordinator) prune() {
	b := c.cfg.Bounds
	cutoff := time.Now().Add(-b.KeepEndedFor)
	ended := map[string][]deploy.QueryInfo{}
	for _, s := range c.supervisors() {
		if s.isEnded() {
			q := s.snapshot()
			ended[q.Owner] = append(ended[q.Owner], q)
		}
	}
	var gone []string
	for _, qs := range ended {
		sort.Slice(qs, func(i, j int) bool { return qs[i].Ended.After(qs[j].Ended) })
		for i, q := range qs {
			if i >= b.KeepEnded || q.Ended.Before(cutoff) {
				gone = append(gone, q.Query)
			}
		}
	}
	if len(gone) == 0 {
		return
	}
	c.mu.Lock()
	for _, id := range gone {
		delete(c.queries, id)
	}
	c.order = slices.DeleteFunc(c.order, func(id string) bool { return c.queries[id] == nil })
	c.mu.Unlock()
}

// WorkersFor is SHOW WORKERS for user: every worker, with the queries it
// runs cut to the user's own (an admin's: all). "" is an asker the
// coordinator cannot name (the bare workers subject): no query names.
func (c *Coordinator) WorkersFor(user string) []deploy.WorkerInfo {
	ws := c.Workers()
	if user != "" && c.isAdmin(user) {
		return ws
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range ws {
		ws[i].Queries = slices.DeleteFunc(slices.Clone(ws[i].Queries), func(id string) bool {
			s := c.queries[id]
			return user == "" || s == nil || s.req.Owner != user
		})
		if len(ws[i].Queries) == 0 {
			ws[i].Queries = nil
		}
	}
	return ws
}
