package coordinator

import (
	"io"
	"slices"
	"time"

	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/policy"
)

// attachment is a per-query policy attached to a query: the state it
// built for it (nil until it has something to do for the query) and when
// it was last asked.
type attachment struct {
	policy policy.Query
	state  control.Policy
	asked  time.Time
}

// attach gives the per-query policies a placement of the query: a policy
// without state for it builds one (policy.Query.Attach, outside the lock:
// it may subscribe to the query's streams), one with state is told
// (policy.Replaced). A kept plan attaches no new policy.
func (s *supervisor) attach(p *policy.Placed) {
	s.mu.Lock()
	if s.policies == nil {
		for _, q := range policy.Queries(s.c.policies()) {
			s.policies = append(s.policies, attachment{policy: q})
		}
	}
	var todo []int
	for i, a := range s.policies {
		if a.state == nil && !p.Kept {
			todo = append(todo, i)
		}
	}
	s.mu.Unlock()
	built := map[int]control.Policy{}
	for _, i := range todo {
		if st := s.policies[i].policy.Attach(p); st != nil {
			built[i] = st
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.policies {
		a := &s.policies[i]
		if st, ok := built[i]; ok {
			a.state = st
		} else if r, ok := a.state.(policy.Replaced); ok {
			r.Placed(p)
		}
	}
}

// detach releases what the policies' states hold (a tap on a stream) once
// the query ended.
func (s *supervisor) detach() {
	s.mu.Lock()
	var closers []io.Closer
	for i := range s.policies {
		if c, ok := s.policies[i].state.(io.Closer); ok {
			closers = append(closers, c)
		}
		s.policies[i].state = nil
	}
	s.mu.Unlock()
	for _, c := range closers {
		_ = c.Close()
	}
}

// decide (with s.mu held) lets the attached policies observe the query's
// report, asks those due by their cadence (policy.Cadence) about a running
// query, and starts the re-plan they ask for together: a policy of every
// report at each, the others at most once a period (less often after a
// re-plan kept the plan: keptBackoff). registered are the workers the
// coordinator knows, by name.
func (s *supervisor) decide(now time.Time, registered []string) {
	if !s.started() {
		return
	}
	for _, a := range s.policies {
		if o, ok := a.state.(policy.Observer); ok {
			o.Observe(now, &s.info)
		}
	}
	if s.state != genRunning || !s.replayable || s.info.Estimates == nil {
		return
	}
	var every, due []int
	periodic := false
	for i, a := range s.policies {
		if a.state == nil {
			continue
		}
		c := a.policy.Cadence()
		switch {
		case c.EveryReport:
			every = append(every, i)
		default:
			periodic = true
			if now.Sub(a.asked) >= c.Period {
				due = append(due, i)
			}
		}
	}
	if len(every) == 0 && (!periodic || len(due) == 0) {
		return
	}
	for _, i := range due {
		s.policies[i].asked = now
	}
	if s.kept.gen == s.info.Generation && now.Before(s.kept.until) {
		return // a re-plan kept this plan lately: back off (keptBackoff)
	}
	var asked control.Policies
	for i, a := range s.policies {
		if a.state != nil && (a.policy.Cadence().EveryReport || slices.Contains(due, i)) {
			asked = append(asked, a.state)
		}
	}
	in := control.PolicyInput{Query: s.info.Query, Workers: s.info.Workers, Age: now.Sub(s.planned), Replans: len(s.info.Replans),
		Estimates: *s.info.Estimates, Assumed: s.assumed, Registered: registered}
	d := asked.Decide(in)
	if d == nil {
		return
	}
	s.state = genCuttingOver
	go s.replan(d, s.info.Generation)
}

// keptBackoff holds the policy off a query whose re-plan kept its plan:
// until is when the policy may run again for generation gen, wait the
// back-off that led there (doubling from minKeptBackoff to maxKeptBackoff).
type keptBackoff struct {
	gen   int
	wait  time.Duration
	until time.Time
}

const (
	minKeptBackoff = 2 * time.Second
	maxKeptBackoff = 30 * time.Second
)
