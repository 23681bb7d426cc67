package dataflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// A batch from another worker is measured from its arrival here to its
// result at a sink, through the operators between (they pass its ingest
// stamp on): the inbox reports the longest such time once, for the
// transport to hand back to the sender. Local batches, and batches with
// no arrival time, are no measure.
func TestResidenceFromArrivalToResult(t *testing.T) {
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	g := &dataflow.Graph{Query: "r"}
	src := g.AddOperator(sliceSource("src", []int{1}, func(int) []dataflow.Batch { return nil }))
	mp := g.AddOperator(passthrough("map", []int{0}))
	sink := g.AddOperator(capture("sink", 1, []int{0}, &got))
	g.Connect(src, 0, mp, 0)
	g.Connect(mp, 0, sink, 0)
	var tr recorder
	w, err := dataflow.NewWorker(g, 0, dataflow.Config{Allocator: mem, Transport: &tr})
	if err != nil {
		t.Fatal(err)
	}
	ch := dataflow.ChannelID{Query: "r", Edge: 0, Sender: 0, Receiver: 0}
	in := tr.inboxes[ch]
	rm, ok := in.(dataflow.ResidenceMeter)
	if !ok {
		t.Fatalf("the inbox %T measures no residence", in)
	}
	now := time.Now().UnixNano()
	deliver := func(seq uint64, ingest, arrived int64) {
		t.Helper()
		m := dataflow.Message{Header: dataflow.Header{Channel: ch, Kind: dataflow.Data, Epoch: 1, Seq: seq, Ingest: ingest, Arrived: arrived},
			Record: kvRecord(mem, int(seq), 2)}
		if err := in.Deliver(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	deliver(0, now-int64(90*time.Millisecond), now-int64(40*time.Millisecond)) // here 40 ms before now
	deliver(1, now-int64(80*time.Millisecond), 0)                              // no arrival time: no measure
	deliver(2, now-int64(70*time.Millisecond), now-int64(10*time.Millisecond)) // here 10 ms before now
	if err := in.Deliver(context.Background(), dataflow.Message{Header: dataflow.Header{Channel: ch, Kind: dataflow.Progress, Epoch: dataflow.Closed, Seq: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone([]*dataflow.Worker{w}, 100); err != nil {
		t.Fatal(err)
	}
	if got.Rows() != 6 {
		t.Fatalf("sink got %d rows, want 6", got.Rows())
	}
	d := rm.Residence()
	if d < 40*time.Millisecond || d > 40*time.Millisecond+5*time.Second {
		t.Fatalf("residence %v, want the first batch's 40 ms and the time the worker took", d)
	}
	if again := rm.Residence(); again != 0 {
		t.Fatalf("residence reported twice: %v", again)
	}
}
