package dataflow

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// Steps never hold every processor (#25): a query with more busy
// instances than the worker has step processors, beside another query,
// leaves one to the goroutines outside any step. A goroutine woken from outside the
// steps (a timer here; the network's wake-ups come the same way: a small
// query's deploy request, its links' flushes, its done message) runs about
// as soon beside it as beside nothing. Before, it waited in Go's run queue
// behind the steps, which Go preempts only after 10 ms each: medians of
// 4-11 ms late beside two CPU hogs, 0.3-1.9 ms with a processor kept.
// Medians in one process, and a bound of half a preemption slice.
func TestCPUStepsLeaveAProcessorForControl(t *testing.T) {
	releaseKept(t)
	cpu := NewCPU(0)
	// A wake-up from outside the steps: a timer's, as the network's
	// (both come to a goroutine through whichever processor looks next).
	late := func(n int) time.Duration {
		var took []time.Duration
		for range n {
			start := time.Now()
			time.Sleep(time.Millisecond)
			took = append(took, time.Since(start)-time.Millisecond)
		}
		slices.Sort(took)
		t.Logf("late: p10 %s p50 %s p90 %s max %s", took[len(took)/10], took[len(took)/2], took[len(took)*9/10], took[len(took)-1])
		return took[len(took)/2]
	}
	late(5) // warm
	alone := late(100)

	// The cap binds beside another query (joined, idle here: a small
	// query whose part is being built).
	small := cpu.Join("small")
	defer small.Leave()
	// A query alone is not capped, and Go runs the worker's processors.
	if got := runtime.GOMAXPROCS(0); got != cpu.procs {
		t.Errorf("GOMAXPROCS %d with one query on %d step processors: want no processor kept", got, cpu.procs)
	}
	busy := cpu.Join("busy")
	if got := runtime.GOMAXPROCS(0); got != cpu.procs+1 {
		t.Errorf("GOMAXPROCS %d with two queries on %d step processors: want one kept for the control plane", got, cpu.procs)
	}
	stop := spinSteps(busy, 4*cpu.procs+2)
	beside := late(100)
	stop()
	busy.Leave()
	waitGivenBack(t, cpu.procs, "the second query left")
	t.Logf("a 1 ms sleep's wake-up late by %s alone, %s beside %d busy instances on %d step processors (GOMAXPROCS %d), medians of 100",
		alone, beside, 4*cpu.procs+2, cpu.procs, runtime.GOMAXPROCS(0))
	if limit := 4*alone + 5*time.Millisecond; beside > limit {
		t.Errorf("a wake-up beside the busy query was late by %s (median), past %s (alone %s): it waited behind the steps", beside, limit, alone)
	}
}

// The processor kept for the control plane stays while small queries come
// and go beside a busy one, and is given back a while after the last left
// (#25): each change of GOMAXPROCS stops the world until every thread
// holding a processor has stopped, which on a loaded machine waits for the
// operating system to run each (one stop took 190 ms, traced). Given back
// as each small query left, a worker beside a busy query stopped the
// world twice per small query.
func TestCPUKeepsTheProcessorWhileQueriesComeAndGo(t *testing.T) {
	releaseKept(t)
	cpu := NewCPU(0)
	busy := cpu.Join("busy")
	defer busy.Leave()
	before := controlChanges.Load()
	for i := range 10 {
		small := cpu.Join(fmt.Sprintf("small %d", i))
		small.Leave()
	}
	if n := controlChanges.Load() - before; n != 1 {
		t.Errorf("GOMAXPROCS changed %d times while ten small queries came and went beside a busy one: want once (the raise)", n)
	}
	if got := runtime.GOMAXPROCS(0); got != cpu.procs+1 {
		t.Errorf("GOMAXPROCS %d just after the last small query left, on %d step processors: want the kept one still there", got, cpu.procs)
	}
	waitGivenBack(t, cpu.procs, "the last small query left")
	if n := controlChanges.Load() - before; n != 2 {
		t.Errorf("GOMAXPROCS changed %d times in all: want twice (raised, given back)", n)
	}
}

// While the processor is still kept after two queries shared the CPU, the
// query left alone is held to the step processors too once it has stepped
// a slice since (keptAlone), so that the wake-ups before the next small
// query's part find the kept one idle; a small query alone is not held,
// nor a query alone once the kept processor is given back.
func TestCPUQueryAloneLeavesTheKeptProcessor(t *testing.T) {
	releaseKept(t)
	cpu := NewCPU(0)
	busy := cpu.Join("busy")
	defer busy.Leave()
	// Another step may start while the query alone already steps on
	// every step processor (the steps begun here, on this goroutine's
	// thread, which keeps using CPU: stepping).
	another := func() bool {
		var steps []*stepStart
		for range cpu.procs {
			steps = append(steps, busy.begin(false))
		}
		defer func() {
			for _, st := range steps {
				busy.exit(st)
			}
		}()
		cpu.mu.Lock()
		defer cpu.mu.Unlock()
		return busy.slotFree(cpu.now(), 0)
	}
	if !another() {
		t.Errorf("a query alone held to the step processors before any other joined")
	}
	cpu.Join("small").Leave()
	if !another() {
		t.Errorf("a query alone held to the step processors before it stepped a slice since the other left")
	}
	cpu.mu.Lock()
	busy.used += 2 * cpu.slice // its steps since: two slices
	cpu.mu.Unlock()
	if another() {
		t.Errorf("a query alone took the processor kept for the control plane after another left")
	}
	releaseKept(t)
	if !another() {
		t.Errorf("a query alone still held to the step processors once the kept one was given back")
	}
}

// waitGivenBack polls until Go runs procs processors again, the kept one
// given back keepAfterContention after what happened.
func waitGivenBack(t *testing.T, procs int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * keepAfterContention); runtime.GOMAXPROCS(0) != procs; {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS %d %s after %s, on %d step processors: want the kept one given back", runtime.GOMAXPROCS(0), 10*keepAfterContention, what, procs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// releaseKept gives back now the processor an earlier test's CPU kept
// for the control plane (keepAfterContention), so that a test counting
// Go's processors starts from the process's own.
func releaseKept(t *testing.T) {
	t.Helper()
	controlMu.Lock()
	gen, n := calm, contended
	controlMu.Unlock()
	if n > 0 {
		t.Logf("%d CPUs of the process still have two queries joined: the processor stays kept", n)
		return
	}
	giveBackKept(gen)
}

// The step processors are shared by all queries (see CPU): a query more
// than a slice ahead of another steps on no more than them, the other
// queries' steps counted; the query behind is never held by them (it steps
// on the kept one too), and the one ahead waits until steps end.
func TestCPUStepProcessorsHoldAllButTheLeast(t *testing.T) {
	clock := &fakeClock{}
	c := newCPU(10*time.Millisecond, clock.now)
	c.procs = 2
	ctx := context.Background()
	// b joins first, so that a's steps read their clocks (a query alone
	// reads none: CPU.clocks).
	a, b := c.Join("a"), c.Join("b")
	defer a.Leave()
	defer b.Leave()
	enter := func(s *CPUShare) <-chan *stepStart { return enterAsync(t, ctx, s) }
	stepped := func(ch <-chan *stepStart, what string) *stepStart { return steppedWithin(t, ch, what) }
	waits := func(ch <-chan *stepStart, what string) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("%s stepped on a processor no step was given", what)
		default:
		}
	}
	a1, a2 := stepped(enter(a), "a's first step"), stepped(enter(a), "a's second step")
	clock.add(6 * time.Millisecond) // a has used 12 ms, more than a slice ahead of b
	b1 := stepped(enter(b), "b's first step, b having used least,")
	b2 := stepped(enter(b), "b's second step, b having used least,")
	a3 := enter(a)
	waitingAtGate(t, c, 1)
	waits(a3, "a's third step beside its two and b's two")
	b.exit(b1)
	b.exit(b2)
	waits(a3, "a's third step beside its two")
	a.exit(a1)
	clock.add(15 * time.Millisecond) // a, ahead, waits a slice at most for its share (full)
	a3st := stepped(a3, "a's third step after its first ended")

	a.exit(a2)
	a.exit(a3st)
}

// enterAsync has s's next step arrive at the gate on a goroutine of its
// own; the channel gives the step once it passes.
func enterAsync(t *testing.T, ctx context.Context, s *CPUShare) <-chan *stepStart {
	ch := make(chan *stepStart, 1)
	go func() {
		st, err := s.enter(ctx)
		if err != nil {
			t.Error(err)
		}
		ch <- st
	}()
	return ch
}

// steppedWithin is the step from ch, failing the test if it still waits
// at the gate after 5 s.
func steppedWithin(t *testing.T, ch <-chan *stepStart, what string) *stepStart {
	t.Helper()
	select {
	case st := <-ch:
		return st
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still waits at the gate", what)
		return nil
	}
}

// spinSteps has n goroutines step s back to back, each step 2 ms of CPU
// and no wait, until the returned stop is called; it returns once the
// steps are under way.
func spinSteps(s *CPUShare, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				st, err := s.enter(ctx)
				if err != nil {
					return
				}
				for start := time.Now(); time.Since(start) < 2*time.Millisecond; {
					// a step's work: CPU, no wait
				}
				s.exit(st)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // the steps under way
	return func() {
		cancel()
		wg.Wait()
	}
}
