package dataflow_test

import (
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// holdAll keeps every batch until its epoch is complete and emits them then,
// from OnNotify, as a window does when the watermark closes it.
type holdAll struct {
	dataflow.Base
	held []arrow.Record
}

func (h *holdAll) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	h.held = append(h.held, b.Record)
	return ctx.NotifyAt(cap, b.Epoch)
}

func (h *holdAll) OnNotify(ctx *dataflow.Context, cap *dataflow.Capability) error {
	for _, r := range h.held {
		if err := ctx.Emit(0, cap, r); err != nil {
			return err
		}
	}
	h.held = nil
	return nil
}

func (h *holdAll) Close(*dataflow.Context) error {
	for _, r := range h.held {
		r.Release()
	}
	h.held = nil
	return nil
}

// Sources stamp their batches with the time they emit them; row-at-a-time
// operators pass the stamp on; an operator that emits when an epoch
// completes stamps the latest ingest time it received; sinks turn the stamp
// into end-to-end latency per row and count the rows over the SLO.
func TestIngestTimeReachesSinks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		slo      time.Duration
		wantMiss int64
	}{
		{"no-slo", 0, 0},
		{"slo-missed", time.Nanosecond, 30},
		{"slo-met", time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			g := &dataflow.Graph{Query: "ingest"}
			src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
				var bs []dataflow.Batch
				for i := 0; i < 10; i++ {
					bs = append(bs, dataflow.Batch{Record: kvRecord(mem, i*3, 3)})
				}
				return bs
			}))
			mp := g.AddOperator(passthrough("map", nil))
			hold := g.AddOperator(op("hold", 1, 1, nil, func(dataflow.Instance) dataflow.Operator { return &holdAll{} }))
			var mu sync.Mutex
			var mapped, held []int64
			tap := func(into *[]int64) func(dataflow.Batch) error {
				return func(b dataflow.Batch) error {
					mu.Lock()
					*into = append(*into, b.Ingest)
					mu.Unlock()
					return nil
				}
			}
			s1 := g.AddOperator(op("sink-map", 1, 0, nil, func(dataflow.Instance) dataflow.Operator { return builtin.NewSink(tap(&mapped)) }))
			s2 := g.AddOperator(op("sink-hold", 1, 0, nil, func(dataflow.Instance) dataflow.Operator { return builtin.NewSink(tap(&held)) }))
			g.Connect(src, 0, mp, 0)
			g.Connect(mp, 0, s1, 0)
			g.Connect(mp, 0, hold, 0)
			g.Connect(hold, 0, s2, 0)
			before := time.Now().UnixNano()
			ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Latency: true, LatencySLO: tc.slo})
			if err != nil {
				t.Fatal(err)
			}
			if err := dataflow.StepUntilDone(ws, 1000); err != nil {
				t.Fatal(err)
			}
			after := time.Now().UnixNano()
			if len(mapped) != 10 || len(held) != 10 {
				t.Fatalf("sinks saw %d and %d batches, want 10 each", len(mapped), len(held))
			}
			var latest int64
			for i, in := range mapped {
				if in < before || in > after {
					t.Fatalf("batch %d: ingest %d outside the run [%d, %d]", i, in, before, after)
				}
				if i > 0 && in < mapped[i-1] {
					t.Errorf("batch %d stamped %d before batch %d (%d)", i, in, i-1, mapped[i-1])
				}
				latest = max(latest, in)
			}
			for i, in := range held {
				if in != latest {
					t.Errorf("held batch %d: ingest %d, want the latest received %d", i, in, latest)
				}
			}
			for _, st := range ws[0].Stats() {
				switch st.Operator {
				case "sink-map", "sink-hold":
					if st.EndToEnd.Count != 30 {
						t.Errorf("%s: %d latency samples, want 30 (one per row)", st.Operator, st.EndToEnd.Count)
					}
					if q := st.EndToEnd.Quantile(0.99); q <= 0 || q > time.Duration(after-before)*2 {
						t.Errorf("%s: p99 %v outside the run's %v", st.Operator, q, time.Duration(after-before))
					}
					if st.SLOMissRows != tc.wantMiss {
						t.Errorf("%s: %d rows over the SLO, want %d", st.Operator, st.SLOMissRows, tc.wantMiss)
					}
				default:
					if st.EndToEnd.Count != 0 {
						t.Errorf("%s has outputs but measured %d end-to-end samples", st.Operator, st.EndToEnd.Count)
					}
				}
			}
		})
	}
}

// Without Config.Latency sources stamp nothing and sinks measure nothing: a
// one-process run pays no clock reads for it.
func TestIngestTimeIsOptIn(t *testing.T) {
	mem := checkedAlloc(t)
	g := &dataflow.Graph{Query: "plain"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		return []dataflow.Batch{{Record: kvRecord(mem, 0, 3)}, {Record: kvRecord(mem, 3, 3), Ingest: 42}}
	}))
	var got []int64
	sink := g.AddOperator(op("sink", 1, 0, nil, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(b dataflow.Batch) error { got = append(got, b.Ingest); return nil })
	}))
	g.Connect(src, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 100); err != nil {
		t.Fatal(err)
	}
	// A batch that arrives stamped (from a recording, another worker) is
	// still measured.
	if len(got) != 2 || got[0] != 0 || got[1] != 42 {
		t.Fatalf("ingest times %v, want [0 42]", got)
	}
	if n := ws[0].Stats()[1].EndToEnd.Count; n != 3 {
		t.Errorf("%d end-to-end samples, want the 3 rows of the stamped batch", n)
	}
}
