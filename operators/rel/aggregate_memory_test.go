package rel

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/eval"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// countByK is SELECT k, count(*) ... GROUP BY k, w.
func countByK(t testing.TB, mem memory.Allocator, w *WindowSpec) *HashAggregate {
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
	if h.openWindows() != 0 {
		t.Errorf("%d windows were opened before the refusal", h.openWindows())
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
	t.Logf("%d open windows: charged %s, heap grew %s", h.openWindows(), dataflow.Bytes(charged), dataflow.Bytes(grew))
	if charged < grew {
		t.Errorf("%d open windows charged %s; the heap grew %s", h.openWindows(), dataflow.Bytes(charged), dataflow.Bytes(grew))
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

// What a group's DISTINCT set, quantile values and string_agg strings
// hold grows with its rows, not its groups: each is charged as it grows,
// so one group of many distinct values is refused past the budget.
func TestPerRowAggregateStateIsCharged(t *testing.T) {
	mem := memory.NewGoAllocator()
	// 50,000 values in batches of 1,000 (a batch may reserve what its
	// rows could add, a little over 1,000 keys' worth).
	var recs []arrow.Record
	for b := range 50 {
		rows := make([][]any, 1000)
		for j := range rows {
			i := b*1000 + j
			rows[j] = []any{int64(0), int64(i), float64(i), fmt.Sprintf("value %d", i), time.UnixMicro(t0).UTC()}
		}
		rec := makeRecord(t, mem, streamSchema, rows)
		defer rec.Release()
		recs = append(recs, rec)
	}
	r := expr.Builtins()
	for _, c := range []struct {
		name     string
		distinct bool
		args     []expr.Expr
	}{
		{"count", true, []expr.Expr{colV}},
		{"count", true, []expr.Expr{colS}},
		{"median", false, []expr.Expr{colF}},
		{"string_agg", false, []expr.Expr{colS}},
	} {
		agg, err := r.NewAggregate(c.name, c.distinct, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		spec := AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Aggs: []*expr.Aggregate{agg}, AggNames: []string{"a"}}
		h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		budget := dataflow.NewMemory("query q", 256<<10, nil)
		if err := h.Charge(budget.Account("aggregate")); err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if err = h.Add(rec); err != nil {
				break
			}
		}
		if !errors.Is(err, dataflow.ErrMemory) {
			t.Errorf("%s of 50,000 values in one group under 256 KiB: %v, want refused for its memory", agg, err)
		}
		h.Release()
		if u := budget.Used(); u != 0 {
			t.Errorf("%s: the budget holds %s after the release", agg, dataflow.Bytes(u))
		}
	}
}

// bigBatch is n rows in one record: k = i mod groups, v = i, f = i mod 100.
func bigBatch(t *testing.T, mem memory.Allocator, n, groups int) arrow.Record {
	t.Helper()
	rows := make([][]any, n)
	ts := time.UnixMicro(t0).UTC()
	for i := range rows {
		rows[i] = []any{int64(i % groups), int64(i), float64(i % 100), "a", ts}
	}
	return makeRecord(t, mem, streamSchema, rows)
}

// eightAggs is TPC-H Q1's shape: eight aggregates by k.
func eightAggs(t *testing.T, mem memory.Allocator) *HashAggregate {
	t.Helper()
	reg := expr.Builtins()
	agg := func(name string, args ...expr.Expr) *expr.Aggregate {
		a, err := reg.NewAggregate(name, false, args...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	dec := &expr.Cast{Expr: colF, To: expr.Decimal(15, 2)}
	spec := AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"},
		Aggs: []*expr.Aggregate{agg("count"), agg("sum", colF), agg("avg", colF), agg("sum", dec),
			agg("avg", dec), agg("min", colV), agg("max", colF), agg("count", colF)},
		AggNames: []string{"n", "sf", "af", "sd", "ad", "minv", "maxf", "nf"}}
	h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A whole batch of rows into a few groups fits a budget far smaller than
// the batch could take as new groups: the aggregation reserves a chunk of
// rows at a time, as many as it holds groups (at least foldChunkRows), so
// what it asks for grows with what it holds. Before, a 122,880-row batch
// of eight aggregates asked for 15 MiB up front to make 4 groups (TPC-H Q1
// failed under 6 MiB). Both the plain fold (Add) and the filtered one in
// place (AddWhere) answer, and each row is counted once.
func TestLargeBatchOfFewGroupsFitsASmallBudget(t *testing.T) {
	const n, groups = 122880, 4
	mem := memory.NewGoAllocator()
	rec := bigBatch(t, mem, n, groups)
	defer rec.Release()
	pred, err := eval.NewPredicate(mustCall(t, "greater", colF, mustLit(t, 0.5)), streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	for _, filtered := range []bool{false, true} {
		budget := dataflow.NewMemory("query q", 1<<20, nil)
		h := eightAggs(t, mem)
		if err := h.Charge(budget.Account("aggregate")); err != nil {
			t.Fatal(err)
		}
		want := int64(n)
		if filtered {
			err, want = h.AddWhere(rec, pred), n-(n+99)/100 // f = 0 on rows 0, 100, 200, ...
		} else {
			err = h.Add(rec)
		}
		if err != nil {
			t.Fatalf("filtered %v: %d rows into %d groups under 1 MiB: %v", filtered, n, groups, err)
		}
		recs, err := h.Advance(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, r := range recs {
			for _, c := range r.Column(1).(*array.Int64).Int64Values() {
				got += c
			}
			r.Release()
		}
		if got != want {
			t.Errorf("filtered %v: counted %d rows, want %d", filtered, got, want)
		}
		t.Logf("filtered %v: peak charged %s", filtered, dataflow.Bytes(budget.Peak()))
		h.Release()
	}
}

// The groups a filtered aggregation makes in place (AddWhere) are charged
// as the plain fold's are: 122,880 new groups of eight aggregates are
// refused under 4 MiB, not held uncharged.
func TestFilteredGroupsAreCharged(t *testing.T) {
	const n = 122880
	mem := memory.NewGoAllocator()
	rec := bigBatch(t, mem, n, n)
	defer rec.Release()
	pred, err := eval.NewPredicate(mustCall(t, "greater", colF, mustLit(t, 0.5)), streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	budget := dataflow.NewMemory("query q", 4<<20, nil)
	h := eightAggs(t, mem)
	defer h.Release()
	if err := h.Charge(budget.Account("aggregate")); err != nil {
		t.Fatal(err)
	}
	if err := h.AddWhere(rec, pred); !errors.Is(err, dataflow.ErrMemory) {
		t.Fatalf("%d groups of eight aggregates under 4 MiB: %v, want refused for its memory (held %s uncharged)",
			n, err, dataflow.Bytes(h.GoStateBytes()))
	}
	if budget.Peak() > budget.Limit() {
		t.Errorf("the budget held %s, over its limit", dataflow.Bytes(budget.Peak()))
	}
}

func mustCall(t *testing.T, name string, args ...expr.Expr) expr.Expr {
	t.Helper()
	e, err := expr.Builtins().NewCall(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustLit(t *testing.T, v any) expr.Expr {
	t.Helper()
	l, err := expr.NewLiteral(v)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A batch opening a window per row pauses between windows (where its step
// meets its query's turn, dataflow.Yield) and drops them in pieces (as
// steps of its query, dataflow.Helper): #25's "a window per millisecond"
// opened 45,000 windows in one step and dropped them at close outside any
// step, 0.1-0.4 s each that no gate reached. A pause's error ends the Add.
func TestOpeningWindowsPauses(t *testing.T) {
	mem := memory.NewGoAllocator()
	budget := dataflow.NewMemory("query q", 0, nil)
	rec := makeRecord(t, mem, streamSchema, rowsMsApart(20000))
	defer rec.Release()
	h := countByK(t, budget.Allocator(mem), &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
	if err := h.Charge(budget.Account("aggregate")); err != nil {
		t.Fatal(err)
	}
	pauses := 0
	h.PauseWith(func() error { pauses++; return nil })
	if err := h.Add(rec); err != nil {
		t.Fatal(err)
	}
	if want := 20000 / windowsPerPause; pauses != want {
		t.Errorf("opening 20000 windows paused %d times, want %d", pauses, want)
	}
	pieces := 0
	h.ReleaseWith(func(f func()) { pieces++; f() })
	// The windows are a few slabs (window_slabs.go): one piece drops them all.
	if pieces != 1 {
		t.Errorf("dropping 20000 windows took %d pieces, want 1", pieces)
	}
	if u := budget.Used(); u != 0 {
		t.Errorf("the budget holds %s after the windows were dropped", dataflow.Bytes(u))
	}

	stop := errors.New("the query ended")
	h = countByK(t, mem, &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
	defer h.Release()
	h.PauseWith(func() error { return stop })
	if err := h.Add(rec); !errors.Is(err, stop) {
		t.Fatalf("a pause that failed: Add returned %v", err)
	}
	if n := h.openWindows(); n != windowsPerPause-1 {
		t.Errorf("%d windows open after the first pause failed, want %d", n, windowsPerPause-1)
	}
}
