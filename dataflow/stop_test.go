package dataflow_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// A graceful stop ends endless sources; everything they emitted drains, every
// epoch the sink saw completes, and Run returns nil.
func TestGracefulStopDrains(t *testing.T) {
	t.Run("concurrent", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		mem := checkedAlloc(t)
		var got builtin.Captured
		defer got.Release()
		g := &dataflow.Graph{Query: "stop"}
		src := g.AddOperator(generator("src", []int{0, 1}, -1, 8))
		idle := g.AddOperator(op("idle", 0, 1, []int{1}, func(dataflow.Instance) dataflow.Operator {
			return &blockingSource{rec: kvRecord(mem, -1, 1)}
		}))
		sink := g.AddOperator(capture("sink", 2, []int{0, 2}, &got))
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: sink}, Kind: dataflow.Exchange, Partition: dataflow.HashColumns(0)})
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: idle}, To: dataflow.Port{Op: sink, Port: 1}, Kind: dataflow.Broadcast})
		stop := make(chan struct{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan error)
		go func() { done <- dataflow.Run(ctx, g, dataflow.Config{Allocator: mem, QueueLen: 2, Stop: stop}) }()
		// Both generators must have been scheduled before the stop: on a
		// loaded machine one can emit 500 rows before the other's first step.
		eventually(t, 5*time.Second, "rows from both generators at the sink", func() bool {
			return got.Rows() > 500 && len(generatorsSeen(&got)) == 2
		})
		close(stop)
		if err := <-done; err != nil {
			t.Fatalf("Run after a graceful stop = %v", err)
		}
		checkCompletions(t, &got)
		// Every epoch any instance saw data at has completed there.
		last := map[int]dataflow.Epoch{}
		for _, b := range got.Batches() {
			last[b.Instance] = max(last[b.Instance], b.Epoch)
		}
		for inst, e := range last {
			ok := false
			for _, c := range got.Completed() {
				ok = ok || (c.Instance == inst && c.Epoch == e)
			}
			if !ok {
				t.Fatalf("instance %d never completed its last epoch %v", inst, e)
			}
		}
		// The keys are exactly the first n of each generator: nothing lost
		// between emitting and stopping.
		count := map[int64]int{}
		for _, b := range got.Batches() {
			if b.Input == 0 {
				for _, k := range keys(b.Record) {
					count[k]++
				}
			}
		}
		top := map[int64]int64{} // per generator instance: highest key
		for k, n := range count {
			if n != 1 {
				t.Fatalf("key %d arrived %d times", k, n)
			}
			top[k>>40] = max(top[k>>40], k)
		}
		for inst, hi := range top {
			for k := inst << 40; k <= hi; k++ {
				if count[k] != 1 {
					t.Fatalf("generator %d: key %d missing below its last key %d", inst, k, hi)
				}
			}
		}
		if len(top) != 2 {
			t.Fatalf("rows from %d generators, want 2", len(top))
		}
	})
	t.Run("stepped", func(t *testing.T) {
		mem := checkedAlloc(t)
		var got builtin.Captured
		defer got.Release()
		g := &dataflow.Graph{Query: "stop"}
		src := g.AddOperator(generator("src", []int{0, 1}, -1, 8))
		sink := g.AddOperator(capture("sink", 1, []int{1}, &got))
		g.Connect(src, 0, sink, 0)
		ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			if _, err := dataflow.StepAll(ws); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range ws {
			w.StopSources()
		}
		if err := dataflow.StepUntilDone(ws, 1000); err != nil {
			t.Fatal(err)
		}
		if got.Rows() == 0 || len(got.Completed()) == 0 {
			t.Fatalf("rows %d, completions %d", got.Rows(), len(got.Completed()))
		}
		checkCompletions(t, &got)
	})
}

// generatorsSeen returns the generator instances whose keys reached the
// sink's data input (a generator's keys start at its instance << 40).
func generatorsSeen(got *builtin.Captured) map[int64]bool {
	seen := map[int64]bool{}
	for _, b := range got.Batches() {
		if b.Input == 0 {
			for _, k := range keys(b.Record) {
				seen[k>>40] = true
			}
		}
	}
	return seen
}

// gatedSink opens once gate closes: its inbox fills before its first step.
type gatedSink struct {
	*builtin.Sink
	gate <-chan struct{}
}

func (s gatedSink) Open(ctx *dataflow.Context, cap *dataflow.Capability) error {
	<-s.gate
	return s.Sink.Open(ctx, cap)
}

// A cancelled run (an aborted query) stops each instance at its next
// message, not once its inbox drains: an operator that takes a queue of
// batches handles none after the cancel (a model's batches ran on for
// seconds after bench shared aborted its best-effort query), and every
// record it did not handle is released.
func TestCancelStopsAtTheNextMessage(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := checkedAlloc(t)
	const batches = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := make(chan struct{})
	g := &dataflow.Graph{Query: "cancel"}
	// One batch more than the sink waits for: the source asks for it only
	// once it has emitted the others, all of them in the sink's inbox
	// (QueueLen has room for them all).
	src := g.AddOperator(op("src", 0, 1, []int{0}, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewGenerator(batches+1, func(b int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
			if b == batches {
				close(all)
			}
			return 0, kvRecord(mem, b, 1), nil
		})
	}))
	var handled atomic.Int64
	sink := g.AddOperator(op("sink", 1, 0, []int{0}, func(dataflow.Instance) dataflow.Operator {
		return gatedSink{Sink: builtin.NewSink(func(dataflow.Batch) error {
			handled.Add(1)
			cancel()
			return nil
		}), gate: all}
	}))
	g.Connect(src, 0, sink, 0)
	err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem, QueueLen: 2 * batches})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after a cancel = %v, want context.Canceled", err)
	}
	if n := handled.Load(); n != 1 {
		t.Fatalf("the sink handled %d batches, want 1: the one it cancelled in (%d were in its inbox)", n, batches)
	}
}
