package exec

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/rel"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/expr"
)

// peakAllocator records the most bytes ever allocated at once.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func (p *peakAllocator) Allocate(n int) []byte {
	c := p.cur.Add(int64(n))
	for {
		old := p.peak.Load()
		if c <= old || p.peak.CompareAndSwap(old, c) {
			break
		}
	}
	return p.Allocator.Allocate(n)
}

func (p *peakAllocator) Reallocate(n int, b []byte) []byte {
	p.cur.Add(int64(n - len(b)))
	return p.Allocator.Reallocate(n, b)
}

func (p *peakAllocator) Free(b []byte) {
	p.cur.Add(-int64(len(b)))
	p.Allocator.Free(b)
}

// slowWriter takes a little while per batch, like a terminal or a network.
type slowWriter struct{ rows int64 }

func (s *slowWriter) Write(rec arrow.Record) error {
	s.rows += rec.NumRows()
	time.Sleep(2 * time.Millisecond) // the slowness under test, not synchronisation
	return nil
}
func (s *slowWriter) Close() error { return nil }

// TestFastSourceSlowSinkStaysBounded: a source able to produce 50 MB as fast as
// it likes feeds a slow sink; backpressure keeps the bytes alive at any moment
// to a few batches per queue.
func TestFastSourceSlowSinkStaysBounded(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	mem := &peakAllocator{Allocator: checked}
	const batches, batch = 200, 8192
	gen := &sources.Generator{Rows: batches * batch, Batch: batch, Keys: 10, Start: time.Unix(1_700_000_000, 0), Step: time.Millisecond}
	cond, _ := expr.Builtins().NewCall("greater_equal", &expr.Column{Index: 2, Name: "v", DataType: expr.Float64}, &expr.Literal{Value: 0.0, DataType: expr.Float64})
	pred, err := eval.NewPredicate(cond, sources.GeneratorSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	w := &slowWriter{}
	g := &dataflow.Graph{Query: "mem"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "gen", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return sources.NewSource(gen, sources.EventTime{Column: 3}, nil), nil
	}})
	fil := g.AddOperator(dataflow.OperatorSpec{Name: "filter", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return rel.NewFilter(pred, nil), nil
	}})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return sinks.NewSink(w, &sync.Mutex{}, nil), nil
	}})
	g.Connect(src, 0, fil, 0)
	g.Connect(fil, 0, sink, 0)
	if err := dataflow.Run(context.Background(), g, dataflow.Config{Allocator: mem, QueueLen: 2}); err != nil {
		t.Fatal(err)
	}
	if w.rows != batches*batch {
		t.Fatalf("sink saw %d rows", w.rows)
	}
	batchBytes := int64(batch * 8 * 4)
	total := batches * batchBytes
	// Two queues of 2, one batch in each operator, one being built: ~8 batches.
	if peak := mem.peak.Load(); peak > 12*batchBytes {
		t.Fatalf("peak %d bytes for %d produced (%.1f batches)", peak, total, float64(peak)/float64(batchBytes))
	}
}
