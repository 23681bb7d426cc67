package dataflow

import (
	"context"
	"sync"
	"time"
)

// CPU shares one worker's processors among the queries it runs, so that a
// query that wants all of them (a cross join, a million windows) gets its
// share, not the machine, and a small query beside it keeps its latency.
//
// The rule is fair queuing on the time each query's operator steps take
// (an instance's step: the batches it handles, its notifications, a
// source's Produce), summed over its instances: a query's virtual time.
// An instance about to step waits while its query's virtual time is more
// than one Slice ahead of the least of the other queries that want to
// step (are stepping or waiting to). So among queries with work, the one
// that has used least always goes first, and one can lead another by at
// most a Slice of step time: a query with eight busy instances is held to
// what a query with one busy instance takes, however many processors it
// could occupy. A query coming back after idling starts level with the
// least (no credit saved up while it had nothing to do, no debt).
//
// Time a step spends waiting on something outside the worker (a full
// queue downstream, a link's credit, input that has not arrived) is not
// the query's: the code that waits says so with Waiting, and the wait is
// neither charged nor counted as wanting to step. A wait at the gate is
// bounded by the query's lead over the least: the least is stepping (the
// least never waits), so its virtual time grows at least as fast as time
// passes, and no query is held longer, whatever the others do.
//
// Nothing is reserved: a query alone on the worker never waits, and an
// idle query costs the others nothing.
type CPU struct {
	slice  time.Duration
	now    func() time.Duration
	mu     sync.Mutex
	wake   chan struct{} // closed and replaced when a share's state changes under waiters
	shares map[*CPUShare]struct{}
	byName map[string]*CPUShare
	// waiting counts instances waiting at the gate: a step's end wakes
	// them only when there are any.
	waiting int
	// floor never decreases: the least virtual time among the shares
	// that wanted to step when last looked at. A share that starts
	// wanting to step again starts there at the least.
	floor time.Duration
	// left, when set, is told each share's totals when its query's last
	// part leaves (OnLeave).
	left func(CPUStats)
}

// CPUStats is what one query's share took and waited on a CPU.
type CPUStats struct {
	Query string
	// Used is the step time charged; Waited the time its instances spent
	// waiting at the gate, summed; LongestWait the longest one wait.
	Used, Waited, LongestWait time.Duration
	// Waits counts the steps that waited at the gate at all.
	Waits int64
}

// OnLeave has f told each query's CPUStats when its last part leaves (a
// worker's metrics, a test's measurements). f runs under the CPU's lock:
// it must not call back.
func (c *CPU) OnLeave(f func(CPUStats)) {
	c.mu.Lock()
	c.left = f
	c.mu.Unlock()
}

// DefaultCPUSlice is the lead one query may take over another: Go's own
// scheduler lets a goroutine run 10ms before it preempts it, so within a
// slice the two are as fair as the runtime below them can be.
const DefaultCPUSlice = 10 * time.Millisecond

// NewCPU is a worker's processors shared by slices of slice (default
// DefaultCPUSlice when 0).
func NewCPU(slice time.Duration) *CPU {
	if slice <= 0 {
		slice = DefaultCPUSlice
	}
	start := time.Now()
	return newCPU(slice, func() time.Duration { return time.Since(start) })
}

// newCPU is NewCPU on the clock now (tests step a fake one).
func newCPU(slice time.Duration, now func() time.Duration) *CPU {
	return &CPU{slice: slice, now: now, wake: make(chan struct{}), shares: map[*CPUShare]struct{}{}, byName: map[string]*CPUShare{}}
}

// Slice is the lead one query may take over another.
func (c *CPU) Slice() time.Duration { return c.slice }

// CPUShare is one query's share of a worker's CPU (Config.CPU).
type CPUShare struct {
	c    *CPU
	name string
	// Guarded by c.mu. used is the step time charged so far (virtual
	// time); running instances are stepping, since startSum (the sum of
	// their start times, so that their time so far is running*now -
	// startSum); waiting ones wait at the gate.
	used     time.Duration
	running  int
	startSum time.Duration
	waiting  int
	// charged is the step time charged over the share's life (Used).
	charged time.Duration
	// parts counts the Joins not yet left (a query's parts on workers
	// sharing one CPU, its generations during a cut-over).
	parts int
	// waited, longest and waits: the gate's waits (CPUStats).
	waited, longest time.Duration
	waits           int64
}

// Join is query name's share (Leave it when the query's part ends). Parts
// of one query joining one CPU (on workers of one process, or two
// generations during a cut-over) share one share: a query's stages are
// not each other's competition.
func (c *CPU) Join(name string) *CPUShare {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.byName[name]
	if s == nil {
		s = &CPUShare{c: c, name: name}
		c.byName[name] = s
		c.shares[s] = struct{}{}
	}
	s.parts++
	return s
}

// Leave ends a Join: when the query's last part leaves, it no longer
// counts among the others.
func (s *CPUShare) Leave() {
	if s == nil {
		return
	}
	c := s.c
	c.mu.Lock()
	if s.parts--; s.parts == 0 {
		delete(c.shares, s)
		delete(c.byName, s.name)
		c.broadcast()
		if c.left != nil {
			c.left(s.stats())
		}
	}
	c.mu.Unlock()
}

// Used is the step time the share's query has been charged.
func (s *CPUShare) Used() time.Duration {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.charged + time.Duration(s.running)*s.c.now() - s.startSum
}

// Stats is what the share's query has taken and waited so far.
func (s *CPUShare) Stats() CPUStats {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.stats()
}

// stats is Stats with c.mu held.
func (s *CPUShare) stats() CPUStats {
	return CPUStats{Query: s.name, Used: s.charged + time.Duration(s.running)*s.c.now() - s.startSum,
		Waited: s.waited, LongestWait: s.longest, Waits: s.waits}
}

// broadcast wakes everyone waiting at the gate. c.mu held.
func (c *CPU) broadcast() {
	if c.waiting > 0 {
		close(c.wake)
		c.wake = make(chan struct{})
	}
}

// raiseFloor moves the floor up to the least virtual time of the shares
// that want to step. c.mu held.
func (c *CPU) raiseFloor(now time.Duration) {
	var m time.Duration
	n := 0
	for s := range c.shares {
		if s.active() {
			if v := s.virtual(now); n == 0 || v < m {
				m = v
			}
			n++
		}
	}
	if n > 0 {
		c.floor = max(c.floor, m)
	}
}

func (s *CPUShare) active() bool { return s.running > 0 || s.waiting > 0 }

// virtual is the share's virtual time at now, its running steps included.
func (s *CPUShare) virtual(now time.Duration) time.Duration {
	return s.used + time.Duration(s.running)*now - s.startSum
}

// least is the smallest virtual time among the other shares that want to
// step, and how many they are. c.mu held.
func (s *CPUShare) least(now time.Duration) (time.Duration, int) {
	var m time.Duration
	n := 0
	for o := range s.c.shares {
		if o == s || !o.active() {
			continue
		}
		if v := o.virtual(now); n == 0 || v < m {
			m = v
		}
		n++
	}
	return m, n
}

// enter waits for the query's turn (see CPU) and starts a step.
func (s *CPUShare) enter(ctx context.Context) (time.Duration, error) {
	c := s.c
	c.mu.Lock()
	now := c.now()
	if !s.active() {
		// Back from idle (or new): level with those with work.
		s.used = max(s.used, c.floor)
	}
	s.waiting++
	arrived := now
	var deadline time.Duration
	var timer *time.Timer
	for {
		m, n := s.least(now)
		lead := s.virtual(now) - m
		if n == 0 || lead <= c.slice {
			break
		}
		if deadline == 0 {
			// The least, stepping, catches up at least as fast as
			// time passes: waiting out the lead is the most it takes.
			deadline = now + lead
		} else if now >= deadline {
			break
		}
		// The others' virtual time grows while they step: look again
		// after a slice at the latest, or when a step ends.
		wake := c.wake
		c.waiting++
		c.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(min(c.slice, deadline-now))
		} else {
			timer.Reset(min(c.slice, deadline-now))
		}
		var err error
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		c.waiting--
		now = c.now()
		if err != nil {
			s.waiting--
			c.mu.Unlock()
			timer.Stop()
			return 0, err
		}
	}
	if timer != nil {
		timer.Stop()
		w := now - arrived
		s.waited += w
		s.longest = max(s.longest, w)
		s.waits++
	}
	s.waiting--
	s.running++
	s.startSum += now
	c.mu.Unlock()
	return now, nil
}

// exit ends a step begun at start and charges its time.
func (s *CPUShare) exit(start time.Duration) {
	c := s.c
	c.mu.Lock()
	now := c.now()
	c.raiseFloor(now)
	s.running--
	s.startSum -= start
	s.used += now - start
	s.charged += now - start
	c.broadcast()
	c.mu.Unlock()
}

// turn is one instance's state under its query's share: whether it is in
// a step and since when (what Waiting pauses).
type turn struct {
	share *CPUShare
	in    bool
	start time.Duration
}

type turnKey struct{}

// Waiting tells the worker's CPU sharing that the step running under ctx
// (an operator's Context().Context(), or what the engine passes a send)
// waits on something outside the worker from now until the returned
// function is called: the wait is not charged to its query, nor does the
// query count as wanting to step meanwhile. Outside a shared worker it
// does nothing. Call the returned function exactly once, from the same
// goroutine.
func Waiting(ctx context.Context) func() {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil || !t.in {
		return func() {}
	}
	t.share.exit(t.start)
	t.in = false
	return func() {
		s, c := t.share, t.share.c
		c.mu.Lock()
		t.start = c.now()
		s.running++
		s.startSum += t.start
		c.mu.Unlock()
		t.in = true
	}
}
