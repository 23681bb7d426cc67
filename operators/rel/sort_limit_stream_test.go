package rel

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
)

// Over a stream of many epochs, NewSortAtEnd then a limit give the top rows
// of the whole stream, emitted once it ends (sorting per epoch gave the
// first epoch's top rows).
func TestSortAtEndThenLimitIsTheWholeStreamsTop(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(11))
	rows, batches, epochs := streamRows(rng, 400, 20, 0)
	var in []dataflow.Batch
	for i, b := range batches {
		in = append(in, dataflow.Batch{Epoch: dataflow.Epoch(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
	}
	if epochs[0] == epochs[len(epochs)-1] {
		t.Fatal("the input has one epoch")
	}
	keys := []SortKey{{Expr: colV}} // NULLs last ascending
	g := &dataflow.Graph{Query: "t"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return sliceSource(in), nil }})
	so := g.AddOperator(dataflow.OperatorSpec{Name: "sort", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) {
		return NewSortAtEnd(keys, streamSchema, functions.Builtins())
	}})
	li := g.AddOperator(dataflow.OperatorSpec{Name: "limit", Inputs: 1, Outputs: 1, New: func(dataflow.Instance) (dataflow.Operator, error) { return NewFinalLimit(5), nil }})
	capt := newCaptured()
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, New: func(in dataflow.Instance) (dataflow.Operator, error) { return capture(capt, in.Index), nil }})
	g.Connect(src, 0, so, 0)
	g.Connect(so, 0, li, 0)
	g.Connect(li, 0, sink, 0)
	ws, err := dataflow.BuildLocal(g, dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	err = dataflow.StepUntilDone(ws, 1_000_000)
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	got := recordRows(capturedRecords(capt))
	var vs []int64
	for _, r := range rows {
		if r[1] != nil {
			vs = append(vs, r[1].(int64))
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	if len(got) != 5 {
		t.Fatalf("%d rows, want 5", len(got))
	}
	for i, r := range got {
		if r[1] == nil || r[1].(int64) != vs[i] {
			t.Fatalf("row %d: v=%v, want the stream's smallest: %v", i, r[1], vs[:5])
		}
	}
	// The first epoch alone has other smallest values, so a sort per epoch
	// would fail this test.
	var first []int64
	for i, b := range batches {
		for _, r := range b {
			if epochs[i] == epochs[0] && r[1] != nil {
				first = append(first, r[1].(int64))
			}
		}
	}
	sort.Slice(first, func(i, j int) bool { return first[i] < first[j] })
	if len(first) >= 5 && first[4] == vs[4] && first[0] == vs[0] {
		t.Fatal("the first epoch holds the stream's smallest values: the seed does not test the order across epochs")
	}
}

// NewLimitPerWindow passes the first n rows of each epoch (each window, over
// a windowed aggregation), and never stops the sources.
func TestLimitPerWindowKeepsEachEpochsFirstRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	row := func(v int64) []any { return []any{int64(1), v, 0.0, "a", nil} }
	in := []dataflow.Batch{
		{Epoch: 10, Record: makeRecord(t, mem, streamSchema, [][]any{row(1), row(2)})},
		{Epoch: 10, Record: makeRecord(t, mem, streamSchema, [][]any{row(3)})},
		{Epoch: 20, Record: makeRecord(t, mem, streamSchema, [][]any{row(4), row(5), row(6)})},
		{Epoch: 30, Record: makeRecord(t, mem, streamSchema, [][]any{row(7)})},
	}
	capt, err := runGraph(t, mem, in, false, func(dataflow.Instance) (dataflow.Operator, error) { return NewLimitPerWindow(2), nil })
	defer capt.Release()
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range recordRows(capturedRecords(capt)) {
		got = append(got, r[1].(int64))
	}
	want := []int64{1, 2, 4, 5, 7}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
