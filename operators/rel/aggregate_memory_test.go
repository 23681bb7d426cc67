package rel

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// countByK is SELECT k, count(*) ... GROUP BY k, w.
func countByK(t *testing.T, mem memory.Allocator, w *WindowSpec) *HashAggregate {
	t.Helper()
	n, err := expr.Builtins().NewAggregate("count", false)
	if err != nil {
		t.Fatal(err)
	}
	spec := AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Window: w, Aggs: []*expr.Aggregate{n}, AggNames: []string{"n"}}
	h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rowsMsApart is n rows, k = i, one millisecond apart.
func rowsMsApart(n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), int64(i), 1.0, "a", time.UnixMicro(t0 + int64(i)*1000).UTC()}
	}
	return rows
}

// A HOP an hour long every millisecond puts each row in 3.6 million
// windows: the batch is refused for its memory before one is opened, not
// after opening them one by one (each pass over the whole batch) until
// the budget or the run time ends it.
func TestHopWindowsAreChargedBeforeTheyOpen(t *testing.T) {
	mem := memory.NewGoAllocator()
	budget := dataflow.NewMemory("query q", 1<<20, nil)
	h := countByK(t, mem, &WindowSpec{Type: expr.Hop, Time: colTS, Size: time.Hour, Slide: time.Millisecond})
	defer h.Release()
	if err := h.Charge(budget.Account("aggregate")); err != nil {
		t.Fatal(err)
	}
	rec := makeRecord(t, mem, streamSchema, rowsMsApart(100))
	defer rec.Release()
	err := h.Add(rec)
	if !errors.Is(err, dataflow.ErrMemory) {
		t.Fatalf("a one-hour HOP every millisecond under 1 MiB: %v, want refused for its memory", err)
	}
	if len(h.windows) != 0 {
		t.Errorf("%d windows were opened before the refusal", len(h.windows))
	}
	if budget.Peak() > budget.Limit() {
		t.Errorf("the budget held %s, over its limit", dataflow.Bytes(budget.Peak()))
	}
	// A HOP whose windows fit is not refused.
	ok := countByK(t, mem, &WindowSpec{Type: expr.Hop, Time: colTS, Size: time.Second, Slide: 100 * time.Millisecond})
	defer ok.Release()
	if err := ok.Charge(budget.Account("aggregate 2")); err != nil {
		t.Fatal(err)
	}
	if err := ok.Add(rec); err != nil {
		t.Fatalf("a HOP of 10 windows a row: %v", err)
	}
}

// What an aggregation charges for its open windows covers what they take
// on the heap: a window per millisecond of one-key groups (each window's
// key table, builders and accumulators made for one row) is charged at
// least what the heap grew by, so a budget refuses before the worker's
// memory is gone, not after.
func TestOpenWindowsChargeWhatTheyHold(t *testing.T) {
	mem := memory.NewGoAllocator()
	budget := dataflow.NewMemory("query q", 0, nil)
	rec := makeRecord(t, mem, streamSchema, rowsMsApart(20000))
	defer rec.Release()
	before := liveHeap()
	h := countByK(t, budget.Allocator(mem), &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
	if err := h.Charge(budget.Account("aggregate")); err != nil {
		t.Fatal(err)
	}
	if err := h.Add(rec); err != nil {
		t.Fatal(err)
	}
	grew := liveHeap() - before
	charged := budget.Used()
	runtime.KeepAlive(h)
	t.Logf("%d open windows: charged %s, heap grew %s", len(h.windows), dataflow.Bytes(charged), dataflow.Bytes(grew))
	if charged < grew {
		t.Errorf("%d open windows charged %s; the heap grew %s", len(h.windows), dataflow.Bytes(charged), dataflow.Bytes(grew))
	}
	h.Release()
	if u := budget.Used(); u != 0 {
		t.Errorf("the budget holds %s after the windows were dropped", dataflow.Bytes(u))
	}
}

// liveHeap is the live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
