package dataflow_test

import (
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// everyOther emits every second batch it receives: the others only queue.
type everyOther struct {
	dataflow.Base
	n int
}

func (e *everyOther) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	e.n++
	if e.n%2 == 0 {
		return ctx.Emit(0, cap, b.Record)
	}
	b.Record.Release()
	return nil
}

// Batch latency samples the callbacks that produce output (a sink: every
// batch): a call that only queues rows is busy time, not a latency sample.
func TestBatchLatencySamplesProducingCalls(t *testing.T) {
	mem := checkedAlloc(t)
	g := &dataflow.Graph{Query: "h"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		var bs []dataflow.Batch
		for i := 0; i < 10; i++ {
			bs = append(bs, dataflow.Batch{Record: kvRecord(mem, i, 3)})
		}
		return bs
	}))
	half := g.AddOperator(op("half", 1, 1, nil, func(dataflow.Instance) dataflow.Operator { return &everyOther{} }))
	sink := g.AddOperator(op("sink", 1, 0, nil, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(dataflow.Batch) error { return nil })
	}))
	g.Connect(src, 0, half, 0)
	g.Connect(half, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Timing: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 1000); err != nil {
		t.Fatal(err)
	}
	st := ws[0].Stats()
	if st[1].BatchesIn != 10 || st[1].BatchLatency.Count != 5 {
		t.Errorf("half: %d batches in, %d latency samples; want 10 and 5", st[1].BatchesIn, st[1].BatchLatency.Count)
	}
	if st[2].BatchesIn != 5 || st[2].BatchLatency.Count != 5 {
		t.Errorf("sink: %d batches in, %d latency samples; want 5 and 5", st[2].BatchesIn, st[2].BatchLatency.Count)
	}
}

// Without Config.Timing nothing is timed: no busy time, no samples, no
// first or last times (a plain run leaves the clock alone).
func TestTimingIsOptIn(t *testing.T) {
	mem := checkedAlloc(t)
	g := &dataflow.Graph{Query: "h"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{{Record: kvRecord(mem, 0, 3)}}
	}))
	sink := g.AddOperator(op("sink", 1, 0, nil, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(dataflow.Batch) error { return nil })
	}))
	g.Connect(src, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 1000); err != nil {
		t.Fatal(err)
	}
	for _, s := range ws[0].Stats() {
		if s.BusyNs != 0 || s.BatchLatency.Count != 0 || s.First != 0 || s.Last != 0 {
			t.Errorf("%s timed without Timing: %+v", s.Operator, s)
		}
	}
}
