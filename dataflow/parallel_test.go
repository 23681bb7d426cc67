package dataflow_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// runModes runs the same test once stepped and once concurrent.
func runModes(t *testing.T, f func(t *testing.T, run func(g *dataflow.Graph, cfg dataflow.Config) error)) {
	t.Run("stepped", func(t *testing.T) {
		f(t, func(g *dataflow.Graph, cfg dataflow.Config) error {
			ws, err := dataflow.BuildLocal(g, cfg)
			if err != nil {
				return err
			}
			return dataflow.StepUntilDone(ws, 100000)
		})
	})
	t.Run("concurrent", func(t *testing.T) {
		f(t, func(g *dataflow.Graph, cfg dataflow.Config) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return dataflow.Run(ctx, g, cfg)
		})
	})
}

// Data-parallel mode: 2 source instances (workers 0, 1) exchange by key into
// 3 sink instances (workers 0, 1, 2). Every row arrives exactly once, at the
// instance its key hashes to, and every epoch completes at every sink after
// all its rows.
func TestExchangeDeliversEveryRowOnceToItsPartition(t *testing.T) {
	runModes(t, func(t *testing.T, run func(*dataflow.Graph, dataflow.Config) error) {
		mem := checkedAlloc(t)
		var got builtin.Captured
		defer got.Release()
		const perBatch, batches = 50, 6
		g := &dataflow.Graph{Query: "x"}
		src := g.AddOperator(sliceSource("src", []int{0, 1}, func(inst int) []dataflow.Batch {
			var bs []dataflow.Batch
			for b := 0; b < batches; b++ {
				from := (inst*batches + b) * perBatch
				bs = append(bs, dataflow.Batch{Epoch: dataflow.Epoch(b / 2), Record: kvRecord(mem, from, perBatch)})
			}
			return bs
		}))
		sink := g.AddOperator(capture("sink", 1, []int{0, 1, 2}, &got))
		part := dataflow.HashColumns(0)
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: sink}, Kind: dataflow.Exchange, Partition: part})
		if err := run(g, dataflow.Config{Allocator: mem, QueueLen: 2}); err != nil {
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
					t.Fatalf("key %d at instance %d, hashes to %d", k, b.Instance, dst[i])
				}
				if want := dataflow.Epoch((k % (batches * perBatch)) / perBatch / 2); b.Epoch != want {
					t.Fatalf("key %d at epoch %v, want %v", k, b.Epoch, want)
				}
			}
		}
		if len(seen) != 2*batches*perBatch {
			t.Fatalf("%d distinct keys, want %d", len(seen), 2*batches*perBatch)
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("key %d seen %d times", k, n)
			}
		}
		checkCompletions(t, &got)
		perInst := map[int][]dataflow.Epoch{}
		for _, c := range got.Completed() {
			perInst[c.Instance] = append(perInst[c.Instance], c.Epoch)
		}
		for i := 0; i < 3; i++ {
			if !slices.Equal(perInst[i], []dataflow.Epoch{0, 1, 2}) {
				t.Fatalf("instance %d completed %v, want epochs 0, 1, 2", i, perInst[i])
			}
		}
	})
}

// Operator-level parallelism: each operator on its own worker (source on
// worker 0, a map on 1, the sink on 2), with balance, broadcast and merge
// edges between instance counts that differ.
func TestOperatorLevelParallelismAcrossWorkers(t *testing.T) {
	runModes(t, func(t *testing.T, run func(*dataflow.Graph, dataflow.Config) error) {
		mem := checkedAlloc(t)
		var got, bcast builtin.Captured
		defer got.Release()
		defer bcast.Release()
		g := &dataflow.Graph{Query: "p"}
		src := g.AddOperator(sliceSource("src", []int{0}, func(int) []dataflow.Batch {
			var bs []dataflow.Batch
			for b := 0; b < 12; b++ {
				bs = append(bs, dataflow.Batch{Epoch: dataflow.Epoch(b / 4), Record: kvRecord(mem, b*10, 10)})
			}
			return bs
		}))
		// Two map instances on workers 1 and 2 with traffic shares 3:1.
		tag := g.AddOperator(op("tag", 1, 1, []int{1, 2}, func(inst dataflow.Instance) dataflow.Operator {
			return builtin.NewMap(func(ctx *dataflow.Context, _ dataflow.Epoch, in arrow.Record) (arrow.Record, error) {
				if ctx.Instance().Worker != inst.Worker {
					t.Errorf("instance on worker %d runs on %d", inst.Worker, ctx.Instance().Worker)
				}
				return in, nil
			})
		}))
		sink := g.AddOperator(capture("sink", 1, []int{3}, &got))
		all := g.AddOperator(capture("all", 1, []int{1, 2}, &bcast))
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: tag}, Kind: dataflow.Balance, Shares: []float64{3, 1}})
		g.Connect(tag, 0, sink, 0) // merge: 2 -> 1
		g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: all}, Kind: dataflow.Broadcast})
		if err := run(g, dataflow.Config{Allocator: mem}); err != nil {
			t.Fatal(err)
		}
		var ks []int64
		for _, b := range got.Batches() {
			ks = append(ks, keys(b.Record)...)
		}
		slices.Sort(ks)
		if len(ks) != 120 || ks[0] != 0 || ks[119] != 119 || len(slices.Compact(ks)) != 120 {
			t.Fatalf("sink got %d rows", len(ks))
		}
		checkCompletions(t, &got)
		if n := len(got.Completed()); n != 3 {
			t.Fatalf("sink completed %d epochs, want 3", n)
		}
		rows := map[int]int64{}
		for _, b := range bcast.Batches() {
			rows[b.Instance] += b.Record.NumRows()
		}
		if rows[0] != 120 || rows[1] != 120 {
			t.Fatalf("broadcast rows per instance %v, want 120 each", rows)
		}
	})
}

// Balance follows the traffic shares, in rows.
func TestBalanceFollowsShares(t *testing.T) {
	mem := checkedAlloc(t)
	counts := make([]int64, 2)
	g := &dataflow.Graph{Query: "b"}
	src := g.AddOperator(sliceSource("src", nil, func(int) []dataflow.Batch {
		var bs []dataflow.Batch
		for b := 0; b < 40; b++ {
			bs = append(bs, dataflow.Batch{Record: kvRecord(mem, b, 5)})
		}
		return bs
	}))
	sink := g.AddOperator(op("sink", 1, 0, []int{0, 0}, func(inst dataflow.Instance) dataflow.Operator {
		return builtin.NewSink(func(b dataflow.Batch) error { counts[inst.Index] += b.Record.NumRows(); return nil })
	}))
	g.AddEdge(dataflow.Edge{From: dataflow.Port{Op: src}, To: dataflow.Port{Op: sink}, Kind: dataflow.Balance, Shares: []float64{3, 1}})
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem, Timing: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataflow.StepUntilDone(ws, 1000); err != nil {
		t.Fatal(err)
	}
	if counts[0] != 150 || counts[1] != 50 {
		t.Fatalf("rows per instance %v, want [150 50]", counts)
	}
	st := ws[0].Stats()
	if len(st) != 3 || st[0].Operator != "src" || st[0].RowsOut != 200 || st[0].BatchesOut != 40 ||
		st[1].RowsIn != 150 || st[2].RowsIn != 50 || !st[2].Finished {
		t.Fatalf("stats %+v", st)
	}
	// Every input batch is timed: the sink instances' latency histograms
	// count their batches, and their busy time is the histogram's sum at
	// least (frontier and notification callbacks add to it).
	for _, s := range st[1:] {
		if s.BatchLatency.Count != uint64(s.BatchesIn) || s.BatchesIn == 0 {
			t.Errorf("%s/%d: %d batches timed, %d received", s.Operator, s.Index, s.BatchLatency.Count, s.BatchesIn)
		}
		if s.BusyNs < int64(s.BatchLatency.SumNs) || s.BatchLatency.Quantile(0.5) <= 0 {
			t.Errorf("%s/%d: busy %v, batch time %v, p50 %v", s.Operator, s.Index, s.Busy(), s.BatchLatency.SumNs, s.BatchLatency.Quantile(0.5))
		}
	}
	for _, s := range st {
		if s.First == 0 || s.Last < s.First {
			t.Errorf("%s/%d: data seen from %d to %d", s.Operator, s.Index, s.First, s.Last)
		}
	}
	if st[0].BatchLatency.Count != 0 {
		t.Errorf("a source has no input batches, got %d timed", st[0].BatchLatency.Count)
	}
}
