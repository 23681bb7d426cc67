package dataflow_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

const benchRows = 1024

// reuseSource emits the same record n times (retained each time), so the
// benchmark measures the engine, not record construction.
func reuseSource(rec arrow.Record, n int, workers []int) dataflow.OperatorSpec {
	return reuseSourceEpochs(rec, n, 64, workers)
}

// reuseSourceEpochs advances the epoch every perEpoch batches.
func reuseSourceEpochs(rec arrow.Record, n, perEpoch int, workers []int) dataflow.OperatorSpec {
	return op("src", 0, 1, workers, func(dataflow.Instance) dataflow.Operator {
		return builtin.NewGenerator(n, func(i int, _ memory.Allocator) (dataflow.Epoch, arrow.Record, error) {
			rec.Retain()
			return dataflow.Epoch(i / perEpoch), rec, nil
		})
	})
}

// chanPipeline is the baseline: the same stages as plain goroutines
// connected by buffered Go channels.
func chanPipeline(rec arrow.Record, n, stages, queue int) {
	in := make(chan arrow.Record, queue)
	src := in
	var wg sync.WaitGroup
	for s := 0; s < stages; s++ {
		out := make(chan arrow.Record, queue)
		wg.Add(1)
		go func(in <-chan arrow.Record, out chan<- arrow.Record) {
			defer wg.Done()
			for r := range in {
				out <- r
			}
			close(out)
		}(in, out)
		in = out
	}
	wg.Add(1)
	go func(in <-chan arrow.Record) {
		defer wg.Done()
		for r := range in {
			r.Release()
		}
	}(in)
	for i := 0; i < n; i++ {
		rec.Retain()
		src <- r(rec)
	}
	close(src)
	wg.Wait()
}

func r(rec arrow.Record) arrow.Record { return rec }

func pipelineGraph(rec arrow.Record, n, stages, perEpoch int) *dataflow.Graph {
	g := &dataflow.Graph{Query: "bench"}
	prev := g.AddOperator(reuseSourceEpochs(rec, n, perEpoch, nil))
	for s := 0; s < stages; s++ {
		m := g.AddOperator(passthrough(fmt.Sprint("noop", s), nil))
		g.Connect(prev, 0, m, 0)
		prev = m
	}
	sink := g.AddOperator(op("sink", 1, 0, nil, func(dataflow.Instance) dataflow.Operator { return builtin.NewSink(nil) }))
	g.Connect(prev, 0, sink, 0)
	return g
}

// BenchmarkPipeline: batches/s through N no-op operators, concurrent and
// stepped, with x_vs_chan = engine time / plain channel pipeline time for
// the same batches in the same run (the engine's overhead).
func BenchmarkPipeline(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := kvRecord(mem, 0, benchRows)
	defer rec.Release()
	const queue = 16
	for _, stages := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("ops=%d/concurrent", stages), func(b *testing.B) {
			benchConcurrent(b, func(n int) *dataflow.Graph { return pipelineGraph(rec, n, stages, 64) }, rec, stages, queue)
		})
		b.Run(fmt.Sprintf("ops=%d/concurrent/epoch-per-batch", stages), func(b *testing.B) {
			benchConcurrent(b, func(n int) *dataflow.Graph { return pipelineGraph(rec, n, stages, 1) }, rec, stages, queue)
		})
		b.Run(fmt.Sprintf("ops=%d/stepped", stages), func(b *testing.B) {
			g := pipelineGraph(rec, b.N, stages, 64)
			ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, QueueLen: queue})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			if err := dataflow.StepUntilDone(ws, 1<<40); err != nil {
				b.Fatal(err)
			}
			engine := time.Since(start)
			b.StopTimer()
			start = time.Now()
			chanPipeline(rec, b.N, stages, queue)
			base := time.Since(start)
			b.ReportMetric(float64(b.N)/engine.Seconds(), "batches/s")
			b.ReportMetric(engine.Seconds()/base.Seconds(), "x_vs_chan")
		})
	}
}

// benchConcurrent times the engine and the channel baseline in alternating
// rounds over the same batches, so that load from other processes hits both
// alike and the ratio stays meaningful on a shared machine.
func benchConcurrent(b *testing.B, mk func(n int) *dataflow.Graph, rec arrow.Record, stages, queue int) {
	const rounds = 5
	var engine, base time.Duration
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		n := b.N / rounds
		if r == rounds-1 {
			n = b.N - (rounds-1)*(b.N/rounds)
		}
		if n == 0 {
			continue
		}
		g := mk(n)
		start := time.Now()
		if err := dataflow.Run(context.Background(), g, dataflow.Config{Allocator: memory.NewGoAllocator(), QueueLen: queue}); err != nil {
			b.Fatal(err)
		}
		engine += time.Since(start)
		start = time.Now()
		chanPipeline(rec, n, stages, queue)
		base += time.Since(start)
	}
	b.ReportMetric(float64(b.N)/engine.Seconds(), "batches/s")
	b.ReportMetric(float64(b.N)*benchRows/engine.Seconds(), "rows/s")
	b.ReportMetric(engine.Seconds()/base.Seconds(), "x_vs_chan")
}

// BenchmarkExchange: rows/s hash-partitioned by an int64 key from 2 source
// instances to 4 receiver instances on 3 workers, with x_vs_split = engine
// time / the bare hash+split (no engine) of the same batches.
func BenchmarkExchange(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := kvRecord(mem, 0, benchRows)
	defer rec.Release()
	part := dataflow.HashColumns(0)
	b.Run("engine", func(b *testing.B) {
		per := (b.N + 1) / 2
		g := &dataflow.Graph{Query: "xbench"}
		src := g.AddOperator(reuseSource(rec, per, []int{0, 1}))
		sink := g.AddOperator(op("sink", 1, 0, []int{0, 1, 2, 2}, func(dataflow.Instance) dataflow.Operator { return builtin.NewSink(nil) }))
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: sink}, Kind: dataflow.Exchange, Partition: part})
		b.ResetTimer()
		start := time.Now()
		if err := dataflow.Run(context.Background(), g, dataflow.Config{Allocator: mem}); err != nil {
			b.Fatal(err)
		}
		engine := time.Since(start)
		b.StopTimer()
		start = time.Now()
		dst := make([]uint32, benchRows)
		for i := 0; i < 2*per; i++ {
			if err := part(rec, 4, dst); err != nil {
				b.Fatal(err)
			}
			parts, err := dataflow.Split(mem, rec, dst, 4)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range parts {
				if p != nil {
					p.Release()
				}
			}
		}
		base := time.Since(start)
		b.ReportMetric(float64(2*per)*benchRows/engine.Seconds(), "rows/s")
		b.ReportMetric(engine.Seconds()/base.Seconds(), "x_vs_split")
	})
}

// BenchmarkHashSplit: the vectorised partitioning alone (hash an int64 key,
// gather 4 partitions of an int64 and a string column).
func BenchmarkHashSplit(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := kvRecord(mem, 0, benchRows)
	defer rec.Release()
	part := dataflow.HashColumns(0)
	dst := make([]uint32, benchRows)
	b.Run("hash", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = part(rec, 4, dst)
		}
		b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("split", func(b *testing.B) {
		_ = part(rec, 4, dst)
		for i := 0; i < b.N; i++ {
			parts, err := dataflow.Split(mem, rec, dst, 4)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range parts {
				p.Release()
			}
		}
		b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
	})
}
