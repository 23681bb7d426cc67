package dataflow

import (
	"context"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A query alone takes a breather once a slice (#25): the step that finds
// one due waits at the gate until fewer of the query's steps are under
// way than Go has processors, and goes on when the breather's round has come
// back through Go's network poller. Fewer steps than Go's processors, or
// a second query joined, take none; a step that never arrives holds a
// breather a tenth of a slice at most.
func TestCPUBreatherGathersTheQueryAlone(t *testing.T) {
	if !breathersWork() {
		t.Skip("no pipe for the breathers' rounds")
	}
	clock := &fakeClock{}
	c := newCPU(10*time.Millisecond, clock.now)
	c.breathes = true
	ctx := context.Background()
	a := c.Join("a")
	defer a.Leave()
	enter := func() <-chan *stepStart { return enterAsync(t, ctx, a) }
	stepped := func(ch <-chan *stepStart, what string) *stepStart { return steppedWithin(t, ch, what) }
	waits := func(ch <-chan *stepStart, what string) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("%s stepped during the breather", what)
		case <-time.After(30 * time.Millisecond):
		}
	}
	procs := runtime.GOMAXPROCS(0)
	var running []*stepStart
	for i := range procs + 1 {
		running = append(running, stepped(enter(), "step "+string(rune('0'+i))))
	}

	// Due after a slice: the next step waits until fewer steps than
	// processors are under way (one processor is free of them).
	clock.add(21 * time.Millisecond)
	next := enter()
	waitingAtGate(t, c, 1)
	a.exit(running[0])
	waits(next, "a step while its query's steps held every processor")
	a.exit(running[1])
	st := stepped(next, "the step after its query's steps gathered")
	running = append(running[2:], st)
	if got := c.breaths.Load(); got != 1 {
		t.Errorf("%d breathers ended, want 1", got)
	}

	// A step that never arrives (blocked without saying so) holds the
	// breather a tenth of a slice.
	running = append(running, stepped(enter(), "a step after the breather"))
	clock.add(21 * time.Millisecond)
	next = enter()
	waitingAtGate(t, c, 1)
	waits(next, "a step within the breather's gathering")
	clock.add(time.Millisecond)
	running = append(running, stepped(next, "a step after the gathering's bound"))
	if got := c.breaths.Load(); got != 2 {
		t.Errorf("%d breathers ended, want 2", got)
	}
	for _, st := range running {
		a.exit(st)
	}

	// Fewer steps than processors leave one to poll: no breather.
	clock.add(21 * time.Millisecond)
	if procs > 1 {
		a.exit(stepped(enter(), "a step beside fewer than the processors"))
	}
	// Nor beside another query (the cap binds there).
	b := c.Join("b")
	running = nil
	for range procs + 1 {
		running = append(running, stepped(enter(), "a step beside another query"))
	}
	clock.add(21 * time.Millisecond)
	running = append(running, stepped(enter(), "a step beside another query, due"))
	b.Leave()
	for _, st := range running {
		a.exit(st)
	}
	if got := c.breaths.Load(); got != 2 {
		t.Errorf("%d breathers ended, want 2: one taken with fewer steps than processors or beside another query", got)
	}
}

// A query alone with more busy steps than Go's processors (a cross join
// before anyone else's query joins the worker) lets the network in: a
// pipe's reader, woken by Go's poller as a NATS connection's reader is
// with a deploy request, runs within about a breather's period (two
// slices). Without breathers it waited for sysmon's poll (10 ms) and then
// in the global run queue behind the query's preempted steps: most reads
// still came within a millisecond, one in ten after 0.1 s or more. Nine
// reads in ten within one process; the bound is
// generous: a period and two slices beside the reads' lateness alone
// (21-24 ms with breathers, 157-274 ms without, on one and two processors).
func TestCPUBreatherLetsTheNetworkIn(t *testing.T) {
	cpu := NewCPU(0)
	if !cpu.breathes {
		t.Skip("no pipe for the breathers' rounds")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	late := func(n int) time.Duration {
		var took []time.Duration
		sent := make(chan time.Time, 1)
		go func() {
			for range n {
				time.Sleep(2 * time.Millisecond)
				sent <- time.Now()
				if _, err := w.Write([]byte{1}); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 1)
		for range n {
			if _, err := r.Read(buf); err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(<-sent))
		}
		slices.Sort(took)
		t.Logf("read after the write: p10 %s p50 %s p90 %s max %s", took[n/10], took[n/2], took[n*9/10], took[n-1])
		return took[n*9/10]
	}
	late(5) // warm
	alone := late(50)

	busy := func(breathes bool) time.Duration {
		cpu.mu.Lock()
		cpu.breathes = breathes
		cpu.mu.Unlock()
		q := cpu.Join("busy")
		defer q.Leave()
		stop := spinSteps(q, 4*runtime.GOMAXPROCS(0)+2)
		beside := late(50)
		stop()
		return beside
	}
	before := cpu.breaths.Load()
	with := busy(true)
	breaths := cpu.breaths.Load() - before
	t.Logf("a pipe's read late by %s alone, %s beside a busy query alone with breathers (%d), nine in ten of 50 on %d processors",
		alone, with, breaths, runtime.GOMAXPROCS(0))
	// Past the bound and no better than half the wait without them: the
	// breathers did not let the network in (a machine too loaded for
	// either to be quick is not the breathers' failure). The run without
	// them is only that excuse, so it runs only past the bound: its reads
	// wait seconds in all beside the spinning steps, which hold every core.
	if limit := (breatherEvery+2)*cpu.slice + 4*alone + 10*time.Millisecond; with > limit {
		without := busy(false)
		t.Logf("past %s: %s without breathers", limit, without)
		if with > without/2 {
			t.Errorf("a read beside the busy query alone was late by %s (nine in ten), past %s (alone %s, without breathers %s): the network waited behind the steps", with, limit, alone, without)
		}
	}
	if breaths == 0 {
		t.Errorf("no breather beside %d busy steps on %d processors", 4*runtime.GOMAXPROCS(0)+2, runtime.GOMAXPROCS(0))
	}
}
