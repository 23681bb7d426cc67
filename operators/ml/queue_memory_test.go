package ml

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// queuedPipeline is a source holding batches of uint8 frames open, a model
// call that batches up to 64 rows with an hour's delay (so every batch
// waits in its queue) and a sink, under budget (its Arrow buffers are
// not charged here: what is counted is the operator's own).
func queuedPipeline(t *testing.T, mem memory.Allocator, src *holdSource, budget *dataflow.Memory, got *builtin.Captured) []*dataflow.Worker {
	t.Helper()
	g := &dataflow.Graph{Query: "ml"}
	s := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return src, nil }})
	schema := src.batches[0].Record.Schema()
	mlop := g.AddOperator(dataflow.OperatorSpec{Name: "classify", Inputs: 1, Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			m, err := Bind(&fakeSession{}, schema, Config{Input: "image", Heads: testHeads, MaxBatch: 64})
			if err != nil {
				return nil, err
			}
			return NewOperator(m, BatchConfig{MaxBatch: 64, MaxDelay: time.Hour})
		}})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(got, 0), nil }})
	g.Connect(s, 0, mlop, 0)
	g.Connect(mlop, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Memory: budget})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// uint8Frames is n batches of 4 rows of 2x2 frames encoded a byte a pixel
// (the source side's adaptation, as the link carries them).
func uint8Frames(t *testing.T, mem memory.Allocator, n int) []dataflow.Batch {
	t.Helper()
	var enc builtin.Captured
	defer enc.Release()
	rec := imageRecord(t, mem, 4, -1)
	runAdapt(t, mem, rec, "uint8", &enc)
	rec.Release()
	var out []dataflow.Batch
	for range n {
		r := enc.Batches()[0].Record
		r.Retain()
		out = append(out, dataflow.Batch{Record: r})
	}
	return out
}

// Batches waiting in a model call's queue are the query's memory: a frame
// widened from a byte a pixel to float32 holds four times what the link
// brought, in Go memory no allocator saw. The queue's values are charged
// to the operator's account while they wait, given back when the batch
// leaves, and a queue past the query's limit fails it naming the operator.
func TestModelQueueIsCharged(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got builtin.Captured
	defer got.Release()
	budget := dataflow.NewMemory("query q", 0, nil)
	src := &holdSource{batches: uint8Frames(t, mem, 3)}
	ws := queuedPipeline(t, mem, src, budget, &got)
	for range 3 {
		if _, err := ws[0].Step(); err != nil {
			t.Fatal(err)
		}
	}
	// 3 batches x 4 rows x 4 pixels, 4 bytes each as float32.
	const want = 3 * 4 * 4 * 4
	var held int64
	for _, h := range budget.Holders() {
		if strings.HasPrefix(h.Name, "classify") {
			held = h.Held
		}
	}
	if held != want {
		t.Errorf("the model's queue holds %d bytes of values, want %d (holders %+v)", held, want, budget.Holders())
	}
	src.finish = true
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	for _, h := range budget.Holders() {
		if strings.HasPrefix(h.Name, "classify") {
			t.Errorf("after the queue emptied, %s still holds %d", h.Name, h.Held)
		}
	}
	if n := got.Rows(); n != 12 {
		t.Errorf("%d rows out, want 12", n)
	}

	// A limit below what the queue would hold: the query fails naming the
	// model call and its queue, and nothing leaks.
	var got2 builtin.Captured
	defer got2.Release()
	small := dataflow.NewMemory("query q2", want/2, nil)
	src2 := &holdSource{batches: uint8Frames(t, mem, 3)}
	ws2 := queuedPipeline(t, mem, src2, small, &got2)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = ws2[0].Step()
	}
	var le *dataflow.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "classify") || !strings.Contains(err.Error(), "waiting for the model") {
		t.Errorf("queue past the limit: %v, want a LimitError naming the model call's queue", err)
	}
	ws2[0].Close()
	for _, b := range src2.batches {
		b.Record.Release()
	}
}
