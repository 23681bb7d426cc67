package dataflow

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
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
// A step is charged the CPU time its thread used, not the wall time it
// took: while other queries share the CPU its goroutine is locked to its
// thread for the step and the thread's CPU clock read (threadCPU; Go has
// no per-goroutine clock, and a goroutine locked to a thread is the only
// one running on it, so for the step the two are the same). A query alone
// on the CPU is not locked (see begin): the lock costs two OS thread
// switches each time a step blocks (Go hands the processor to another
// thread and back), and its charge weighs it against nobody. Time the step was runnable but not running -
// descheduled by the machine's other processes, or by Go's scheduler for
// another query's goroutines - is then nobody's, where wall time charged it
// to whichever query happened to be stepping: a small query on a loaded
// machine was charged for the load and held at the gate for it. A step
// still running counts with the CPU time its thread has used so far (the
// kernel keeps a clock per thread that any thread of the process may read:
// threadCPUOf), so virtual times only grow and the least, stepping, grows
// as fast as it gets the processor. Work an operator's own goroutines do
// for it outside its steps (a source's parallel parse and decode) runs
// through a Helper: gated and charged as steps of the query too. A query
// alone reads no clock at all (clocks): nothing is weighed against its
// charges, and a query that joins starts level with it.
//
// A query more than a slice ahead of another joined query (one the gate
// would hold if the other were stepping) also steps on no more than its
// share of the processors at once (procs over the queries joined, rounded
// up):
// its other instances and helpers wait at the gate, parked, not in Go's
// run queue. Fair queuing on step time alone let a query with many busy
// instances fill the run queue, and everything else that woke on the
// worker - another query's part being built, the NATS connections'
// readers, a status report - waited behind all of them, each hop; a
// small query's handful of hops took 0.1-0.2 s of its latency (traced in
// docs/benchmarks.md). A query joins when its part starts to build, so
// the build's own round trips find a processor the other query does not
// hold. A step that has used no CPU for a slice no longer counts (it is
// blocked, see least), and no step waits for a processor longer than a
// slice, as long as Go lets one goroutine hold a processor before it
// preempts it: the cap is never a deadlock (a step blocked without saying
// so, begun unlocked while its query was alone, may look busy).
//
// Steps never hold every processor Go has (#25). While two queries or
// more have joined, and for a second after (keepAfterContention: each
// change of GOMAXPROCS stops the world), Go runs one processor more than
// the worker's own (GOMAXPROCS as the process was given it: procs,
// keepForControl), and a
// query more than a slice ahead
// of another joined query steps only while fewer than procs steps are
// using CPU, every query's counted: it never takes the last processor.
// So a goroutine that wakes outside any step (a NATS connection's reader
// with a deploy request, a link's flush answered, a part's done message;
// in one process the NATS server's and the coordinator's) finds a
// processor idle - Go hands a readied goroutine to an idle P, and a
// thread waits in epoll for the network while one is idle - and waits
// only for the operating system to give its thread a core, not in a
// queue behind steps that Go preempts after 10 ms each (traced beside a
// cross join: up to 100 ms). The query behind, a small one beside a large
// one, is not held by the cap (the gate's rule: the least never waits):
// its steps may take the kept processor too, until the query ahead gives
// one back at its next batch after a slice (yield; a step that emits
// nothing for long, an aggregation opening a window per row, calls Yield
// between pieces of its work instead). So the wake-up waits
// at most for steps of queries within a slice of the least - beside one
// large query, the small one's own - where it waited behind every step Go
// had runnable. A processor that frees goes to the waiting step of the
// query that has used less first, and a step back from a Waiting passes
// the gate again: no step holds a processor it was not given.
//
// The cap binds while two queries or more have joined (a query joins as
// its part's build starts), and on a query alone while the processor is
// still kept after (keptAlone): a query alone otherwise steps as it did,
// so that a step
// blocked without saying so (its thread then runs other goroutines, and
// it looks busy) never holds its own query's next step at the gate - on a
// worker of one processor that cost a small query alone 140 ms a run. The
// hop before a query joins, its deploy request, can find every processor
// taken by a query alone: such a query takes a breather every two slices
// (breatherGather), its steps parked at the gate until one poll of the
// network has come back, so that hop waits about two slices, not for
// sysmon's poll and then behind a run queue of preempted steps.
//
// Nothing else is reserved, and an idle query costs the others nothing.
type CPU struct {
	slice time.Duration
	// procs is how many processors the worker's steps run on, all queries
	// together (StepProcessors; 0: no cap on steps at once, the tests'
	// fake clocks).
	procs int
	// keeps: the CPU has Go keep a processor for the control plane while
	// two queries or more are joined (keepForControl; not the tests' fake
	// clocks).
	keeps bool
	now   func() time.Duration
	// thread reads the calling thread's CPU time and an id of the thread
	// that threadOf reads the CPU time of from any thread; lock says a
	// step's goroutine is locked to its thread for the step (tests make
	// both the fake clock, unlocked).
	thread   func() (time.Duration, int)
	threadOf func(id int) time.Duration
	lock     bool
	// lockThread and unlockThread lock a step's goroutine to its thread
	// (runtime.LockOSThread; tests count them).
	lockThread, unlockThread func()
	// queries counts the shares (c.shares' size, read without c.mu by a
	// step's begin): a step locks its thread only when there are two.
	queries atomic.Int32
	mu      sync.Mutex
	wake    chan struct{} // closed and replaced when a share's state changes under waiters
	shares  map[*CPUShare]struct{}
	byName  map[string]*CPUShare
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
	// breathes: a query alone on the CPU takes a breather every two slices
	// (see breatherEvery; NewCPU, not the tests' fake clocks unless they set
	// it). breathDue is the clock (ns) at which the next one is due;
	// breathing (c.mu) says one is under way since breathFrom, and
	// breathSent that its round is on its way (breatherRound).
	breathes   bool
	breathDue  atomic.Int64
	breathing  bool
	breathSent bool
	breathFrom time.Duration
	// breathGen counts the breathers begun: a round ends its own only.
	breathGen int
	// breaths counts the breathers ended (tests).
	breaths atomic.Int64
	// aloneFrom is the virtual time of the CPU's one query when it became
	// the only one (keptAlone).
	aloneFrom time.Duration
	// sharedAt is the clock when a second query last joined (c.mu): a step
	// begun unclocked before it counts as using CPU for a slice after it
	// (stepping).
	sharedAt time.Duration
}

// clocks says a step beginning now reads its thread's CPU clock: while
// another query shares the CPU, or Go still keeps the processor for the
// control plane after one did (keptAlone weighs the query alone by its
// steps then). A query alone otherwise is weighed against nobody (a query
// that joins starts level with it: Join), so its steps read no clock: the
// thread clock and the thread id are two system calls at each step's start
// and two at its end, with no vDSO path, and on a worker of one processor
// with many short steps (bench nexmark q5 on 2 worker processes) they were
// a quarter of the CPU the second worker process added.
func (c *CPU) clocks() bool {
	return c.queries.Load() > 1 || c.keeps && raisedTo.Load() > 0
}

// CPUStats is what one query's share took and waited on a CPU.
type CPUStats struct {
	Query string
	// Used is the step time charged (while the query shared the CPU:
	// CPU.clocks); Waited the time its instances spent
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
	c := newCPU(slice, func() time.Duration { return time.Since(start) })
	c.procs, c.keeps = StepProcessors(), true
	c.breathes = breathersWork()
	if threadCPUWorks() {
		c.thread, c.threadOf, c.lock = threadCPU, threadCPUOf, true
		c.lockThread, c.unlockThread = runtime.LockOSThread, runtime.UnlockOSThread
	}
	return c
}

// The processor kept for the control plane is Go's only while some CPU of
// the process has two queries or more joined, where the cap binds (see
// CPU), and for keepAfterContention after: a query alone is not capped,
// so with it kept all the time a query alone on a worker of one processor
// stepped on two, and the worker used twice the CPU it offers (bench
// nexmark --processes 1,2: one worker process's q4 at 2.2-2.7M events/s
// where it had 1.2-1.7M, so two processes were 0.63-0.74x of one).
// contended counts such CPUs; raisedTo is the GOMAXPROCS set while it is
// above 0 (0: not raised); calm counts the times contended went to 0, so
// that a give-back set up then lowers only if none came after it.
var (
	controlMu sync.Mutex
	contended int
	calm      int
	raisedTo  atomic.Int32
	// controlChanges counts the GOMAXPROCS changes keepForControl made
	// (tests: each one stops the world).
	controlChanges atomic.Int64
)

// keepAfterContention is how long Go keeps the processor after the last
// CPU of the process with two queries went back to one (#25). Every
// change of GOMAXPROCS stops the world: every goroutine of the process
// waits until each thread holding a processor has stopped, and a thread
// the operating system has not given a core does not stop until it gets
// one. Given back as each small query's part left, a worker beside a busy
// query stopped twice per small query - 24 times in 1.5 s of a client
// submitting in a loop - and on the loaded two-core machine one stop took
// 190 ms, in which the NATS reader with the next query's frames sat
// runnable (traced, docs/benchmarks.md). A second is long beside the gap
// between one query's part and the next of a client that submits again at
// once (its answer, plan and deploy: tens of milliseconds), and short
// beside a busy query's life: a query alone steps on one processor more
// for at most that long after its last neighbour left.
const keepAfterContention = time.Second

// keepForControl is called as a CPU's joined queries go from one to two
// (more true) or back (false): Go runs one processor more than the steps
// may take while any CPU of the process has two or more, and until
// keepAfterContention has passed since the last of them had.
func keepForControl(more bool) {
	controlMu.Lock()
	defer controlMu.Unlock()
	if more {
		if contended++; contended == 1 && raisedTo.Load() == 0 {
			p := runtime.GOMAXPROCS(0)
			raisedTo.Store(int32(p + 1))
			runtime.GOMAXPROCS(p + 1)
			controlChanges.Add(1)
		}
		return
	}
	if contended--; contended == 0 {
		calm++
		gen := calm
		time.AfterFunc(keepAfterContention, func() { giveBackKept(gen) })
	}
}

// giveBackKept lowers GOMAXPROCS to the process's own once no CPU has had
// two queries since calm was gen.
func giveBackKept(gen int) {
	controlMu.Lock()
	defer controlMu.Unlock()
	if contended > 0 || calm != gen {
		return
	}
	if r := raisedTo.Swap(0); r > 1 && runtime.GOMAXPROCS(0) == int(r) {
		runtime.GOMAXPROCS(int(r) - 1)
		controlChanges.Add(1)
	}
}

// StepProcessors is how many processors a worker's steps run on at once:
// GOMAXPROCS as the process was given it (a cgroup's CPU limit, or what
// the operator set), without the one NewCPU keeps for the control plane
// (what a worker offers to place and admit by).
func StepProcessors() int {
	p := runtime.GOMAXPROCS(0)
	if r := int(raisedTo.Load()); r > 1 && p == r {
		return p - 1
	}
	return p
}

// newCPU is NewCPU on the clock now, steps charged by it too (tests step a
// fake one).
func newCPU(slice time.Duration, now func() time.Duration) *CPU {
	return &CPU{slice: slice, now: now, thread: func() (time.Duration, int) { return now(), 0 }, threadOf: func(int) time.Duration { return now() },
		wake: make(chan struct{}), shares: map[*CPUShare]struct{}{}, byName: map[string]*CPUShare{}}
}

// Slice is the lead one query may take over another.
func (c *CPU) Slice() time.Duration { return c.slice }

// CPUShare is one query's share of a worker's CPU (Config.CPU).
type CPUShare struct {
	c    *CPU
	name string
	// Guarded by c.mu. used is the step time charged so far (virtual
	// time, steps ended); running are the steps under way (their time so
	// far counts too); waiting ones wait at the gate.
	used    time.Duration
	running map[*stepStart]struct{}
	waiting int
	// starting counts steps past the gate that have not begun (begin):
	// they hold a step processor already (slotFree).
	starting int
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
		// A new query starts level with the least of those with work, as
		// one back from idle does (enter): at zero, every query joined
		// before it was "ahead" of it, and one with two instances busy was
		// held to its share for as long as the newcomer had not stepped -
		// a small query held beside an abusive one that had just joined
		// (#25: 90 ms at the gate with 1.6 ms of steps). The floor lags the
		// others' time, so a query already running still leads a newcomer
		// and is held to its share while the newcomer's part is built.
		s = &CPUShare{c: c, name: name, used: c.floor}
		c.byName[name] = s
		c.shares[s] = struct{}{}
		c.queries.Add(1)
		if len(c.shares) == 2 {
			c.sharedAt = c.now()
			for o := range c.shares {
				if o != s {
					o.leadOfUnclocked(c.sharedAt)
				}
			}
			if c.keeps {
				keepForControl(true)
			}
		}
		if len(c.shares) == 1 {
			c.aloneFrom = s.used
		}
	}
	s.parts++
	return s
}

// leadOfUnclocked adds to the virtual time of a query that was alone the
// time its steps under way, begun without a clock, have taken so far (at
// most breatherEvery slices each: alone, a step that emits meets its gate
// at a breather that often), as their progress counted when they read one:
// the query already running then leads the newcomer and is held to its
// share while the newcomer's part is built (see Join). c.mu held.
func (s *CPUShare) leadOfUnclocked(now time.Duration) {
	for st := range s.running {
		if !st.clocked {
			s.used += min(max(0, now-st.at), breatherEvery*s.c.slice)
		}
	}
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
		c.queries.Add(-1)
		if c.keeps && len(c.shares) == 1 {
			keepForControl(false)
			for o := range c.shares {
				c.aloneFrom = o.virtual()
			}
		}
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
	return s.charged + s.progress()
}

// progress is the CPU time the share's running steps have used so far.
// c.mu held.
func (s *CPUShare) progress() time.Duration {
	var p time.Duration
	now := s.c.now()
	for st := range s.running {
		if st.clocked {
			p += st.bounded(s.c.threadOf(st.thread)-st.cpu, now)
		}
	}
	return p
}

// bounded is a step's CPU time read off its thread's clock, no more than
// the wall time since it began (by the clock now): a thread uses one core
// at most, so a reading past that is not the step's (a clock read against
// another thread's, see threadCPU). So a query's virtual time never falls
// when a step ends (exit charges at least what progress counted: the same
// bound, or the wall time), and a query levelled with it at the floor
// never finds itself a lead ahead of it after: its wait at the gate is
// bounded by its own steps since, which the gate counts (#25).
func (st *stepStart) bounded(cpu, now time.Duration) time.Duration {
	return max(0, min(cpu, now-st.at))
}

// Stats is what the share's query has taken and waited so far.
func (s *CPUShare) Stats() CPUStats {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.stats()
}

// stats is Stats with c.mu held.
func (s *CPUShare) stats() CPUStats {
	return CPUStats{Query: s.name, Used: s.charged + s.progress(),
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
func (c *CPU) raiseFloor() {
	var m time.Duration
	n := 0
	for s := range c.shares {
		if s.active() {
			if v := s.virtual(); n == 0 || v < m {
				m = v
			}
			n++
		}
	}
	if n > 0 {
		c.floor = max(c.floor, m)
	}
}

func (s *CPUShare) active() bool { return len(s.running) > 0 || s.waiting > 0 }

// virtual is the share's virtual time, its running steps included.
func (s *CPUShare) virtual() time.Duration {
	return s.used + s.progress()
}

// least is the smallest virtual time among the other shares that want to
// step, and how many they are. A share whose steps under way have all
// used no CPU for a slice is not stepping but blocked (a helper reading
// a file, a step waiting without saying so): its virtual time does not
// grow, so counted as the least it would hold the others at the gate for
// their whole lead while it uses nothing. c.mu held.
func (s *CPUShare) least() (time.Duration, int) {
	var m time.Duration
	n := 0
	now := s.c.now()
	for o := range s.c.shares {
		if o == s || !o.active() || o.waiting == 0 && o.blocked(now) {
			continue
		}
		if v := o.virtual(); n == 0 || v < m {
			m = v
		}
		n++
	}
	return m, n
}

// blocked says every step the share has under way has used no CPU for
// more than a slice (by the clock now). c.mu held.
func (s *CPUShare) blocked(now time.Duration) bool {
	for st := range s.running {
		if s.usingCPU(st, now) {
			return false
		}
	}
	return true
}

// stepping counts the share's steps under way that are using CPU (have
// used some within the last slice: blocked's rule, step by step). c.mu
// held.
func (s *CPUShare) stepping(now time.Duration) int {
	n := 0
	for st := range s.running {
		if s.usingCPU(st, now) {
			n++
		}
	}
	return n
}

// usingCPU says step st has used CPU within the last slice (by the clock
// now). A step begun unclocked, while its query was alone, has no clock to
// look at: it counts as using CPU until a slice after another query
// joined, by which time one that works has met its gate at a batch and
// goes on clocked (yield), and one still under way is taken as blocked.
// c.mu held.
func (s *CPUShare) usingCPU(st *stepStart, now time.Duration) bool {
	if !st.clocked {
		return now-max(st.at, s.c.sharedAt) <= s.c.slice
	}
	if cpu := s.c.threadOf(st.thread); cpu != st.seen {
		st.seen, st.seenAt = cpu, now
	}
	return now-st.seenAt <= s.c.slice
}

// full says the share already steps on its share of the processors while
// it leads another query joined by more than a slice (see CPU): the query
// behind, a small one beside a large one, is never held to it. mine of
// its steps under way are the caller's own (not counted: a step asking
// whether it may go on). c.mu held.
func (s *CPUShare) full(now time.Duration, mine int) bool {
	c := s.c
	joined := len(c.shares)
	if c.procs <= 0 || joined < 2 {
		return false
	}
	v, behind := s.virtual(), false
	for o := range c.shares {
		if o != s && o.virtual() < v-c.slice {
			behind = true
			break
		}
	}
	return behind && s.stepping(now)-mine >= (c.procs+joined-1)/joined
}

// slotFree says a step of the share may start on one of the step
// processors (see CPU): the share is not more than a slice ahead of
// another joined query (such a query is not held by the cap: the one
// behind, a small query beside a large one, never waits for it, nor one
// level with it), or fewer steps than procs are using CPU, mine of them
// the caller's own, and more are free than the steps waiting for one of
// queries that have used less (a slot that frees goes to the query
// behind first). c.mu held.
func (s *CPUShare) slotFree(now time.Duration, mine int) bool {
	c := s.c
	if c.procs <= 0 {
		return true
	}
	if len(c.shares) < 2 {
		return !c.keptAlone(s) || c.procs-(s.stepping(now)+s.starting-mine) > 0
	}
	v := s.virtual()
	ahead := false
	for o := range c.shares {
		if o != s && o.virtual() < v-c.slice {
			ahead = true
			break
		}
	}
	if !ahead {
		return true
	}
	busy, first := 0, 0
	for o := range c.shares {
		busy += o.stepping(now) + o.starting
		if w := o.waiting - o.starting; o != s && w > 0 && o.virtual() < v {
			first += w
		}
	}
	return c.procs-(busy-mine) > first
}

// keptAlone says the CPU's one query is held to the step processors
// while Go still keeps the processor for the control plane
// (keepAfterContention after two queries shared it), as a query ahead is
// beside another: so that the wake-ups between one small query's part and
// the next (its deploy request, the NATS readers and flushers) find the
// kept processor idle. Traced without it, the windows' query alone took
// both processors of a worker of one while the kept one stayed, and a
// NATS flusher waited 70 ms for either. Only once the query has stepped a
// slice since it became the only one: a query that a newcomer, starting
// level with it, would find more than a slice ahead. A small query
// alone is never held (a step of its blocked without saying so looks
// busy, and held its own next one: 55-81 ms at the median where it
// took 12-13, measured). c.mu held.
func (c *CPU) keptAlone(s *CPUShare) bool {
	return c.keeps && len(c.shares) == 1 && raisedTo.Load() > 0 && s.virtual()-c.aloneFrom > c.slice
}

// capEscape is how long a step waits for a step processor at most: the
// steps counted as using one may be blocked without saying so (a step
// begun unlocked, its thread running other goroutines meanwhile), so the
// cap is never a deadlock.
const capEscape = 4

// stepStart is a step under way: its thread (locked to it for the step
// when locked) and that thread's CPU clock when it began (when clocked:
// see CPU.clocks), at by the CPU's clock; seen is the thread's clock when
// last looked at, seenAt when it last moved (blocked).
type stepStart struct {
	cpu     time.Duration
	thread  int
	locked  bool
	clocked bool
	at      time.Duration
	seen    time.Duration
	seenAt  time.Duration
}

// enter waits for the query's turn (see CPU) and starts a step.
func (s *CPUShare) enter(ctx context.Context) (*stepStart, error) {
	c := s.c
	c.mu.Lock()
	now := c.now()
	if !s.active() {
		// Back from idle (or new): level with those with work, and a
		// slice of steps before a breather.
		s.used = max(s.used, c.floor)
		c.breathDue.Store(int64(now + breatherEvery*c.slice))
	}
	s.waiting++
	arrived := now
	var deadline time.Duration
	var timer *time.Timer
	for {
		// The others' virtual time grows while they step, and the
		// query's own steps end or block: look again after a slice at
		// the latest, or when a step ends.
		wait := c.slice
		breath, round := s.breather(now)
		if breath {
			if !c.breathSent {
				wait = max(time.Microsecond, c.breathFrom+c.slice/breatherGather-now)
			}
		} else {
			m, n := s.least()
			lead := s.virtual() - m
			held := n > 0 && lead > c.slice
			if held {
				if deadline == 0 {
					// The least, stepping, catches up as fast as it gets a
					// processor: a wait is bounded by the lead at arrival,
					// whatever the machine gives the others.
					deadline = now + lead
				} else if now >= deadline {
					held = false
				}
			}
			if held {
				wait = min(wait, deadline-now)
			} else {
				// The cap holds a step a slice from its arrival at most, and
				// a step processor is waited for capEscape slices: timed from
				// the arrival, not from the last wake-up, which each step's
				// end brings (a wake-up 9 ms in, then a whole slice again,
				// held a small query beside a newcomer's build 27-32 ms).
				capped := s.full(now, 0) && now-arrived < c.slice
				if !capped && (s.slotFree(now, 0) || now-arrived >= capEscape*c.slice) {
					break
				}
				until := arrived + capEscape*c.slice
				if capped {
					until = arrived + c.slice
				}
				wait = max(time.Microsecond, min(wait, until-now))
			}
		}
		wake := c.wake
		c.waiting++
		gen := c.breathGen
		c.mu.Unlock()
		if round {
			breatherRound(func() { c.endBreather(gen) })
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
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
			return nil, err
		}
	}
	s.starting++
	if timer != nil {
		timer.Stop()
		w := now - arrived
		s.waited += w
		s.longest = max(s.longest, w)
		s.waits++
	}
	c.mu.Unlock()
	// Still counted as waiting (wanting to step) until it runs.
	return s.begin(true), nil
}

// begin starts a step on the calling goroutine: the thread's CPU clock
// read, and the goroutine locked to its thread when the CPU charges
// thread time and another query shares it. waited: the step was counted
// as waiting until now.
//
// Alone, a query's charges weigh it against nobody (a query that joins
// later starts level with it: enter), so its steps run unlocked: a locked
// goroutine that blocks (a full queue, a mutex, a helper it waits for)
// makes Go hand its processor to another OS thread and back when it wakes,
// two thread switches where an unlocked one switches goroutines on one
// thread; with a worker on one core beside other processes (GOMAXPROCS 1,
// the cluster's CPU share) those were a third of its context switches.
// An unlocked step is still charged its thread's clock (exit).
func (s *CPUShare) begin(waited bool) *stepStart {
	c := s.c
	st := &stepStart{locked: c.lock && c.queries.Load() > 1}
	st.clocked = st.locked || c.clocks()
	if st.locked {
		c.lockThread()
	}
	// at before the clock: the wall time a step's reading is bounded by
	// (bounded) begins no later than the reading.
	st.at = c.now()
	if st.clocked {
		st.cpu, st.thread = c.thread()
		st.seen = st.cpu
	}
	c.mu.Lock()
	st.seenAt = c.now()
	if waited {
		s.waiting--
		s.starting--
	}
	if s.running == nil {
		s.running = map[*stepStart]struct{}{}
	}
	s.running[st] = struct{}{}
	c.mu.Unlock()
	return st
}

// exit ends a step begun at start and charges the CPU time its thread
// used meanwhile. An unlocked step (begin) that ends on another thread
// than it began (it blocked, or Go moved it) is charged the time it took,
// an upper bound of what it used: neither thread's clock is its own
// alone, and the query, alone, is weighed against nobody. A step begun
// unclocked (its query alone: CPU.clocks) is charged nothing.
func (s *CPUShare) exit(start *stepStart) {
	c := s.c
	var used time.Duration
	if start.clocked {
		cpu, tid := c.thread()
		now := c.now()
		used = start.bounded(cpu-start.cpu, now)
		if start.locked {
			c.unlockThread()
		} else if tid != start.thread {
			used = max(0, now-start.at)
		}
	}
	c.mu.Lock()
	c.raiseFloor()
	delete(s.running, start)
	s.used += used
	s.charged += used
	c.broadcast()
	c.mu.Unlock()
}

// turn is one instance's state under its query's share: whether it is in
// a step and since when (what Waiting pauses).
type turn struct {
	share *CPUShare
	in    bool
	start *stepStart
	// othersAt is when the instance last let others run (letOthersRun),
	// or began stepping, by the CPU's clock.
	othersAt time.Duration
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
		// Back to stepping through the gate: a step that resumed
		// ungated took a processor it was not given (see CPU). A
		// cancelled wait goes on ungated: its caller returns.
		st, err := t.share.enter(ctx)
		if err != nil {
			st = t.share.begin(false)
		}
		t.start, t.in = st, true
	}
}

// yield lets a long step wait at its query's gate between two batches
// (Context.Emit calls it): a step that has run a slice and whose query the
// gate would now hold - more than a slice ahead of the least, or past its
// share of the processors - ends there and goes on as a new step at the
// query's turn. The gate held steps only as they began, so one step that
// outlasted the slice (a cross join's product, a million windows closing)
// ran past the cap for as long as it took: 122 ms of a small query's part
// build waited for a processor behind one (#25, traced). A step past the
// step processors' cap (see CPU), or one a query that has used less waits
// for, ends there too. It does nothing outside a step or within a step's
// first slice.
func (t *turn) yield(ctx context.Context) error {
	if t == nil || !t.in {
		return nil
	}
	s := t.share
	c := s.c
	t.letOthersRun()
	if !c.clocks() {
		if !c.breatherDue() {
			return nil
		}
		return t.regate(ctx)
	}
	if !t.start.clocked {
		// Begun while the query was alone; another shares the CPU now:
		// the rest is a step at the query's turn, charged by its clock.
		return t.regate(ctx)
	}
	// A locked step's own thread clock; an unlocked one (begun alone) may
	// have moved threads: its wall time, an upper bound.
	var ran time.Duration
	if t.start.locked {
		cpu, _ := c.thread()
		ran = cpu - t.start.cpu
	} else {
		ran = c.now() - t.start.at
	}
	if ran <= c.slice {
		return nil
	}
	c.mu.Lock()
	now := c.now()
	m, n := s.least()
	wait := n > 0 && s.virtual()-m > c.slice || s.full(now, 1) || !s.slotFree(now, 1)
	c.mu.Unlock()
	if !wait {
		return nil
	}
	return t.regate(ctx)
}

// letOthersRun gives the processor and the core away once the instance
// has stepped a slice since it last did (#25): runtime.Gosched lets the
// goroutines waiting in Go's run queue go first, and osYield the threads
// waiting for the step's core - Go's sysmon, the thread of the processor
// kept for the control plane, other processes. Go preempts a goroutine
// that has run 10 ms only through sysmon, a thread too: where the
// operating system does not run it, no step is preempted. Traced on
// separate processes under `chrt -r 10` (round-robin, 100 ms a turn),
// the two workers' steps of the windows' query held both cores for whole
// turns (98-99 ms each), the worker's sysmon waited 124 ms for a core, a
// step ran 64 ms unpreempted, and the NATS readers with a small query's
// frames sat runnable beside an idle processor whose thread had no core.
// It costs a system call and a pass through Go's scheduler per slice of a
// step, and gives nothing away when nothing waits.
func (t *turn) letOthersRun() {
	c := t.share.c
	now := c.now()
	if from := max(t.othersAt, t.start.at); now-from < c.slice {
		return
	}
	runtime.Gosched()
	osYield()
	t.othersAt = c.now()
}

// Yield is yield for a step that emits nothing for a long while: an
// aggregation opening a window per row of a batch (#25's "a window per
// millisecond" opened 45,000 in one step, 0.2-0.4 s of CPU with no batch
// out), or dropping them as its query ends. Such a step calls it between
// pieces of its work, each much less than a slice, and waits there at its
// query's gate as a step that emits waits at its next batch: the breather
// of a query alone and the cap on a query ahead both reach it, where they
// reached only steps that emit. It returns at once outside a step, within
// a step's first slice, or when the gate would not hold the query; an
// error only when ctx (an operator's Context().Context()) ends while it
// waits. Outside a shared worker it does nothing.
func Yield(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	t, _ := ctx.Value(turnKey{}).(*turn)
	return t.yield(ctx)
}

// regate ends the instance's step and begins the next at its query's
// turn.
func (t *turn) regate(ctx context.Context) error {
	s := t.share
	s.exit(t.start)
	t.in = false
	st, err := s.enter(ctx)
	if err != nil {
		return err
	}
	t.start, t.in = st, true
	return nil
}

// Helper runs the work an instance's own goroutines do for it outside its
// steps - a source's parallel parse or decode on every core - as steps of
// the instance's query: gated at the query's turn and charged its thread's
// CPU time like a step. Without it that work was nobody's: a query reading
// a file on every core took the processors ungated, however far ahead of
// the others it was.
type Helper struct{ share *CPUShare }

// HelperOf is the helper of the instance stepping under ctx (an operator's
// Context().Context()); nil, whose Do just calls f, outside a shared
// worker.
func HelperOf(ctx context.Context) *Helper {
	if ctx == nil {
		return nil
	}
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return nil
	}
	return &Helper{share: t.share}
}

// Do runs f on the calling goroutine as one step of the query: it waits
// for the query's turn and is charged the CPU time f used. f should be
// work, not a wait: time f spends blocked is not charged, and once it has
// used no CPU for a slice it no longer holds the others at the gate
// (CPUShare.blocked).
func (h *Helper) Do(f func()) {
	if h == nil || h.share == nil {
		f()
		return
	}
	st, err := h.share.enter(context.Background())
	if err != nil {
		f()
		return
	}
	defer h.share.exit(st)
	f()
}

// DoPaused is Do for work that comes in pieces (a chunk's batches): f
// calls pause between them, which ends the step and waits for the query's
// turn again, as an operator's step meets it at each batch it emits. A
// piece of work done in one step held the gate shut for as long as the
// whole: a file's chunk parsed in one step held a worker's step processor
// for tens of milliseconds while another query's steps waited (#25).
func (h *Helper) DoPaused(f func(pause func())) {
	if h == nil || h.share == nil {
		f(func() {})
		return
	}
	st, err := h.share.enter(context.Background())
	pause := func() {
		if st != nil {
			h.share.exit(st)
		}
		st, _ = h.share.enter(context.Background())
	}
	if err != nil {
		st = nil
	}
	defer func() {
		if st != nil {
			h.share.exit(st)
		}
	}()
	f(pause)
}

// Helper is a helper charging the share's query (HelperOf finds the
// stepping instance's).
func (s *CPUShare) Helper() *Helper { return &Helper{share: s} }

// A query alone on the CPU takes a breather once it has stepped two
// slices since its last (#25). The cap on processors binds only while two
// queries or more have joined (see CPU), and the hop before a query joins
// - its deploy request, and in one process the submit's hops through the
// NATS server and the coordinator - arrives while another query may be
// alone, its steps on every processor Go has. Go polls the network only
// when a processor finds no goroutine in its own run queue or the global
// one (findRunnable), or from sysmon once it has not been polled for 10
// ms; and sysmon puts what it readies on the global run queue, behind
// the steps Go preempted, each of which runs up to 10 ms again. So the
// reader with the deploy request waited 10 ms and more for the poll, then
// behind the query's steps: the slowest of a small query's runs beside a
// cross join was its deploy (97 of 101 ms).
//
// In a breather no step of the query passes the gate, and each step
// under way arrives there at its next batch (yield): Go's processors run
// out of the query's goroutines, and whatever else was runnable runs.
// Once fewer of its steps are under way than Go has processors (one is
// free of them), or a fortieth of a slice has passed (a step blocked
// without saying so, a batch longer than that), the breather sends a
// round through a pipe Go's poller watches and waits for it: a processor
// without work polls the network, the round comes back in the same poll
// as every goroutine the network readied meanwhile (a NATS connection's
// reader, a heartbeat, a deploy request), and the round's goroutine lets
// those run before it ends the breather (runtime.Gosched: it goes to the
// back of the global queue). So a breather lasts until the query's steps
// have gathered and one poll has come back - tens of microseconds when
// nothing else waits - and holds nothing that was not waiting: what runs
// meanwhile is the process's own work, not an idle processor.
//
// It is taken at most once every breatherEvery slices of the query's
// wall time, and only while the query's steps are at least as many as
// Go's processors (fewer leave one to poll), so the processors it leaves
// idle are at most the gathering's fortieth of a slice and a round per
// two slices: about 1%. Once a slice with a tenth of a slice to gather
// cost a worker alone 6-11% of its events per second (bench nexmark,
// q4, q5, q7), and the cap on a query alone, tried before, half again
// its CPU per event (an idle processor kept beside it): docs/benchmarks.md.
const (
	breatherEvery  = 2
	breatherGather = 40
)

// breatherDue says the query alone on the CPU is due a breather: its
// steps check at every batch (yield).
func (c *CPU) breatherDue() bool {
	if !c.breathes || c.queries.Load() != 1 {
		return false
	}
	due := c.breathDue.Load()
	return due != 0 && int64(c.now()) >= due
}

// breather says the step arriving at the gate waits for the query's
// breather, beginning one if it is due, and whether the caller sends its
// round (after unlocking). c.mu held.
func (s *CPUShare) breather(now time.Duration) (wait, round bool) {
	c := s.c
	if !c.breathes || len(c.shares) != 1 {
		return false, false
	}
	if !c.breathing {
		due := time.Duration(c.breathDue.Load())
		if due == 0 || now < due {
			return false, false
		}
		if len(s.running)+s.starting+s.waiting < runtime.GOMAXPROCS(0) {
			// Fewer steps than processors: one is left to poll.
			c.breathDue.Store(int64(now + breatherEvery*c.slice))
			return false, false
		}
		c.breathGen++
		c.breathing, c.breathSent, c.breathFrom = true, false, now
	}
	if c.breathSent {
		if now-c.breathFrom >= capEscape*c.slice {
			// The round did not come back: never a deadlock.
			c.endBreath(now)
			return false, false
		}
		return true, false
	}
	if len(s.running)+s.starting < runtime.GOMAXPROCS(0) || now-c.breathFrom >= c.slice/breatherGather {
		c.breathSent = true
		return true, true
	}
	return true, false
}

// endBreather ends breather gen when its round has come back.
func (c *CPU) endBreather(gen int) {
	c.mu.Lock()
	if c.breathing && c.breathGen == gen {
		c.endBreath(c.now())
	}
	c.mu.Unlock()
}

// endBreath ends the breather under way: the next is due a slice on.
// c.mu held.
func (c *CPU) endBreath(now time.Duration) {
	c.breathing, c.breathSent = false, false
	c.breathDue.Store(int64(now + breatherEvery*c.slice))
	c.breaths.Add(1)
	c.broadcast()
}

// rounds is the process's one pipe for breathers' rounds, read by a
// goroutine that runs while rounds come (it leaves after a second
// without one, so that a process that has stopped its queries keeps no
// goroutine of theirs).
var rounds struct {
	once    sync.Once
	r, w    *os.File
	mu      sync.Mutex
	reading bool
	pending []func()
}

// breathersWork opens the rounds' pipe: without one (out of file
// descriptors) a CPU takes no breathers.
func breathersWork() bool {
	rounds.once.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		rounds.r, rounds.w = r, w
	})
	return rounds.w != nil
}

// breatherRound has f called once a processor has polled the network
// and the goroutines it readied have had their turn (see breatherGather).
func breatherRound(f func()) {
	rounds.mu.Lock()
	rounds.pending = append(rounds.pending, f)
	if !rounds.reading {
		rounds.reading = true
		go readRounds()
	}
	rounds.mu.Unlock()
	if _, err := rounds.w.Write([]byte{0}); err != nil {
		// Never lost: f runs now, a round without the poll.
		readRound()
	}
}

// readRounds reads the rounds' pipe: each byte comes in a poll of the
// network, with whatever else that poll readied.
func readRounds() {
	buf := make([]byte, 64)
	for {
		_ = rounds.r.SetReadDeadline(time.Now().Add(time.Second))
		_, err := rounds.r.Read(buf)
		if err != nil {
			rounds.mu.Lock()
			if len(rounds.pending) == 0 {
				rounds.reading = false
				rounds.mu.Unlock()
				return
			}
			rounds.mu.Unlock()
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				readRound()
				time.Sleep(time.Millisecond) // a broken pipe: not a spin
			}
			continue
		}
		// Behind what the poll readied.
		runtime.Gosched()
		readRound()
	}
}

// readRound calls the rounds waiting.
func readRound() {
	rounds.mu.Lock()
	due := rounds.pending
	rounds.pending = nil
	rounds.mu.Unlock()
	for _, f := range due {
		f()
	}
}
