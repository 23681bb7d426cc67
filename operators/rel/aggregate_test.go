package rel

import (
	"math"
	"math/rand"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

func aggSpec(t testing.TB, w *WindowSpec) AggregateSpec {
	r := expr.Builtins()
	mk := func(name string, distinct bool, args ...expr.Expr) *expr.Aggregate {
		a, err := r.NewAggregate(name, distinct, args...)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	return AggregateSpec{
		Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Window: w,
		Aggs: []*expr.Aggregate{mk("count", false), mk("count", false, colV), mk("count", true, colS),
			mk("sum", false, colV), mk("avg", false, colF), mk("min", false, colV), mk("max", false, colS), mk("max", false, colF)},
		AggNames: []string{"n", "nv", "ds", "sv", "af", "minv", "maxs", "maxf"},
	}
}

// refAggregate groups rows by (k, window) the slow, obvious way.
func refAggregate(rows [][]any, w *WindowSpec) [][]any {
	type group struct {
		k          any
		start, end int64
		rows       [][]any
	}
	groups := map[string]*group{}
	add := func(k any, s, e int64, r []any) {
		key := rowKey([]any{k, s, e})
		g := groups[key]
		if g == nil {
			g = &group{k: k, start: s, end: e}
			groups[key] = g
		}
		g.rows = append(g.rows, r)
	}
	us := func(r []any) int64 { return r[4].(time.Time).UnixMicro() }
	switch {
	case w == nil:
		for _, r := range rows {
			add(r[0], 0, 0, r)
		}
	case w.Type == expr.Tumble:
		size := int64(w.Size / time.Microsecond)
		for _, r := range rows {
			s := floorDiv(us(r), size) * size
			add(r[0], s, s+size, r)
		}
	case w.Type == expr.Hop:
		size, slide := int64(w.Size/time.Microsecond), int64(w.Slide/time.Microsecond)
		for _, r := range rows {
			ts := us(r)
			for s := floorDiv(ts, slide) * slide; s > ts-size; s -= slide {
				add(r[0], s, s+size, r)
			}
		}
	case w.Type == expr.Session:
		gap := int64(w.Gap / time.Microsecond)
		byKey := map[string][][]any{}
		for _, r := range rows {
			byKey[rowKey(r[:1])] = append(byKey[rowKey(r[:1])], r)
		}
		for _, rs := range byKey {
			sort.SliceStable(rs, func(i, j int) bool { return us(rs[i]) < us(rs[j]) })
			start, last := us(rs[0]), us(rs[0])
			var cur [][]any
			flush := func() {
				for _, r := range cur {
					add(r[0], start, last+gap, r)
				}
			}
			for _, r := range rs {
				if us(r)-last >= gap {
					flush()
					cur, start = nil, us(r)
				}
				cur = append(cur, r)
				last = us(r)
			}
			flush()
		}
	}
	var out [][]any
	for _, g := range groups {
		var n, nv, sv int64
		var sf, nf float64
		distinct := map[string]bool{}
		var minv, maxs, maxf any
		for _, r := range g.rows {
			n++
			if r[1] != nil {
				nv++
				sv += r[1].(int64)
				if minv == nil || r[1].(int64) < minv.(int64) {
					minv = r[1]
				}
			}
			if r[2] != nil {
				sf += r[2].(float64)
				nf++
				if maxf == nil || r[2].(float64) > maxf.(float64) {
					maxf = r[2]
				}
			}
			if r[3] != nil {
				distinct[r[3].(string)] = true
				if maxs == nil || r[3].(string) > maxs.(string) {
					maxs = r[3]
				}
			}
		}
		var svv, af any
		if nv > 0 {
			svv = sv
		}
		if nf > 0 {
			af = sf / nf
		}
		row := []any{g.k}
		if w != nil {
			row = append(row, time.UnixMicro(g.start).UTC(), time.UnixMicro(g.end).UTC())
		}
		out = append(out, append(row, n, nv, int64(len(distinct)), svv, af, minv, maxs, maxf))
	}
	return out
}

func TestWindowedAggregationMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name     string
		w        *WindowSpec
		parallel bool
	}{
		{"none", nil, false},
		{"tumble", &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Second}, false},
		{"tumble-concurrent", &WindowSpec{Type: expr.Tumble, Time: colTS, Size: 700 * time.Millisecond}, true},
		{"hop", &WindowSpec{Type: expr.Hop, Time: colTS, Size: 2 * time.Second, Slide: 500 * time.Millisecond}, false},
		{"hop-uneven", &WindowSpec{Type: expr.Hop, Time: colTS, Size: 1500 * time.Millisecond, Slide: 400 * time.Millisecond}, false},
		{"session", &WindowSpec{Type: expr.Session, Time: colTS, Gap: 60 * time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewSource(int64(len(tc.name))))
			rows, batches, epochs := streamRows(rng, 4000, 97, 80_000)
			var in []dataflow.Batch
			for i, b := range batches {
				in = append(in, dataflow.Batch{Epoch: EpochOf(epochs[i]), Record: makeRecord(t, mem, streamSchema, b)})
			}
			spec := aggSpec(t, tc.w)
			stats := &Stats{}
			capt, err := runGraph(t, mem, in, tc.parallel, func(dataflow.Instance) (dataflow.Operator, error) {
				return NewAggregate(spec, streamSchema, functions.Builtins(), stats), nil
			})
			defer capt.Release()
			if err != nil {
				t.Fatal(err)
			}
			if stats.Late.Load() != 0 {
				t.Fatalf("%d rows late with disorder within the watermark delay", stats.Late.Load())
			}
			got := recordRows(capturedRecords(capt))
			if len(got) < 5 || (tc.w != nil && len(got) < 50) {
				t.Fatalf("only %d result rows: the test data does not exercise windows", len(got))
			}
			sameRows(t, tc.name, got, refAggregate(rows, tc.w))
			// Results stream: windows are emitted in order of their end.
			if tc.w != nil && tc.w.Type != expr.Session {
				var last time.Time
				for _, r := range got {
					end := r[2].(time.Time)
					if end.Before(last) {
						t.Fatalf("window ending %v emitted after %v", end, last)
					}
					last = end
				}
			}
		})
	}
}

// TestLateRowsAreCountedNotMerged drives the kernel directly: a row for a window
// the watermark has closed is dropped and counted.
func TestLateRowsAreCountedNotMerged(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := aggSpec(t, &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Second})
	h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	at := func(ms int64) []any {
		return []any{int64(1), int64(1), 1.0, "x", time.UnixMicro(t0 + ms*1000).UTC()}
	}
	feed := func(rows ...[]any) {
		rec := makeRecord(t, mem, streamSchema, rows)
		defer rec.Release()
		if err := h.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	feed(at(100), at(900), at(1500))
	out, err := h.Advance(t0 + 1_000_000) // closes [0s, 1s)
	if err != nil {
		t.Fatal(err)
	}
	rows := recordRows(out)
	for _, r := range out {
		r.Release()
	}
	if len(rows) != 1 || rows[0][3] != int64(2) {
		t.Fatalf("first window: %v", rows)
	}
	feed(at(950), at(1200)) // 950 ms belongs to the closed window
	if h.Late() != 1 {
		t.Fatalf("late = %d, want 1", h.Late())
	}
	out, _ = h.Advance(math.MaxInt64)
	rows = recordRows(out)
	for _, r := range out {
		r.Release()
	}
	if len(rows) != 1 || rows[0][3] != int64(2) {
		t.Fatalf("second window: %v", rows)
	}
}

func TestAggregateRejectsBadSpecs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := aggSpec(t, &WindowSpec{Type: expr.Tumble, Time: colV, Size: time.Second})
	if _, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins()); err == nil {
		t.Fatal("window over BIGINT accepted")
	}
	spec = aggSpec(t, &WindowSpec{Type: expr.Hop, Time: colTS, Size: time.Second})
	if _, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins()); err == nil {
		t.Fatal("HOP without slide accepted")
	}
	_ = arrow.Null
}

// TestAggregateWithoutGroupByOverNoRows: SELECT count(*), sum(v), ... over
// no rows is one row, count 0 and the others NULL (SQL; DuckDB agrees); with
// GROUP BY, or by window, it is no rows.
func TestAggregateWithoutGroupByOverNoRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := aggSpec(t, nil)
	spec.Group, spec.GroupNames = nil, nil
	h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	recs, err := h.Advance(math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	got := recordRows(recs)
	for _, r := range recs {
		r.Release()
	}
	want := [][]any{{int64(0), int64(0), int64(0), nil, nil, nil, nil, nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, w := range []*WindowSpec{nil, {Type: expr.Tumble, Time: colTS, Size: time.Second}} {
		spec := aggSpec(t, w) // grouped by k
		g, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		recs, err := g.Advance(math.MaxInt64)
		g.Release()
		if err != nil || len(recs) != 0 {
			t.Fatalf("grouped (window %v): %d records, %v", w, len(recs), err)
		}
	}
}

// A closing GROUP BY (WindowSpec.ByKey: grouped by a time attribute) answers
// a group once the watermark passes its key's window, without
// window_start and window_end, and a row that comes for it afterwards is
// late, not a second answer.
func TestClosingGroupByAnswersEachGroupOnce(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := expr.Builtins()
	count, err := r.NewAggregate("count", false)
	if err != nil {
		t.Fatal(err)
	}
	spec := AggregateSpec{Group: []expr.Expr{colK, colTS}, GroupNames: []string{"k", "ts"},
		Window: &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Second, ByKey: true, Key: 1},
		Aggs:   []*expr.Aggregate{count}, AggNames: []string{"n"}}
	h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if got := h.Schema().NumFields(); got != 3 {
		t.Fatalf("output has %d columns, want k, ts, n", got)
	}
	at := func(k, ms int64) []any {
		return []any{k, int64(1), 1.0, "x", time.UnixMicro(t0 + ms*1000).UTC()}
	}
	feed := func(rows ...[]any) {
		rec := makeRecord(t, mem, streamSchema, rows)
		defer rec.Release()
		if err := h.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	advance := func(us int64) [][]any {
		out, err := h.Advance(us)
		if err != nil {
			t.Fatal(err)
		}
		rows := recordRows(out)
		for _, r := range out {
			r.Release()
		}
		return rows
	}
	feed(at(1, 100), at(1, 100), at(2, 100), at(1, 1500))
	if rows := advance(t0 + 999_999); len(rows) != 0 {
		t.Fatalf("before the watermark passes the first second: %v", rows)
	}
	rows := advance(t0 + 1_000_000) // the keys of [0s, 1s) close
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(int64) < rows[j][0].(int64) })
	if len(rows) != 2 || rows[0][0] != int64(1) || rows[0][2] != int64(2) || rows[1][0] != int64(2) || rows[1][2] != int64(1) {
		t.Fatalf("groups of the first second: %v, want (1, 100 ms, 2) and (2, 100 ms, 1)", rows)
	}
	h.JudgeAt(t0 + 1_000_000)
	feed(at(1, 100)) // its group has answered
	if h.Late() != 1 {
		t.Fatalf("late = %d, want 1", h.Late())
	}
	if rows := advance(math.MaxInt64); len(rows) != 1 || rows[0][2] != int64(1) {
		t.Fatalf("at the end: %v, want the 1.5 s group alone", rows)
	}
}
