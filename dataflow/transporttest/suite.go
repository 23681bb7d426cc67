// Package transporttest is the conformance suite for dataflow.Transport
// implementations: the in-process LocalTransport passes it in dataflow's
// tests, and the NATS relay runs the same suite over its adapter. It builds
// real dataflows with one dataflow.Worker per transport and checks exactly-
// once in-order delivery, exchange, progress (a frontier never overtakes
// its data), bounded memory under a slow consumer, and clean cancellation.
//
// Like dataflow it must not import anything of tierflow above dataflow.
package transporttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// Factory returns one transport per worker (index = worker). Records a
// transport decodes must come from mem, so the suite can check for leaks.
// Transports of one call must be connected to each other (share a
// LocalTransport, or a NATS server). The suite closes nothing: register
// cleanups with t.
type Factory func(t *testing.T, mem memory.Allocator, workers int) []dataflow.Transport

// Run runs every conformance test as a subtest of t.
func Run(t *testing.T, mk Factory) {
	t.Run("PipelineAcrossWorkers", func(t *testing.T) { testPipeline(t, mk) })
	t.Run("ExchangeAcrossWorkers", func(t *testing.T) { testExchange(t, mk) })
	t.Run("OrderPerChannel", func(t *testing.T) { testOrder(t, mk) })
	t.Run("SlowConsumerBoundsMemory", func(t *testing.T) { testBackpressure(t, mk) })
	t.Run("CancelReleasesEverything", func(t *testing.T) { testCancel(t, mk) })
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

// record makes n rows with keys from, from+1, ... and v = fmt of the key.
func record(mem memory.Allocator, from, n int) arrow.Record {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i))
	}
	return b.NewRecord()
}

func keys(rec arrow.Record) []int64 { return rec.Column(0).(*array.Int64).Int64Values() }

func spec(name string, inputs, outputs int, workers []int, mk func(dataflow.Instance) dataflow.Operator) dataflow.OperatorSpec {
	return dataflow.OperatorSpec{Name: name, Inputs: inputs, Outputs: outputs, Workers: workers,
		New: func(i dataflow.Instance) (dataflow.Operator, error) { return mk(i), nil }}
}

// source emits n batches of rows rows per instance, keys disjoint across
// instances, epoch = batch / perEpoch.
func source(workers []int, n, rows, perEpoch int) dataflow.OperatorSpec {
	return spec("src", 0, 1, workers, func(inst dataflow.Instance) dataflow.Operator {
		return builtin.NewGenerator(n, func(i int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
			return dataflow.Epoch(i / perEpoch), record(mem, (inst.Index*n+i)*rows, rows), nil
		})
	})
}

// build makes every worker of g, each with its own transport.
func build(t *testing.T, mk Factory, mem memory.Allocator, g *dataflow.Graph, queueLen int) []*dataflow.Worker {
	t.Helper()
	trs := mk(t, mem, g.Workers())
	if len(trs) != g.Workers() {
		t.Fatalf("factory made %d transports for %d workers", len(trs), g.Workers())
	}
	ws := make([]*dataflow.Worker, len(trs))
	for i, tr := range trs {
		w, err := dataflow.NewWorker(g, i, dataflow.Config{Allocator: mem, QueueLen: queueLen, Transport: tr})
		if err != nil {
			for _, b := range ws[:i] {
				b.Close()
			}
			t.Fatalf("worker %d: %v", i, err)
		}
		ws[i] = w
	}
	return ws
}

// run builds every worker and runs them concurrently.
func run(t *testing.T, ctx context.Context, mk Factory, mem memory.Allocator, g *dataflow.Graph, queueLen int) error {
	t.Helper()
	return dataflow.RunWorkers(ctx, build(t, mk, mem, g, queueLen))
}

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// completions checks that every epoch completed at each capture instance
// after all of that instance's batches at or below it.
func completions(t *testing.T, got *builtin.Captured) {
	t.Helper()
	per := map[int][]dataflow.Epoch{}
	for _, b := range got.Batches() {
		per[b.Instance] = append(per[b.Instance], b.Epoch)
	}
	for _, c := range got.Completed() {
		for j, e := range per[c.Instance] {
			if e <= c.Epoch && j >= c.Batches {
				t.Fatalf("instance %d: batch %d at epoch %v arrived after epoch %v completed", c.Instance, j, e, c.Epoch)
			}
		}
	}
}

func testPipeline(t *testing.T, mk Factory) {
	mem := checked(t)
	var got builtin.Captured
	defer got.Release()
	g := &dataflow.Graph{Query: "tt-pipe"}
	src := g.AddOperator(source([]int{0}, 40, 8, 4))
	mid := g.AddOperator(spec("mid", 1, 1, []int{1}, func(dataflow.Instance) dataflow.Operator { return builtin.NewMap(nil) }))
	sink := g.AddOperator(spec("sink", 1, 0, []int{2}, func(i dataflow.Instance) dataflow.Operator { return builtin.NewCapture(&got, i.Index) }))
	g.Connect(src, 0, mid, 0)
	g.Connect(mid, 0, sink, 0)
	if err := run(t, deadline(t), mk, mem, g, 4); err != nil {
		t.Fatal(err)
	}
	var ks []int64
	for _, b := range got.Batches() {
		ks = append(ks, keys(b.Record)...)
	}
	if len(ks) != 320 || !slices.IsSorted(ks) || ks[0] != 0 || ks[319] != 319 {
		t.Fatalf("sink got %d rows (sorted %v)", len(ks), slices.IsSorted(ks))
	}
	completions(t, &got)
	var eps []dataflow.Epoch
	for _, c := range got.Completed() {
		eps = append(eps, c.Epoch)
	}
	if !slices.Equal(eps, []dataflow.Epoch{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("completed epochs %v", eps)
	}
}

func testExchange(t *testing.T, mk Factory) {
	mem := checked(t)
	var got builtin.Captured
	defer got.Release()
	part := dataflow.HashColumns(0)
	g := &dataflow.Graph{Query: "tt-xchg"}
	src := g.AddOperator(source([]int{0, 1}, 30, 16, 5))
	sink := g.AddOperator(spec("sink", 1, 0, []int{0, 1, 2}, func(i dataflow.Instance) dataflow.Operator { return builtin.NewCapture(&got, i.Index) }))
	g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: sink}, Kind: dataflow.Exchange, Partition: part})
	if err := run(t, deadline(t), mk, mem, g, 4); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, b := range got.Batches() {
		dst := make([]uint32, b.Record.NumRows())
		if err := part(b.Record, 3, dst); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys(b.Record) {
			seen[k]++
			if int(dst[i]) != b.Instance {
				t.Fatalf("key %d at instance %d, belongs to %d", k, b.Instance, dst[i])
			}
		}
	}
	if len(seen) != 2*30*16 {
		t.Fatalf("%d distinct keys, want %d", len(seen), 2*30*16)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("key %d delivered %d times", k, n)
		}
	}
	completions(t, &got)
	if n := len(got.Completed()); n != 3*6 {
		t.Fatalf("%d completions, want 6 epochs at 3 instances", n)
	}
}

func testOrder(t *testing.T, mk Factory) {
	mem := checked(t)
	var last atomic.Int64
	var bad atomic.Value
	last.Store(-1)
	g := &dataflow.Graph{Query: "tt-order"}
	src := g.AddOperator(source([]int{0}, 500, 1, 7))
	sink := g.AddOperator(spec("sink", 1, 0, []int{1}, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(b dataflow.Batch) error {
			k := keys(b.Record)[0]
			if prev := last.Swap(k); k != prev+1 {
				bad.Store(fmt.Sprintf("key %d after %d", k, prev))
			}
			return nil
		})
	}))
	g.Connect(src, 0, sink, 0)
	if err := run(t, deadline(t), mk, mem, g, 2); err != nil {
		t.Fatal(err)
	}
	if b := bad.Load(); b != nil {
		t.Fatalf("out of order: %v", b)
	}
	if last.Load() != 499 {
		t.Fatalf("last key %d, want 499", last.Load())
	}
}

// peak tracks the high-water mark of live bytes.
type peak struct {
	memory.Allocator
	cur, max atomic.Int64
}

func (p *peak) add(n int) {
	c := p.cur.Add(int64(n))
	for {
		m := p.max.Load()
		if c <= m || p.max.CompareAndSwap(m, c) {
			return
		}
	}
}
func (p *peak) Allocate(n int) []byte { p.add(n); return p.Allocator.Allocate(n) }
func (p *peak) Reallocate(n int, b []byte) []byte {
	p.add(n - len(b))
	return p.Allocator.Reallocate(n, b)
}
func (p *peak) Free(b []byte) { p.add(-len(b)); p.Allocator.Free(b) }

func testBackpressure(t *testing.T, mk Factory) {
	base := checked(t)
	mem := &peak{Allocator: base}
	const batches, rows = 800, 128
	var consumed atomic.Int64
	g := &dataflow.Graph{Query: "tt-bp"}
	src := g.AddOperator(source([]int{0}, batches, rows, 10))
	sink := g.AddOperator(spec("sink", 1, 0, []int{1}, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(b dataflow.Batch) error {
			time.Sleep(20 * time.Microsecond) // a slow consumer, not synchronisation
			consumed.Add(b.Record.NumRows())
			return nil
		})
	}))
	g.Connect(src, 0, sink, 0)
	one := record(base, 0, rows)
	size := int64(0)
	for _, c := range one.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				size += int64(b.Len())
			}
		}
	}
	one.Release()
	if err := run(t, deadline(t), mk, mem, g, 4); err != nil {
		t.Fatal(err)
	}
	if consumed.Load() != batches*rows {
		t.Fatalf("consumed %d rows, want %d", consumed.Load(), batches*rows)
	}
	// A quarter of everything produced: generous enough for a transport's
	// own window, far below what an unbounded buffer would reach.
	limit := int64(batches) * size / 4
	t.Logf("peak live bytes %d of a limit of %d (%d produced)", mem.max.Load(), limit, int64(batches)*size)
	if mem.max.Load() > limit {
		t.Fatalf("peak live bytes %d above %d: the slow consumer did not hold the source back", mem.max.Load(), limit)
	}
}

func testCancel(t *testing.T, mk Factory) {
	mem := checked(t)
	var rows atomic.Int64
	g := &dataflow.Graph{Query: "tt-cancel"}
	src := g.AddOperator(source([]int{0, 1}, -1, 8, 3))
	sink := g.AddOperator(spec("sink", 1, 0, []int{2}, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(b dataflow.Batch) error { rows.Add(b.Record.NumRows()); return nil })
	}))
	g.Connect(src, 0, sink, 0)
	ctx, cancel := context.WithCancel(deadline(t))
	ws := build(t, mk, mem, g, 2)
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = dataflow.RunWorkers(ctx, ws)
	}()
	for rows.Load() < 500 {
		if ctx.Err() != nil {
			t.Fatal("no rows arrived before the deadline")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want context.Canceled", err)
	}
}
