package dataflow_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// peakAllocator tracks the high-water mark of live bytes.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func (p *peakAllocator) add(n int) {
	c := p.cur.Add(int64(n))
	for {
		old := p.peak.Load()
		if c <= old || p.peak.CompareAndSwap(old, c) {
			return
		}
	}
}

func (p *peakAllocator) Allocate(n int) []byte {
	p.add(n)
	return p.Allocator.Allocate(n)
}

func (p *peakAllocator) Reallocate(n int, b []byte) []byte {
	p.add(n - len(b))
	return p.Allocator.Reallocate(n, b)
}

func (p *peakAllocator) Free(b []byte) {
	p.add(-len(b))
	p.Allocator.Free(b)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, total time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(total)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkNoGoroutineLeak records the goroutine count and, at cleanup, polls
// until it is back there.
func checkNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		eventually(t, 5*time.Second, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
	})
}

func generator(name string, workers []int, n int, rows int) dataflow.OperatorSpec {
	return op(name, 0, 1, workers, func(i dataflow.Instance) dataflow.Operator {
		return builtin.NewGenerator(n, func(b int, mem memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
			// Keys are disjoint across instances.
			return dataflow.Epoch(b / 10), kvRecord(mem, i.Index<<40+b*rows, rows), nil
		})
	})
}

// A fast source feeding a slow sink through two operators on two workers:
// the source is held back by full queues, so the peak of live bytes stays
// a small multiple of the queue capacity however many batches flow.
func TestBackpressureBoundsMemory(t *testing.T) {
	checkNoGoroutineLeak(t)
	checked := checkedAlloc(t)
	mem := &peakAllocator{Allocator: checked}
	const batches, rows, queueLen = 400, 256, 4
	var consumed atomic.Int64
	g := &dataflow.Graph{Query: "bp"}
	src := g.AddOperator(generator("src", []int{0}, batches, rows))
	mid := g.AddOperator(passthrough("mid", []int{1}))
	sink := g.AddOperator(op("sink", 1, 0, []int{1}, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(b dataflow.Batch) error {
			// Simulated slow consumer; not synchronisation.
			time.Sleep(50 * time.Microsecond)
			consumed.Add(b.Record.NumRows())
			return nil
		})
	}))
	g.Connect(src, 0, mid, 0)
	g.Connect(mid, 0, sink, 0)

	one := kvRecord(checked, 0, rows)
	batchBytes := int64(0)
	for _, c := range one.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				batchBytes += int64(b.Len())
			}
		}
	}
	one.Release()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem, QueueLen: queueLen}); err != nil {
		t.Fatal(err)
	}
	if got := consumed.Load(); got != batches*rows {
		t.Fatalf("sink consumed %d rows, want %d", got, batches*rows)
	}
	// Live batches at most: 2 queues x (queued + being handled) x queueLen,
	// plus one being built by the source and one in each operator.
	bound := (2*2*queueLen + 4) * batchBytes * 2 // x2: builder buffers round up
	total := int64(batches) * batchBytes
	t.Logf("peak %d bytes, bound %d, total produced %d", mem.peak.Load(), bound, total)
	if peak := mem.peak.Load(); peak > bound || peak*10 > total {
		t.Fatalf("peak live bytes %d exceeds bound %d (total %d)", peak, bound, total)
	}
}

// Cancelling a run with an endless source: every goroutine exits, every
// record is released, every operator is closed, Run reports the cancel.
func TestCancellationStopsAndReleasesEverything(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := checkedAlloc(t)
	var got builtin.Captured
	defer got.Release()
	var closes atomic.Int32
	g := &dataflow.Graph{Query: "c"}
	src := g.AddOperator(generator("src", []int{0, 1}, -1, 16))
	mid := g.AddOperator(op("mid", 1, 1, []int{2, 2}, func(dataflow.Instance) dataflow.Operator {
		return &closeCounter{Map: builtin.NewMap(nil), n: &closes}
	}))
	sink := g.AddOperator(capture("sink", 1, []int{1}, &got))
	g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: mid}, Kind: dataflow.Exchange, Partition: dataflow.HashColumns(0)})
	g.Connect(mid, 0, sink, 0)

	ctx, cancel := context.WithCancel(context.Background())
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = dataflow.Run(ctx, g, dataflow.Config{Allocator: mem, QueueLen: 2})
	}()
	eventually(t, 5*time.Second, "rows at the sink", func() bool { return got.Rows() > 1000 })
	cancel()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if n := closes.Load(); n != 2 {
		t.Fatalf("%d of 2 mid instances closed", n)
	}
}

type closeCounter struct {
	*builtin.Map
	n *atomic.Int32
}

func (c *closeCounter) Close(*dataflow.Context) error {
	c.n.Add(1)
	return nil
}

// An operator failing mid-run stops the whole dataflow with its error, and
// still nothing leaks.
type failAfter struct {
	dataflow.Base
	n int
}

var errBoom = errors.New("boom")

func (f *failAfter) OnBatch(_ *dataflow.Context, _ int, b dataflow.Batch, _ *dataflow.Capability) error {
	b.Record.Release()
	f.n--
	if f.n == 0 {
		return errBoom
	}
	return nil
}

func TestOperatorFailureStopsTheRun(t *testing.T) {
	runModes(t, func(t *testing.T, run func(*dataflow.Graph, dataflow.Config) error) {
		checkNoGoroutineLeak(t)
		mem := checkedAlloc(t)
		g := &dataflow.Graph{Query: "f"}
		src := g.AddOperator(generator("src", []int{0}, -1, 8))
		bad := g.AddOperator(op("bad", 1, 0, []int{1}, func(dataflow.Instance) dataflow.Operator { return &failAfter{n: 5} }))
		g.Connect(src, 0, bad, 0)
		err := run(g, dataflow.Config{Allocator: mem, QueueLen: 2})
		if !errors.Is(err, errBoom) || !errors.Is(err, dataflow.ErrOperator) {
			t.Fatalf("got %v, want ErrOperator wrapping boom", err)
		}
	})
}
