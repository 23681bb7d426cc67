package dataflow

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Steps never hold every processor (#25): a query with more busy
// instances than the worker has step processors, alone on the worker or
// beside another query, leaves one to the goroutines outside any step. A
// goroutine woken from outside the steps (a timer here; the network's
// wake-ups come the same way: a small query's deploy request, its links'
// flushes, its done message) runs about as soon beside it as beside
// nothing. Before, it waited in Go's run queue behind the steps, which Go
// preempts only after 10 ms each: medians of 4-11 ms late beside two CPU
// hogs, 0.3-1.9 ms with a processor kept; a query alone kept none until
// the lone cap (the deploy request of a small query beside a large one
// arrives while the large one is alone). Medians in one process, and a
// bound of half a preemption slice.
func TestCPUStepsLeaveAProcessorForControl(t *testing.T) {
	cpu := NewCPU(0)
	if cpu.idle == nil {
		t.Skip("the runtime does not count its running goroutines: a query alone is not held")
	}
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
	limit := 4*alone + 5*time.Millisecond

	// Go runs one processor more than the steps may take from the first
	// query on.
	busy := cpu.Join("busy")
	if got := runtime.GOMAXPROCS(0); got != cpu.procs+1 {
		t.Errorf("GOMAXPROCS %d with one query on %d step processors: want one kept for the control plane", got, cpu.procs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4*cpu.procs + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				st, err := busy.enter(ctx)
				if err != nil {
					return
				}
				for start := time.Now(); time.Since(start) < 2*time.Millisecond; {
					// a step's work: CPU, no wait
				}
				busy.exit(st)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // the steps under way
	besideAlone := late(100)
	// Another query joins (idle here: a small query whose part is being
	// built): the processor stays kept.
	small := cpu.Join("small")
	if got := runtime.GOMAXPROCS(0); got != cpu.procs+1 {
		t.Errorf("GOMAXPROCS %d with two queries on %d step processors: want one kept for the control plane", got, cpu.procs)
	}
	beside := late(100)
	cancel()
	wg.Wait()
	small.Leave()
	if got := runtime.GOMAXPROCS(0); got != cpu.procs+1 {
		t.Errorf("GOMAXPROCS %d with one query left on %d step processors: want the kept one still", got, cpu.procs)
	}
	busy.Leave()
	if got := runtime.GOMAXPROCS(0); got != cpu.procs {
		t.Errorf("GOMAXPROCS %d after the last query left, on %d step processors: want the kept one given back", got, cpu.procs)
	}
	t.Logf("a 1 ms sleep's wake-up late by %s alone, %s beside %d busy instances of a query alone, %s beside them and another query, on %d step processors, medians of 100",
		alone, besideAlone, 4*cpu.procs+2, beside, cpu.procs)
	if besideAlone > limit {
		t.Errorf("a wake-up beside the busy query alone was late by %s (median), past %s (alone %s): it waited behind the steps", besideAlone, limit, alone)
	}
	if beside > limit {
		t.Errorf("a wake-up beside the busy query and another was late by %s (median), past %s (alone %s): it waited behind the steps", beside, limit, alone)
	}
}

// A query alone steps on no more than the step processors while Go keeps
// one more (see CPU), once it has stepped a slice since it was last idle
// (a small query alone is never held), and a step blocked without saying
// so (its thread runs other goroutines: by the share's count it uses CPU)
// does not hold the query's next step once Go shows a processor idle
// beside the caller's: Go's count of its running goroutines is exact
// where the share's is not.
func TestCPUQueryAloneStepsOnTheStepProcessors(t *testing.T) {
	clock := &fakeClock{}
	c := newCPU(10*time.Millisecond, clock.now)
	c.procs = 1
	var goIdle atomic.Bool
	c.idle = goIdle.Load
	ctx := context.Background()
	a := c.Join("a")
	defer a.Leave()
	first, err := a.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Within its first slice, a query alone is not held.
	quick, err := a.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.exit(quick)
	clock.add(12 * time.Millisecond) // the first step has used more than a slice
	second := make(chan *stepStart, 1)
	go func() {
		st, err := a.enter(ctx)
		if err != nil {
			t.Error(err)
		}
		second <- st
	}()
	waitingAtGate(t, c, 1)
	select {
	case <-second:
		t.Fatal("a query alone, busy for more than a slice, stepped on two processors where the worker has one: it took the kept one")
	default:
	}
	// The first step blocks without saying so; Go's processors show it.
	goIdle.Store(true)
	var st *stepStart
	select {
	case st = <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("a's second step still waits while Go has a processor idle beside it: a blocked step held it")
	}
	a.exit(st)
	a.exit(first)
	// Idle again, it starts a new slice unheld.
	goIdle.Store(false)
	one, err := a.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	two, err := a.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.exit(two)
	a.exit(one)
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
	a := c.Join("a")
	defer a.Leave()
	enter := func(s *CPUShare) <-chan *stepStart {
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
	stepped := func(ch <-chan *stepStart, what string) *stepStart {
		t.Helper()
		select {
		case st := <-ch:
			return st
		case <-time.After(5 * time.Second):
			t.Fatalf("%s still waits at the gate", what)
			return nil
		}
	}
	waits := func(ch <-chan *stepStart, what string) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("%s stepped on a processor no step was given", what)
		default:
		}
	}
	a1, a2 := stepped(enter(a), "a's first step"), stepped(enter(a), "a's second step")
	clock.add(6 * time.Millisecond) // a has used 12 ms, more than a slice ahead of b, which joins at the floor
	b := c.Join("b")
	defer b.Leave()
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
