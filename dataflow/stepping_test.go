package dataflow_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// A source -> map -> capture pipeline, stepped one worker step at a time:
// each step polls the source once and moves its batch through (operators
// run in topological order), and the sink hears that an epoch is complete
// only after it has seen all of that epoch's batches.
func TestSteppingMovesDataOneOperatorPerStep(t *testing.T) {
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	g := &dataflow.Graph{Query: "q"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{
			{Epoch: 0, Record: kvRecord(mem, 0, 3)},
			{Epoch: 0, Record: kvRecord(mem, 3, 3)},
			{Epoch: 1, Record: kvRecord(mem, 6, 2)},
			{Epoch: 2, Record: kvRecord(mem, 8, 3)},
		}
	}))
	double := g.AddOperator(op("double", 1, 1, nil, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewMap(func(ctx *dataflow.Context, _ dataflow.Epoch, in arrow.Record) (arrow.Record, error) {
			defer in.Release()
			// Emit only the first two rows: proves map output reaches the sink.
			return in.NewSlice(0, min(2, in.NumRows())), nil
		})
	}))
	sink := g.AddOperator(capture("sink", 1, nil, &got))
	g.Connect(src, 0, double, 0)
	g.Connect(double, 0, sink, 0)

	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, QueueLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	// Step 1: source opens and emits batch 0; map and sink run after it in
	// topological order, so the batch reaches the sink in the same step.
	if busy, err := w.Step(); err != nil || !busy {
		t.Fatalf("step 1: busy=%v err=%v", busy, err)
	}
	if n := len(got.Batches()); n != 1 {
		t.Fatalf("after step 1: %d batches at sink, want 1", n)
	}
	if c := got.Completed(); len(c) != 0 {
		t.Fatalf("epoch completed too early: %v", c)
	}
	// Step 2: second batch of epoch 0.
	_, _ = w.Step()
	if c := got.Completed(); len(c) != 0 {
		t.Fatalf("epoch 0 complete before the source moved past it: %v", c)
	}
	// Step 3: the source downgrades to 1 and emits; the frontier it
	// announces after that data lets the sink complete epoch 0.
	_, _ = w.Step()
	c := got.Completed()
	if len(c) != 1 || c[0].Epoch != 0 {
		t.Fatalf("completed = %+v, want epoch 0", c)
	}
	checkCompletions(t, &got)
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	c = got.Completed()
	if len(c) != 3 || c[1].Epoch != 1 || c[2].Epoch != 2 || c[2].Batches != 4 {
		t.Fatalf("completed = %+v, want epochs 0, 1, 2 (after 4 batches)", c)
	}
	checkCompletions(t, &got)
	var all []int64
	for _, b := range got.Batches() {
		all = append(all, keys(b.Record)...)
	}
	if want := []int64{0, 1, 3, 4, 6, 7, 8, 9}; !slices.Equal(all, want) {
		t.Fatalf("keys = %v, want %v", all, want)
	}
	if busy, err := w.Step(); busy || err != nil {
		t.Fatalf("step after done: busy=%v err=%v", busy, err)
	}
}

// capHoarder retains the first capability and emits under it later, then
// tries to emit after dropping it.
type capHoarder struct {
	dataflow.Base
	held    *dataflow.Capability
	stale   *dataflow.Capability
	results *[]error
	mem     memory.Allocator
}

func (h *capHoarder) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	if h.held == nil {
		var err error
		if h.held, err = cap.Retain(); err != nil {
			return err
		}
		h.stale = cap
		return ctx.Emit(0, cap, b.Record)
	}
	// A borrowed capability from an earlier call has expired.
	*h.results = append(*h.results, ctx.Emit(0, h.stale, kvRecord(h.mem, 100, 1)))
	// Downgrading a borrowed one is refused.
	*h.results = append(*h.results, cap.Downgrade(cap.Epoch()+1))
	// A retained one still works, even for a later batch.
	*h.results = append(*h.results, ctx.Emit(0, h.held, b.Record))
	h.held.Drop()
	*h.results = append(*h.results, ctx.Emit(0, h.held, kvRecord(h.mem, 101, 1)))
	return nil
}

func TestEmitRequiresAHeldCapability(t *testing.T) {
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	var results []error
	g := &dataflow.Graph{Query: "q"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{{Epoch: 2, Record: kvRecord(mem, 0, 1)}, {Epoch: 3, Record: kvRecord(mem, 1, 1)}}
	}))
	h := g.AddOperator(op("hoard", 1, 1, nil, func(dataflow.Instance) dataflow.Operator {
		return &capHoarder{results: &results, mem: mem}
	}))
	sink := g.AddOperator(capture("sink", 1, nil, &got))
	g.Connect(src, 0, h, 0)
	g.Connect(h, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("results %v", results)
	}
	for i, wantErr := range []bool{true, true, false, true} {
		if (results[i] != nil) != wantErr {
			t.Fatalf("result %d = %v, want error %v", i, results[i], wantErr)
		}
		if wantErr && !errors.Is(results[i], dataflow.ErrNoCapability) {
			t.Fatalf("result %d = %v, want ErrNoCapability", i, results[i])
		}
	}
	// The held capability at epoch 2 kept epoch 2 open at the sink until
	// the hoarder dropped it, so the epoch-3 batch was emitted at 2.
	b := got.Batches()
	if len(b) != 2 || b[0].Epoch != 2 || b[1].Epoch != 2 {
		t.Fatalf("batches at epochs %v", b)
	}
}

// A capability that is never dropped stalls the dataflow; stepping reports
// it instead of spinning, and closing releases everything.
type neverDrops struct{ dataflow.Base }

func (neverDrops) Open(_ *dataflow.Context, cap *dataflow.Capability) error {
	_, err := cap.Retain()
	return err
}

func TestStuckDataflowIsReported(t *testing.T) {
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	g := &dataflow.Graph{Query: "q"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{{Epoch: 0, Record: kvRecord(mem, 0, 1)}}
	}))
	stuck := g.AddOperator(op("stuck", 1, 1, nil, func(dataflow.Instance) dataflow.Operator { return neverDrops{} }))
	sink := g.AddOperator(capture("sink", 1, nil, &got))
	g.Connect(src, 0, stuck, 0)
	g.Connect(stuck, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100); !errors.Is(err, dataflow.ErrStuck) {
		t.Fatalf("got %v, want ErrStuck", err)
	}
}

// A worker closed before it ever ran still closes its operators, so records
// handed to a source's constructor are released.
func TestClosingAnUnstartedWorkerReleases(t *testing.T) {
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	g := &dataflow.Graph{Query: "q"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{{Record: kvRecord(mem, 0, 3)}}
	}))
	sink := g.AddOperator(capture("sink", 1, nil, &got))
	g.Connect(src, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	ws[0].Close()
	if _, err := ws[0].Step(); !errors.Is(err, dataflow.ErrClosed) {
		t.Fatalf("step after close: %v", err)
	}
}
