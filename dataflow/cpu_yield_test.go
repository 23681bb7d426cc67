package dataflow

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// longStepSource emits batches one step long: in its one Produce it runs
// a slice and more on the fake clock before each batch after the first,
// as a cross join's product does on a real one.
type longStepSource struct {
	clock   *fakeClock
	batches int
	emitted chan int // each batch's number, as Emit returns
	cap     *Capability
}

func (s *longStepSource) Open(_ *Context, cap *Capability) error {
	var err error
	s.cap, err = cap.Retain()
	return err
}

func (s *longStepSource) OnBatch(*Context, int, Batch, *Capability) error { return nil }
func (s *longStepSource) OnNotify(*Context, *Capability) error            { return nil }
func (s *longStepSource) Close(*Context) error {
	if s.cap != nil {
		s.cap.Drop()
	}
	return nil
}

func (s *longStepSource) Produce(ctx *Context) (bool, error) {
	for i := range s.batches {
		if i > 0 {
			s.clock.add(12 * time.Millisecond) // work: more than a slice
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Append(int64(i))
		col := b.NewArray()
		b.Release()
		rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
		col.Release()
		if err := ctx.Emit(0, s.cap, rec); err != nil {
			return false, err
		}
		s.emitted <- i
	}
	s.cap.Drop()
	s.cap = nil
	return true, nil
}

// dropSink releases what it gets.
type dropSink struct{}

func (dropSink) Open(*Context, *Capability) error { return nil }
func (dropSink) OnBatch(_ *Context, _ int, b Batch, _ *Capability) error {
	b.Record.Release()
	return nil
}
func (dropSink) OnNotify(*Context, *Capability) error { return nil }
func (dropSink) Close(*Context) error                 { return nil }

// A step longer than a slice waits at its query's gate between two
// batches once its query is past its share of the processors: the gate
// used to hold steps only as they began, so one long step (a cross join's
// product) ran past the cap for as long as it took (#25). Here query a
// steps on two processors (its source's long step and another of its
// instances' steps) while b, behind, joins a two-processor CPU: a may
// then step on one. The source's step ran a slice: its next batch waits
// for a's other step to end.
func TestCPULongStepYieldsBetweenBatches(t *testing.T) {
	clock := &fakeClock{}
	src := &longStepSource{clock: clock, batches: 3, emitted: make(chan int, 3)}
	longStepHeldAtGate(t, clock, "batch", src, src.emitted, 3)
}

// longStepHeldAtGate runs op, a source whose one step does n pieces of
// work and sends each piece's number on done, as the only operator of
// query a's graph (into a sink), while a already steps on the other of two
// processors and b, joined first, is behind it (joined before a's steps
// begin, so that they read their clocks: a query alone reads none). The
// first piece goes; the next
// waits at the gate (a is past its share) until a's other step ends; then
// the rest go, and a's stats count the wait.
func longStepHeldAtGate(t *testing.T, clock *fakeClock, piece string, op Operator, done <-chan int, n int) {
	t.Helper()
	c := newCPU(10*time.Millisecond, clock.now)
	c.procs = 2
	a, b := c.Join("a"), c.Join("b")
	defer a.Leave()
	defer b.Leave()
	g := &Graph{Query: "a"}
	from := g.AddOperator(OperatorSpec{Name: "long", Outputs: 1, New: func(Instance) (Operator, error) { return op, nil }})
	to := g.AddOperator(OperatorSpec{Name: "drop", Inputs: 1, New: func(Instance) (Operator, error) { return dropSink{}, nil }})
	g.Connect(from, 0, to, 0)
	// a's other instance, stepping alongside from the start.
	other, err := a.enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- Run(context.Background(), g, Config{CPU: a}) }()
	// The first piece goes (the step has not run a slice yet).
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the long step's first %s was held", piece)
	}
	// The second comes after a slice's work, with a past its share: the
	// step waits at the gate instead.
	waitingAtGate(t, c, 1)
	select {
	case i := <-done:
		t.Fatalf("%s %d went on while a stepped past its share of the processors", piece, i)
	default:
	}
	a.exit(other)
	for want := 1; want < n; want++ {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %d still held after a's other step ended", piece, want)
		}
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.Waits == 0 {
		t.Errorf("a's long step never waited at the gate: %+v", s)
	}
}

// A query that has just joined starts level with the least of those with
// work, not at zero: a query already running does not lead it, and is not
// held to its share of the processors for the newcomer's sake before the
// newcomer has stepped at all (a small query beside an abusive one that had
// just joined waited at the gate for it, #25). The newcomer is behind a
// query that keeps stepping once that one has used another slice.
func TestCPUNewQueryStartsLevel(t *testing.T) {
	clock := &fakeClock{}
	c := newCPU(10*time.Millisecond, clock.now)
	c.procs = 2
	ctx := context.Background()
	small := c.Join("small")
	defer small.Leave()
	st, err := small.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.add(30 * time.Millisecond)
	small.exit(st)
	large := c.Join("large")
	defer large.Leave()
	first, err := small.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := enterAsync(t, ctx, small)
	select {
	case st := <-second:
		small.exit(st)
	case <-time.After(5 * time.Second):
		t.Fatal("small was held to one processor beside a query that has just joined and not stepped")
	}
	// small keeps stepping on one processor: a slice on, large is behind
	// it, and small is held to its share.
	clock.add(15 * time.Millisecond)
	held := enterAsync(t, ctx, small)
	waitingAtGate(t, c, 1)
	small.exit(first)
	select {
	case st := <-held:
		small.exit(st)
	case <-time.After(5 * time.Second):
		t.Fatal("small's step still waits after its other ended")
	}
}

// quietStepSource works pieces of a slice and more in its one Produce and
// emits nothing (an aggregation opening a window per row of one batch),
// calling Yield between pieces.
type quietStepSource struct {
	clock  *fakeClock
	pieces int
	done   chan int // each piece's number, as it starts
}

func (s *quietStepSource) Open(*Context, *Capability) error                { return nil }
func (s *quietStepSource) OnBatch(*Context, int, Batch, *Capability) error { return nil }
func (s *quietStepSource) OnNotify(*Context, *Capability) error            { return nil }
func (s *quietStepSource) Close(*Context) error                            { return nil }

func (s *quietStepSource) Produce(ctx *Context) (bool, error) {
	for i := range s.pieces {
		if i > 0 {
			s.clock.add(12 * time.Millisecond) // work: more than a slice
			if err := Yield(ctx.Context()); err != nil {
				return false, err
			}
		}
		s.done <- i
	}
	return true, nil
}

// A step that emits nothing meets its query's gate where it calls Yield,
// as a step that emits does at its next batch: the windows of #25 opened
// 45,000 in one batch, 0.2-0.4 s of one step no gate reached. As in
// TestCPULongStepYieldsBetweenBatches, a steps on two processors while b,
// behind, joins a two-processor CPU.
func TestCPULongStepYieldsWithoutEmitting(t *testing.T) {
	clock := &fakeClock{}
	src := &quietStepSource{clock: clock, pieces: 3, done: make(chan int, 3)}
	longStepHeldAtGate(t, clock, "piece", src, src.done, 3)
	// Outside a step, and outside a shared worker, it does nothing.
	if err := Yield(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A step that has run a slice lets the goroutines waiting for its
// processor go first (#25): Go preempts a goroutine that has run 10 ms
// only through sysmon, a thread of its own, and where the operating system
// did not run that thread (both cores held by steps, under `chrt -r 10`)
// a step ran 64 ms unpreempted while a NATS reader with a small query's
// frames waited in the run queue. Here, on one processor, a goroutine
// readied beside a step that never blocks runs once the step has stepped
// a slice by the fake clock, in far less real time than sysmon's 10 ms.
func TestCPULongStepLetsOthersRun(t *testing.T) {
	releaseKept(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	clock := &fakeClock{}
	c := newCPU(10*time.Millisecond, clock.now)
	q := c.Join("q")
	defer q.Leave()
	st, err := q.enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr := &turn{share: q, in: true, start: st}
	ctx := context.WithValue(context.Background(), turnKey{}, tr)
	var ran atomic.Bool
	go ran.Store(true) // queued on the one processor the step holds
	ms := 0
	for ; ms < 30 && !ran.Load(); ms++ {
		clock.add(time.Millisecond) // a piece of the step's work
		if err := Yield(ctx); err != nil {
			t.Fatal(err)
		}
	}
	q.exit(tr.start)
	if !ran.Load() {
		t.Fatalf("a goroutine queued beside a step did not run in its %d ms (slice %s): the step never gave its processor up", ms, c.slice)
	}
	t.Logf("the queued goroutine ran after %d ms of the step (slice %s)", ms, c.slice)
}
