package ml

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// mlGraph is source -> ml -> capture with the given batches.
func mlGraph(t *testing.T, batches []dataflow.Batch, f *fakeSession, cfg BatchConfig, got *builtin.Captured) (*dataflow.Graph, **Operator) {
	t.Helper()
	var op *Operator
	g := &dataflow.Graph{Query: "ml"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(batches), nil }})
	mlop := g.AddOperator(dataflow.OperatorSpec{Name: "classify", Inputs: 1, Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			m, err := Bind(f, inputSchema(), Config{Input: "x", Heads: testHeads, MaxBatch: cfg.MaxBatch})
			if err != nil {
				return nil, err
			}
			op, err = NewOperator(m, cfg)
			return op, err
		}})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(got, 0), nil }})
	g.Connect(src, 0, mlop, 0)
	g.Connect(mlop, 0, sink, 0)
	return g, &op
}

func checkRows(t *testing.T, got *builtin.Captured, total int, nan map[int]bool) {
	t.Helper()
	id := 0
	var lastEpoch dataflow.Epoch
	for _, b := range got.Batches() {
		if b.Epoch < lastEpoch {
			t.Errorf("epoch %d after %d", b.Epoch, lastEpoch)
		}
		lastEpoch = b.Epoch
		ids := b.Record.Column(0).(*array.Int64)
		labels := b.Record.Column(2).(*array.String)
		errs := b.Record.Column(5).(*array.String)
		for r := 0; r < int(b.Record.NumRows()); r++ {
			if ids.Value(r) != int64(id) {
				t.Fatalf("row order: id %d, want %d", ids.Value(r), id)
			}
			if nan[id] != errs.IsValid(r) || (!nan[id] && labels.Value(r) != []string{"a", "b", "c"}[id%3]) {
				t.Errorf("row %d: label %q error %q", id, labels.Value(r), errs.Value(r))
			}
			id++
		}
	}
	if id != total {
		t.Errorf("%d rows out, want %d", id, total)
	}
}

// holdSource emits its batches on the first Produce and then stays open (no
// progress past its epoch) until finish is set.
type holdSource struct {
	dataflow.Base
	batches []dataflow.Batch
	cap     *dataflow.Capability
	finish  bool
}

func (s *holdSource) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	var err error
	s.cap, err = cap.Retain()
	return err
}

func (s *holdSource) Produce(ctx *dataflow.Context) (bool, error) {
	for _, b := range s.batches {
		ingest := b.Ingest
		if ingest == 0 {
			ingest = ctx.Ingest()
		}
		if err := ctx.EmitIngest(0, s.cap, b.Record, ingest); err != nil {
			return false, err
		}
	}
	s.batches = nil
	return s.finish, nil
}

// Stepped with a fake clock: a batch smaller than MaxBatch waits while the input
// is open, and is cut once the clock passes MaxDelay, without further input.
func TestOperatorSteppedDelayCut(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	now := time.Unix(1000, 0)
	src := &holdSource{batches: []dataflow.Batch{{Epoch: 0, Record: inputRecord(t, mem, 0, 3, nil, nil)}}}
	f := &fakeSession{}
	ws, _ := steppedPipeline(t, mem, src, f, &got, &now, func(*Operator) {})
	for i := 0; i < 3; i++ {
		if _, err := ws[0].Step(); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.calls) != 0 || len(got.Batches()) != 0 {
		t.Fatalf("ran before size or delay: calls %v, %d batches out", f.calls, len(got.Batches()))
	}
	now = now.Add(9 * time.Millisecond)
	_, _ = ws[0].Step()
	if len(f.calls) != 0 {
		t.Fatalf("ran before the delay: calls %v", f.calls)
	}
	now = now.Add(time.Millisecond)
	for i := 0; i < 3; i++ {
		if _, err := ws[0].Step(); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.calls) != 1 || f.calls[0] != 3 || len(got.Batches()) != 1 {
		t.Fatalf("after the delay: calls %v, %d batches out", f.calls, len(got.Batches()))
	}
	src.finish = true
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	checkRows(t, &got, 3, nil)
}

// Concurrent run: batches cross input records and epochs, rows keep their order
// and epoch, a bad row is marked, nothing leaks.
func TestOperatorRun(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	sizes := []int{3, 5, 1, 7, 2, 6}
	nan := map[int]bool{4: true}
	var batches []dataflow.Batch
	first := 0
	for i, n := range sizes {
		batches = append(batches, dataflow.Batch{Epoch: dataflow.Epoch(i / 2), Record: inputRecord(t, mem, first, n, nan, nil)})
		first += n
	}
	f := &fakeSession{}
	g, op := mlGraph(t, batches, f, BatchConfig{MaxBatch: 8, MaxDelay: time.Millisecond}, &got)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, &got, first, nan)
	if len(got.Batches()) != len(sizes) {
		t.Errorf("%d output batches, want one per input batch (%d)", len(got.Batches()), len(sizes))
	}
	if c := got.Completed(); len(c) != 3 {
		t.Errorf("completed epochs %+v", c)
	}
	if st := (*op).Stats(); st.Rows < first || st.MaxBatch > 8 {
		t.Errorf("stats %+v", st)
	}
}

// Input batches queued together and run in one model batch, cut by the delay
// in a wake-up, each come out with their own ingest time, not the latest one
// the operator received: a row's end-to-end latency counts its time queued.
func TestOperatorKeepsEachBatchsIngestTime(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	now := time.Unix(1000, 0)
	src := &holdSource{batches: []dataflow.Batch{
		{Record: inputRecord(t, mem, 0, 3, nil, nil), Ingest: 111},
		{Record: inputRecord(t, mem, 3, 3, nil, nil), Ingest: 222},
	}}
	f := &fakeSession{}
	ws, _ := steppedPipeline(t, mem, src, f, &got, &now, func(*Operator) {})
	for i := 0; i < 3; i++ {
		if _, err := ws[0].Step(); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(10 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if _, err := ws[0].Step(); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.calls) != 1 || f.calls[0] != 6 {
		t.Fatalf("model calls %v, want one batch of 6 rows", f.calls)
	}
	bs := got.Batches()
	if len(bs) != 2 || bs[0].Ingest != 111 || bs[1].Ingest != 222 {
		var ins []int64
		for _, b := range bs {
			ins = append(ins, b.Ingest)
		}
		t.Fatalf("output ingest times %v, want [111 222]", ins)
	}
	src.finish = true
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
}

// steppedPipeline builds src -> classify (on f, MaxBatch 8, MaxDelay 10 ms,
// then configure) -> capture into got on one local worker whose clock reads
// *now, for tests that step it by hand.
func steppedPipeline(t *testing.T, mem memory.Allocator, src *holdSource, f *fakeSession, got *builtin.Captured,
	now *time.Time, configure func(*Operator)) ([]*dataflow.Worker, *Operator) {
	t.Helper()
	var op *Operator
	g := &dataflow.Graph{Query: "ml"}
	s := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return src, nil }})
	mlop := g.AddOperator(dataflow.OperatorSpec{Name: "classify", Inputs: 1, Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			m, err := Bind(f, inputSchema(), Config{Input: "x", Heads: testHeads, MaxBatch: 8})
			if err != nil {
				return nil, err
			}
			op, err = NewOperator(m, BatchConfig{MaxBatch: 8, MaxDelay: 10 * time.Millisecond})
			if err != nil {
				return nil, err
			}
			configure(op)
			return op, nil
		}})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(got, 0), nil }})
	g.Connect(s, 0, mlop, 0)
	g.Connect(mlop, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return ws, op
}

// Lazy drop (Jellyfish 5): with a LATENCY bound, an input batch whose
// deadline a one-row call can no longer make is dropped before compute and
// counted as a "deadline" drop; the batch behind it, still in time, runs.
// Nothing it held leaks.
func TestOperatorDropsPastDeadlineBeforeCompute(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	now := time.Unix(1000, 0)
	src := &holdSource{batches: []dataflow.Batch{
		// 95 ms old: 5 ms left of a 100 ms bound, a one-row call takes 10.
		{Record: inputRecord(t, mem, 0, 3, nil, nil), Ingest: now.Add(-95 * time.Millisecond).UnixNano()},
		{Record: inputRecord(t, mem, 3, 2, nil, nil), Ingest: now.Add(-20 * time.Millisecond).UnixNano()},
	}}
	f := &fakeSession{}
	var drops dataflow.Drops
	ws, op := steppedPipeline(t, mem, src, f, &got, &now, func(op *Operator) {
		op.Deadline, op.SoloMs = 100*time.Millisecond, 10
		op.CountDropsIn(&drops)
	})
	for i := 0; i < 3; i++ {
		if _, err := ws[0].Step(); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(10 * time.Millisecond)
	src.finish = true
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || f.calls[0] != 2 {
		t.Fatalf("model calls %v, want one call of the 2 rows still in time", f.calls)
	}
	var ids []int64
	for _, b := range got.Batches() {
		c := b.Record.Column(0).(*array.Int64)
		for r := 0; r < c.Len(); r++ {
			ids = append(ids, c.Value(r))
		}
	}
	if len(ids) != 2 || ids[0] != 3 || ids[1] != 4 {
		t.Fatalf("rows out %v, want [3 4]", ids)
	}
	if d := drops.Snapshot()[dataflow.DropDeadline]; d != 3 {
		t.Errorf("deadline drops %d, want 3 (%v)", d, drops.Snapshot())
	}
	if c := op.Counters()["deadline_dropped"]; c != 3 {
		t.Errorf("deadline_dropped counter %d, want 3", c)
	}
}

// Without a profiled one-row time, the lazy drop judges by the fastest
// one-row call measured: one call a stall stretched past the bound does
// not drop the fresh batches behind it (by the smoothed time it would drop
// them all, and none would run to bring the estimate down).
func TestOperatorLazyDropSurvivesOneStalledCall(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	now := time.Unix(1000, 0)
	src := &holdSource{batches: []dataflow.Batch{
		{Record: inputRecord(t, mem, 0, 1, nil, nil), Ingest: now.Add(-5 * time.Millisecond).UnixNano()},
	}}
	f := &fakeSession{}
	var drops dataflow.Drops
	ws, op := steppedPipeline(t, mem, src, f, &got, &now, func(op *Operator) {
		op.Deadline = 50 * time.Millisecond
		op.CountDropsIn(&drops)
		// One-row calls of 2 ms, then one the machine stalled for
		// 300 ms: smoothed, 91 ms, past the 50 ms bound.
		op.b.Observe(1, 2*time.Millisecond)
		op.b.Observe(1, 300*time.Millisecond)
	})
	if est, _ := op.b.Estimate(1); est < 50*time.Millisecond {
		t.Fatalf("smoothed one-row time %s: the test wants it past the bound", est)
	}
	src.finish = true
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || f.calls[0] != 1 {
		t.Fatalf("model calls %v, want the fresh row run", f.calls)
	}
	if d := drops.Snapshot()[dataflow.DropDeadline]; d != 0 {
		t.Errorf("deadline drops %d, want none", d)
	}
}
