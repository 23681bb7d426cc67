// Package sched is a worker's inference scheduler, shared by every query on
// the worker: one model session per (variant, device) however many queries
// call it, a queue of batches per query, and a Policy that decides which
// queue's batch runs next and how many of its rows (DeepQuery, MMSys '19:
// real-time batches first, best-effort ones sized to end before the next
// real-time batch is due).
//
// A query's model operator runs through a session bound to its Tenant
// (Bind): each Run is a request the scheduler grants, in parts when the
// policy says so; the caller's goroutine then runs the granted rows itself,
// so the scheduler adds a hand-off, not a copy. Every run feeds the
// profiles (batch time by size) and every request the arrival predictor.
//
// sched imports operators/ml (the Session it wraps) and nothing of runtime:
// runtime/inference opens sessions and hands them here; runtime/worker owns
// one Scheduler per worker.
package sched

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tierflow/tierflow/operators/ml"
)

var (
	// ErrClosed: the scheduler was closed while a batch waited.
	ErrClosed = errors.New("sched: scheduler closed")
	// ErrPolicy: an unknown policy name.
	ErrPolicy = errors.New("sched: bad policy")
)

// Scheduler is one worker's inference scheduler. Safe for concurrent use.
type Scheduler struct {
	policy   Policy
	profiles *Profiles
	arrivals *Arrivals
	now      func() time.Time
	// took is how long a part of rows rows begun at start ran (the
	// profile's measure): time.Since, or a test's, whose clock (now)
	// stands still while real runs' times would move the profile.
	took func(start time.Time, rows int) time.Duration

	mu       sync.Mutex
	sessions map[string]*shared
	queues   map[string]*Queue
	tenants  map[string]Tenant
	stats    map[string]*QueryStats
	running  []*runningBatch
	seq      uint64
	timer    *time.Timer
	timerAt  time.Time
	closed   bool
	started  time.Time
	lastWhy  string
	served   map[string]*Served
	tracer   func(Part)
	// inFlight: real-time queries whose last batch's model run ended (at
	// the time held) and whose rows have not reached the worker's sink
	// yet (Delivered).
	inFlight map[string]time.Time
}

// Part is one granted part of a batch as it ran, for a tracer (Trace):
// where a batch's time went between reaching the scheduler and its model
// run's end.
type Part struct {
	Query    string
	Priority Priority
	Rows     int
	// Arrival is when the part's batch reached the scheduler; Granted
	// when the policy granted the part; Started and Ended its model run,
	// on the caller's goroutine (Started - Granted is the caller's wake-up).
	Arrival, Granted, Started, Ended time.Time
	// PredictedEnd is when the profile said the run would end (Granted
	// without an estimate); Due the real-time arrival the policy sized the
	// part to end before (zero: none).
	PredictedEnd, Due time.Time
	// RealTimeArrived is the first real-time batch's arrival while this
	// (non-real-time) part ran (zero: none).
	RealTimeArrived time.Time
}

// Trace has f told every part that ran from now on, after the scheduler
// accounted it (outside its lock; f must not call back into the
// scheduler's Run path). Benchmarks use it to take a real-time batch's
// latency apart.
func (s *Scheduler) Trace(f func(Part)) {
	s.mu.Lock()
	s.tracer = f
	s.mu.Unlock()
}

// Served is what ran on one session since the scheduler started, however
// many queries came and went: the rows, and those that ended after their
// deadline.
type Served struct {
	Key        string `json:"key"`
	Rows, Late int64
}

type shared struct {
	sess  ml.Session
	users map[string]bool
}

type runningBatch struct {
	Running
	req *Request
	due time.Time
	// rtArrived: the first real-time batch that arrived while this
	// (non-real-time) part ran (Outcome.RealTimeArrived).
	rtArrived time.Time
}

// New returns a scheduler running p (nil: Naive).
func New(p Policy) *Scheduler {
	if p == nil {
		p = Naive{}
	}
	return &Scheduler{policy: p, profiles: NewProfiles(), arrivals: NewArrivals(), now: time.Now,
		took:     func(start time.Time, _ int) time.Duration { return time.Since(start) },
		sessions: map[string]*shared{}, queues: map[string]*Queue{}, tenants: map[string]Tenant{},
		stats: map[string]*QueryStats{}, started: time.Now(), served: map[string]*Served{}, inFlight: map[string]time.Time{}}
}

// Policy is the scheduler's policy.
func (s *Scheduler) Policy() Policy { return s.policy }

// Profiles are the scheduler's batch-time profiles.
func (s *Scheduler) Profiles() *Profiles { return s.profiles }

// Arrivals is the scheduler's arrival predictor.
func (s *Scheduler) Arrivals() *Arrivals { return s.arrivals }

// Key names a session by what makes it distinct: the model file and the
// device (ONNX Runtime provider options included).
func Key(file, device string) string { return file + "@" + device }

// Session returns the one session for key, opening it with open the first
// time; query is counted as one of its users. When the policy profiles,
// a new session is measured at its batch sizes before it is handed out.
func (s *Scheduler) Session(key, query string, open func() (ml.Session, error)) (ml.Session, error) {
	s.mu.Lock()
	sh := s.sessions[key]
	s.mu.Unlock()
	if sh == nil {
		sess, err := open()
		if err != nil {
			return nil, err
		}
		if p, ok := s.policy.(Profiling); ok {
			if err := s.profiles.Measure(key, sess, p.ProfileSizes()); err != nil {
				return nil, fmt.Errorf("profiling %s: %w", key, err)
			}
		}
		s.mu.Lock()
		if sh = s.sessions[key]; sh == nil { // another query may have opened it meanwhile
			sh = &shared{sess: sess, users: map[string]bool{}}
			s.sessions[key] = sh
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	sh.users[query] = true
	s.mu.Unlock()
	return sh.sess, nil
}

// Sessions is the number of sessions the scheduler holds.
func (s *Scheduler) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Keys lists the sessions' keys.
func (s *Scheduler) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sessions))
	for k := range s.sessions {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Users lists the queries that use key's session.
func (s *Scheduler) Users(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if sh := s.sessions[key]; sh != nil {
		for q := range sh.users {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// Bind returns sess as seen by t's model operator: every Run goes through
// the scheduler under t. key is the session's Key.
func (s *Scheduler) Bind(sess ml.Session, key string, t Tenant) ml.Session {
	// A variant that cannot fill the bound session's outputs is not one
	// the policy may choose.
	var vs []Variant
	for _, v := range t.Variants {
		if v.Key == key || (v.Session != nil && Compatible(sess.Outputs(), v.Session)) {
			vs = append(vs, v)
		}
	}
	t.Variants = vs
	s.mu.Lock()
	s.tenants[t.Query] = t
	if s.stats[t.Query] == nil {
		s.stats[t.Query] = &QueryStats{Query: t.Query, Priority: t.Priority.String(), since: s.now()}
	}
	s.mu.Unlock()
	return &bound{s: s, inner: sess, key: key, t: t}
}

// Forget drops a query that ended: its stats, its arrival history, its use
// of the sessions. Requests it still has waiting are not affected.
func (s *Scheduler) Forget(query string) {
	s.mu.Lock()
	delete(s.tenants, query)
	delete(s.stats, query)
	delete(s.inFlight, query)
	for _, sh := range s.sessions {
		delete(sh.users, query)
	}
	s.mu.Unlock()
	s.arrivals.Forget(query)
}

// Close grants every waiting batch an error and refuses new ones.
func (s *Scheduler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, q := range s.queues {
		for _, r := range q.Pending {
			if !r.running {
				r.grant <- -1
			}
		}
	}
	if s.timer != nil {
		s.timer.Stop()
	}
}

// QueryStats is what one query's batches took of the worker.
type QueryStats struct {
	Query    string `json:"query"`
	Priority string `json:"priority,omitempty"`
	// Batches and Rows run; Busy the time they ran; Wait the time batches
	// waited for a grant (summed).
	Batches int64         `json:"batches"`
	Rows    int64         `json:"rows"`
	Busy    time.Duration `json:"busy_ns"`
	Wait    time.Duration `json:"wait_ns"`
	// Share is Busy over the time since the query's first model call here:
	// its predicted load on the worker, what placement weighs.
	Share float64 `json:"share"`
	since time.Time
}

// Stats lists every query's stats, by query.
func (s *Scheduler) Stats() []QueryStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []QueryStats
	for _, st := range s.stats {
		x := *st
		if el := now.Sub(st.since); el > 0 {
			x.Share = float64(st.Busy) / float64(el)
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Query < out[j].Query })
	return out
}

// Served lists the rows run per session, by key.
func (s *Scheduler) Served() []Served {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Served
	for _, sv := range s.served {
		out = append(out, *sv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Why is the policy's latest reason for leaving work waiting ("" none).
func (s *Scheduler) Why() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastWhy
}

// submit queues r and dispatches.
func (s *Scheduler) submit(r *Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.seq++
	r.seq = s.seq
	q := s.queues[r.Query]
	if q == nil {
		q = &Queue{Tenant: s.tenants[r.Query]}
		q.Query = r.Query
		s.queues[r.Query] = q
	}
	q.Pending = append(q.Pending, r)
	if r.Priority == RealTime {
		for _, rb := range s.running {
			if rb.req.Priority != RealTime && rb.rtArrived.IsZero() {
				rb.rtArrived = r.Arrival
			}
		}
	}
	s.arrivals.Observe(r.Query, r.Arrival, r.Total)
	s.dispatch()
	return nil
}

// finish records a granted part of r that ran rows rows from start for d,
// and dispatches what it freed.
func (s *Scheduler) finish(r *Request, rows int, start time.Time, d time.Duration, failed bool) {
	s.profiles.Observe(r.Key, rows, d)
	s.mu.Lock()
	tracer := s.tracer
	part := Part{Query: r.Query, Priority: r.Priority, Rows: rows, Arrival: r.Arrival, Started: start, Ended: start.Add(d)}
	for i, rb := range s.running {
		if rb.req == r {
			s.running = append(s.running[:i], s.running[i+1:]...)
			part.Granted, part.PredictedEnd, part.Due, part.RealTimeArrived = rb.Started, rb.End, rb.due, rb.rtArrived
			if o, ok := s.policy.(Observer); ok {
				o.Observe(Outcome{Query: r.Query, Priority: r.Priority, Key: r.Key, Rows: rows,
					Started: rb.Started, PredictedEnd: rb.End, Ended: s.now(), RealTimeArrived: rb.rtArrived})
			}
			break
		}
	}
	s.account(r, rows, d, failed)
	s.mu.Unlock()
	if tracer != nil {
		tracer(part)
	}
}

// account counts a finished part and dispatches what it freed. Called
// with mu held.
func (s *Scheduler) account(r *Request, rows int, d time.Duration, failed bool) {
	r.running = false
	r.Rows -= rows
	sv := s.served[r.Key]
	if sv == nil {
		sv = &Served{Key: r.Key}
		s.served[r.Key] = sv
	}
	sv.Rows += int64(rows)
	if !r.Deadline.IsZero() && s.now().After(r.Deadline) {
		sv.Late += int64(rows)
	}
	if st := s.stats[r.Query]; st != nil {
		st.Batches++
		st.Rows += int64(rows)
		st.Busy += d
	}
	if r.Rows <= 0 || failed {
		s.drop(r)
		if r.Priority == RealTime && !failed {
			s.inFlight[r.Query] = s.now()
		}
	}
	s.dispatch()
}

// Delivered tells the scheduler that query's rows reached a sink on this
// worker (the worker's end-to-end latency hook): its batch no longer needs
// the cores between the model and the sink.
func (s *Scheduler) Delivered(query string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.inFlight[query]; !ok {
		return
	}
	delete(s.inFlight, query)
	s.dispatch()
}

func (s *Scheduler) drop(r *Request) {
	q := s.queues[r.Query]
	if q == nil {
		return
	}
	for i, x := range q.Pending {
		if x == r {
			q.Pending = append(q.Pending[:i], q.Pending[i+1:]...)
			break
		}
	}
	if len(q.Pending) == 0 {
		delete(s.queues, r.Query)
	}
}

// dispatch grants batches while slots are free and the policy picks one.
// Called with mu held.
func (s *Scheduler) dispatch() {
	for !s.closed {
		if n := s.policy.Slots(); n > 0 && len(s.running) >= n {
			return
		}
		v := s.view()
		if len(v.Queues) == 0 {
			return
		}
		d := s.policy.Next(v)
		if d.Run == nil || d.Run.running || d.Run.Rows <= 0 {
			s.lastWhy = d.Why
			s.recheck(d.Recheck)
			return
		}
		s.lastWhy = ""
		r := d.Run
		if d.Variant != "" && r.Rows == r.Total {
			// A variant is chosen for a whole batch, before any part of it
			// ran: its rows then all come from one model.
			for i, vr := range s.tenants[r.Query].Variants {
				if vr.Name == d.Variant && vr.Session != nil {
					r.Variant, r.Key = i, vr.Key
				}
			}
		}
		rows := d.Rows
		if rows <= 0 || rows > r.Rows || !r.Splittable {
			rows = r.Rows
		}
		now := v.Now
		end := now
		if p, ok := s.profiles.Predict(r.Key, rows); ok {
			end = now.Add(p)
		}
		r.running = true
		s.running = append(s.running, &runningBatch{Running: Running{Query: r.Query, Key: r.Key, Rows: rows, Started: now, End: end}, req: r, due: d.Due})
		if st := s.stats[r.Query]; st != nil && r.Rows == r.Total {
			st.Wait += now.Sub(r.Arrival)
		}
		r.grant <- rows
	}
}

// recheck arms the timer that asks the policy again at t.
func (s *Scheduler) recheck(t time.Time) {
	if t.IsZero() {
		return
	}
	if s.timer != nil && !s.timerAt.IsZero() && !t.Before(s.timerAt) && s.timerAt.After(s.now()) {
		return // an earlier recheck is armed
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerAt = t
	s.timer = time.AfterFunc(max(t.Sub(s.now()), 0), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.timerAt = time.Time{}
		s.dispatch()
	})
}

// view is the policy's input. Called with mu held.
func (s *Scheduler) view() *View {
	v := &View{Now: s.now(), Profiles: s.profiles, Arrivals: s.arrivals}
	for _, q := range s.queues {
		var pend []*Request
		for _, r := range q.Pending {
			if !r.running {
				pend = append(pend, r)
			}
		}
		if len(pend) > 0 {
			v.Queues = append(v.Queues, &Queue{Tenant: q.Tenant, Pending: pend})
		}
	}
	sort.Slice(v.Queues, func(i, j int) bool { return v.Queues[i].Pending[0].seq < v.Queues[j].Pending[0].seq })
	for _, rb := range s.running {
		v.Running = append(v.Running, rb.Running)
	}
	for _, t := range s.tenants {
		v.Tenants = append(v.Tenants, t)
	}
	if len(s.inFlight) > 0 {
		v.InFlight = make(map[string]time.Time, len(s.inFlight))
		for q, t := range s.inFlight {
			v.InFlight[q] = t
		}
	}
	sort.Slice(v.Tenants, func(i, j int) bool { return v.Tenants[i].Query < v.Tenants[j].Query })
	return v
}
