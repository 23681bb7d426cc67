package rel

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
)

// sortedPrefix is the reference answer: a stable sort of recs, first n rows.
func sortedPrefix(t *testing.T, mem memory.Allocator, recs []arrow.Record, keys []SortKey, n int) [][]any {
	t.Helper()
	var evs []*eval.Evaluator
	for _, k := range keys {
		ev, err := eval.Compile(k.Expr, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	out, err := SortRecords(functions.NewCtx(mem), streamSchema, recs, evs, keys)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil {
		return nil
	}
	defer out.Release()
	rows := recordRows([]arrow.Record{out})
	return rows[:min(n, len(rows))]
}

// TestTopNIsTheStableSortsPrefix: over the whole input and per epoch, with
// NULLs, ties (the row order among equal keys is the arrival order, as the
// stable sort keeps it), limits below and above the row count, and keys of
// several types in both directions.
func TestTopNIsTheStableSortsPrefix(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(9))
	_, batches, _ := streamRows(rng, 5000, 300, 0)
	keySets := [][]SortKey{
		{{Expr: colS}},
		{{Expr: colS}, {Expr: colV, Desc: true}},
		{{Expr: colF, Desc: true}},
		{{Expr: colK}, {Expr: colTS, Desc: true}},
	}
	for ki, keys := range keySets {
		for _, n := range []int{0, 1, 7, 600, 1500, 6000} {
			for _, atEnd := range []bool{true, false} {
				name := fmt.Sprintf("keys%d/n%d/atEnd=%v", ki, n, atEnd)
				var in []dataflow.Batch
				byEpoch := map[dataflow.Epoch][]arrow.Record{}
				var epochs []dataflow.Epoch
				for i, b := range batches {
					e := dataflow.Epoch(i / 4) // several batches per epoch
					rec := makeRecord(t, mem, streamSchema, b)
					in = append(in, dataflow.Batch{Epoch: e, Record: rec})
					if _, ok := byEpoch[e]; !ok {
						epochs = append(epochs, e)
					}
					rec.Retain()
					byEpoch[e] = append(byEpoch[e], rec)
				}
				var want [][]any
				if atEnd {
					var all []arrow.Record
					for _, e := range epochs {
						all = append(all, byEpoch[e]...)
					}
					want = sortedPrefix(t, mem, all, keys, n)
				} else {
					for _, e := range epochs {
						want = append(want, sortedPrefix(t, mem, byEpoch[e], keys, n)...)
					}
				}
				for _, rs := range byEpoch {
					for _, r := range rs {
						r.Release()
					}
				}
				capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) {
					if atEnd {
						return NewTopNAtEnd(int64(n), keys, streamSchema, functions.Builtins())
					}
					return NewTopN(int64(n), keys, streamSchema, functions.Builtins())
				})
				if err != nil {
					capt.Release()
					t.Fatalf("%s: %v", name, err)
				}
				got := recordRows(capturedRecords(capt))
				capt.Release()
				if len(got) != len(want) {
					t.Fatalf("%s: %d rows, want %d", name, len(got), len(want))
				}
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("%s: row %d is %v, want %v", name, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkTopN compares ORDER BY f DESC LIMIT 10 as one TopN with the Sort
// (of every row) it replaces, over 200k rows in 4096-row batches.
func BenchmarkTopN(b *testing.B) {
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(1))
	_, batches, _ := streamRows(rng, 200_000, 4096, 0)
	var recs []arrow.Record
	for _, r := range batches {
		recs = append(recs, makeRecord(b, mem, streamSchema, r))
	}
	keys := []SortKey{{Expr: colF, Desc: true}, {Expr: colK}}
	run := func(b *testing.B, mk func() (dataflow.Operator, error)) {
		for i := 0; i < b.N; i++ {
			var in []dataflow.Batch
			for _, r := range recs {
				r.Retain()
				in = append(in, dataflow.Batch{Epoch: 0, Record: r})
			}
			g := &dataflow.Graph{Query: "b"}
			src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return sliceSource(in), nil }})
			op := g.AddOperator(dataflow.OperatorSpec{Name: "op", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return mk() }})
			capt := newCaptured()
			sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return capture(capt, in.Index), nil }})
			g.Connect(src, 0, op, 0)
			g.Connect(op, 0, sink, 0)
			if err := dataflow.Run(b.Context(), g, dataflow.Config{Allocator: mem}); err != nil {
				b.Fatal(err)
			}
			capt.Release()
		}
	}
	b.Run("sort-all", func(b *testing.B) {
		run(b, func() (dataflow.Operator, error) { return NewSort(keys, streamSchema, functions.Builtins()) })
	})
	b.Run("top-n", func(b *testing.B) {
		run(b, func() (dataflow.Operator, error) { return NewTopNAtEnd(10, keys, streamSchema, functions.Builtins()) })
	})
}
