package rel

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/planner/expr"
)

// windowRef is a HOP (or TUMBLE: slide = size) aggregation worked out row
// by row: per window, its groups in the order the aggregation meets them
// (a batch's rows for each offset j of the HOP in turn), each group's
// count, sum and distinct values.
type windowRef struct {
	size, slide int64
	wins        map[int64]*refWindow
}

type refWindow struct {
	order []string
	rows  map[string]*refGroup
}

type refGroup struct {
	k     any
	s     any
	n     int64
	sum   int64
	sumOK bool
	dist  map[int64]bool
}

func (r *windowRef) add(batch [][]any) {
	for j := int64(0); j*r.slide < r.size; j++ {
		for _, row := range batch {
			ts := row[4].(time.Time).UnixMicro()
			start := floorDiv(ts, r.slide)*r.slide - j*r.slide
			if start+r.size <= ts {
				continue
			}
			w := r.wins[start]
			if w == nil {
				w = &refWindow{rows: map[string]*refGroup{}}
				r.wins[start] = w
			}
			key := fmt.Sprint(row[0], "|", row[3])
			g := w.rows[key]
			if g == nil {
				g = &refGroup{k: row[0], s: row[3], dist: map[int64]bool{}}
				w.rows[key] = g
				w.order = append(w.order, key)
			}
			g.n++
			if v, ok := row[1].(int64); ok {
				g.sum += v
				g.sumOK = true
				g.dist[v] = true
			}
		}
	}
}

// close is the rows of the windows ending at or before wm, in the
// aggregation's order, formatted as slabRows formats them.
func (r *windowRef) close(wm int64) []string {
	var starts []int64
	for s := range r.wins {
		if s+r.size <= wm {
			starts = append(starts, s)
		}
	}
	slices.Sort(starts)
	var out []string
	for _, s := range starts {
		w := r.wins[s]
		delete(r.wins, s)
		for _, key := range w.order {
			g := w.rows[key]
			var sum any
			if g.sumOK {
				sum = g.sum
			}
			out = append(out, fmt.Sprint(g.k, "|", g.s, "|", s, "|", s+r.size, "|", g.n, "|", sum, "|", int64(len(g.dist))))
		}
	}
	return out
}

func slabRows(recs []arrow.Record) []string {
	var out []string
	for _, rec := range recs {
		starts, ends := functions.Int64Values(rec.Column(2)), functions.Int64Values(rec.Column(3))
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, fmt.Sprint(functions.ValueAt(rec.Column(0), i), "|", functions.ValueAt(rec.Column(1), i), "|",
				starts[i], "|", ends[i], "|", functions.ValueAt(rec.Column(4), i), "|", functions.ValueAt(rec.Column(5), i), "|",
				functions.ValueAt(rec.Column(6), i)))
		}
		rec.Release()
	}
	return out
}

// The windows' shared slabs give every window the rows, and the order of
// groups, that a window of its own would: GROUP BY an integer with NULLs
// and a string (short and long), HOP and TUMBLE, count, sum and a DISTINCT
// count, closed batch by batch as a watermark moves, so that the slabs
// are compacted many times (closed groups outnumber the open ones) with
// the DISTINCT sets moved to new ids.
func TestWindowSlabsMatchWindowByWindow(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size, slide time.Duration
	}{
		{"hop", 10 * time.Millisecond, 5 * time.Millisecond},
		{"tumble", time.Millisecond, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			budget := dataflow.NewMemory("query q", 0, nil)
			r := expr.Builtins()
			count, _ := r.NewAggregate("count", false)
			sum, err := r.NewAggregate("sum", false, colV)
			if err != nil {
				t.Fatal(err)
			}
			dist, err := r.NewAggregate("count", true, colV)
			if err != nil {
				t.Fatal(err)
			}
			w := &WindowSpec{Type: expr.Hop, Time: colTS, Size: tc.size, Slide: tc.slide}
			if tc.size == tc.slide {
				w = &WindowSpec{Type: expr.Tumble, Time: colTS, Size: tc.size}
			}
			spec := AggregateSpec{Group: []expr.Expr{colK, colS}, GroupNames: []string{"k", "s"}, Window: w,
				Aggs: []*expr.Aggregate{count, sum, dist}, AggNames: []string{"n", "sum", "d"}}
			h, err := NewHashAggregate(budget.Allocator(mem), spec, streamSchema, functions.Builtins())
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Charge(budget.Account("aggregate")); err != nil {
				t.Fatal(err)
			}
			ref := &windowRef{size: int64(tc.size / time.Microsecond), slide: int64(tc.slide / time.Microsecond), wins: map[int64]*refWindow{}}
			rng := rand.New(rand.NewSource(1))
			const rows, batch, apart, jitter = 40000, 1000, 100, 2000 // µs
			compactions := 0
			for b := 0; b < rows/batch; b++ {
				var rs [][]any
				for i := b * batch; i < (b+1)*batch; i++ {
					var k, v, s any = int64(rng.Intn(40)), int64(rng.Intn(5)), fmt.Sprint("s", rng.Intn(3))
					if rng.Intn(10) == 0 {
						k = nil
					}
					if rng.Intn(10) == 0 {
						v = nil
					}
					if rng.Intn(4) == 0 {
						s = fmt.Sprint("a longer key ", rng.Intn(3))
					}
					ts := t0 + int64(i)*apart + int64(rng.Intn(jitter))
					rs = append(rs, []any{k, v, 1.0, s, time.UnixMicro(ts).UTC()})
				}
				ref.add(rs)
				rec := makeRecord(t, mem, streamSchema, rs)
				err := h.Add(rec)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				// No later row is behind this watermark: none is late.
				wm := t0 + int64((b+1)*batch)*apart - 1
				if b == rows/batch-1 {
					wm = math.MaxInt64
				}
				dead := h.slabs.dead
				recs, err := h.Advance(wm)
				if err != nil {
					t.Fatal(err)
				}
				if h.slabs.dead < dead+int(sumRows(recs)) {
					compactions++
				}
				got, want := slabRows(recs), ref.close(wm)
				if !slices.Equal(got, want) {
					t.Fatalf("batch %d: %d rows, want %d:\n%v\nwant\n%v", b, len(got), len(want), head(got), head(want))
				}
			}
			if compactions < 5 {
				t.Errorf("the slabs were compacted %d times, want many", compactions)
			}
			if n := h.openWindows(); n != 0 {
				t.Errorf("%d windows open at the end", n)
			}
			h.Release()
			if u := budget.Used(); u != 0 {
				t.Errorf("the budget holds %s after the release", dataflow.Bytes(u))
			}
		})
	}
}

func sumRows(recs []arrow.Record) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

func head(s []string) []string { return s[:min(len(s), 8)] }

// Open windows hold no Go pointers of their own (#25): the heap's objects
// grow by less than one per window opened, where a window with its own
// key table, builders and accumulators took 15, and the collector marked
// them all. Here the objects are a few slabs, whatever the windows; so
// for sessions (a session and a key's list were two objects a session)
// and for the two-phase merge's pending epochs (a HashAggregate each).
func TestOpenWindowsAreAFewHeapObjects(t *testing.T) {
	const windows = 20000
	mem := memory.NewGoAllocator()
	rows := rowsMsApart(windows)
	for i, r := range rows {
		r[2] = float64(i) / 8
		r[3] = fmt.Sprintf("a key longer than a word, %d", i) // a new one per window
	}
	rec := makeRecord(t, mem, streamSchema, rows)
	defer rec.Release()
	for _, tc := range []struct {
		name string
		w    *WindowSpec
		by   expr.Expr // the group key (nil: k)
	}{
		{"tumble by a long string", &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond}, colS},
		{"tumble by a float", &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond}, colF},
		{"tumble by two", &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond}, nil},
		{"tumble", &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond}, nil},
		{"hop", &WindowSpec{Type: expr.Hop, Time: colTS, Size: 2 * time.Millisecond, Slide: time.Millisecond}, nil},
		{"session", &WindowSpec{Type: expr.Session, Time: colTS, Gap: time.Second}, nil},
		{"merge epochs", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := dataflow.NewMemory("query q", 0, nil)
			var h *HashAggregate
			switch {
			case tc.name == "tumble by two":
				h = countBy(t, budget.Allocator(mem), tc.w, colK, colS)
			case tc.by != nil:
				h = countBy(t, budget.Allocator(mem), tc.w, tc.by)
			case tc.w != nil:
				h = countByK(t, budget.Allocator(mem), tc.w)
			default:
				n, _ := expr.Builtins().NewAggregate("count", false)
				spec := AggregateSpec{Group: []expr.Expr{colK}, GroupNames: []string{"k"}, Aggs: []*expr.Aggregate{n}, AggNames: []string{"n"}}
				var err error
				if h, err = newEpochAggregate(budget.Allocator(mem), spec, streamSchema, functions.Builtins()); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Charge(budget.Account("aggregate")); err != nil {
				t.Fatal(err)
			}
			before := heapObjects()
			if tc.w != nil {
				if err := h.Add(rec); err != nil {
					t.Fatal(err)
				}
			} else {
				for i := range int64(windows) {
					one := rec.NewSlice(i, i+1)
					err := h.addEpoch(one, i)
					one.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			grew := heapObjects() - before
			runtime.KeepAlive(h)
			open := h.openWindows()
			if h.sess != nil {
				open = h.sess.open
			}
			t.Logf("%d open: %d heap objects more (%.3f each)", open, grew, float64(grew)/float64(open))
			if open < windows {
				t.Fatalf("%d open, want at least %d", open, windows)
			}
			if grew >= windows {
				t.Errorf("%d open grew the heap by %d objects, want under one each", open, grew)
			}
			h.Release()
			if u := budget.Used(); u != 0 {
				t.Errorf("the budget holds %s after the release", dataflow.Bytes(u))
			}
		})
	}
}

// countBy is SELECT by..., count(*) ... GROUP BY by..., w.
func countBy(t testing.TB, mem memory.Allocator, w *WindowSpec, by ...expr.Expr) *HashAggregate {
	t.Helper()
	n, err := expr.Builtins().NewAggregate("count", false)
	if err != nil {
		t.Fatal(err)
	}
	spec := AggregateSpec{Window: w, Aggs: []*expr.Aggregate{n}, AggNames: []string{"n"}}
	for i, e := range by {
		spec.Group = append(spec.Group, e)
		spec.GroupNames = append(spec.GroupNames, fmt.Sprint("g", i))
	}
	h, err := NewHashAggregate(mem, spec, streamSchema, functions.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// heapObjects is the live heap's objects after a collection.
func heapObjects() int64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapObjects)
}
