package rel

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/planner/expr"
)

// BenchmarkOpenWindows opens a window per row (TUMBLE of a millisecond over
// rows a millisecond apart, #25's "a window per ms") under a query budget
// and drops them: the CPU a query spends per window it opens and frees,
// beside the other queries of its worker.
func BenchmarkOpenWindows(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := makeRecord(b, mem, streamSchema, rowsMsApart(40000))
	defer rec.Release()
	b.ReportAllocs()
	for b.Loop() {
		budget := dataflow.NewMemory("query q", 0, nil)
		h := countByK(b, budget.Allocator(mem), &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
		if err := h.Charge(budget.Account("aggregate")); err != nil {
			b.Fatal(err)
		}
		if err := h.Add(rec); err != nil {
			b.Fatal(err)
		}
		h.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/40000, "ns/window")
}

// BenchmarkGCWithOpenWindows is what a full collection costs with 40,000
// windows of a window per millisecond open (#25): the wall time of a
// forced runtime.GC per op, the collector's CPU per collection (gc-cpu-ns,
// runtime/metrics), and the live heap objects per open window. The
// windows' state is a few slabs without pointers (window_slabs.go), so
// the collector marks a few slices, not each window's objects.
func BenchmarkGCWithOpenWindows(b *testing.B) {
	const windows = 40000
	mem := memory.NewGoAllocator()
	rec := makeRecord(b, mem, streamSchema, rowsMsApart(windows))
	defer rec.Release()
	budget := dataflow.NewMemory("query q", 0, nil)
	before := gcObjects()
	h := countByK(b, budget.Allocator(mem), &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
	if err := h.Charge(budget.Account("aggregate")); err != nil {
		b.Fatal(err)
	}
	if err := h.Add(rec); err != nil {
		b.Fatal(err)
	}
	perWindow := float64(gcObjects()-before) / windows
	cpu0 := gcCPU()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	b.StopTimer()
	b.ReportMetric((gcCPU()-cpu0)*1e9/float64(b.N), "gc-cpu-ns/op")
	b.ReportMetric(perWindow, "objects/window")
	runtime.KeepAlive(h)
	h.Release()
}

func gcObjects() int64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapObjects)
}

// gcCPU is the collector's CPU so far, in seconds (an estimate the
// runtime keeps: its mark workers, assists and pauses).
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// BenchmarkCloseWindows closes 40,000 windows of a window per millisecond
// at once (the input's end, #25) and measures the close alone: CPU per
// window closed (ns/window), allocations per window closed, and the heap
// objects per window its records hold while downstream still has them.
func BenchmarkCloseWindows(b *testing.B) {
	const windows = 40000
	mem := memory.NewGoAllocator()
	rec := makeRecord(b, mem, streamSchema, rowsMsApart(windows))
	defer rec.Release()
	var ns, allocs, held int64
	var ms runtime.MemStats
	for b.Loop() {
		b.StopTimer()
		h := countByK(b, mem, &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
		if err := h.Add(rec); err != nil {
			b.Fatal(err)
		}
		before := gcObjects()
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		b.StartTimer()
		t0 := time.Now()
		recs, err := h.Advance(math.MaxInt64)
		ns += time.Since(t0).Nanoseconds()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		allocs += int64(ms.Mallocs - m0)
		h.Release()
		held += gcObjects() - before
		releaseRecords(recs)
		b.StartTimer()
	}
	n := float64(b.N) * windows
	b.ReportMetric(float64(ns)/n, "ns/window")
	b.ReportMetric(float64(allocs)/n, "allocs/window")
	b.ReportMetric(float64(held)/n, "held-objects/window")
}

// BenchmarkAdvanceOneOfManyOpen is a watermark that closes one window of
// 40,000 open (a stream with a long lateness allowance, fine windows and
// the watermark moving with every small batch): the cost of an Advance
// should follow the windows it closes, not the windows still open.
func BenchmarkAdvanceOneOfManyOpen(b *testing.B) {
	const windows = 40000
	mem := memory.NewGoAllocator()
	rec := makeRecord(b, mem, streamSchema, rowsMsApart(windows))
	defer rec.Release()
	var h *HashAggregate
	next := windows
	for b.Loop() {
		if next == windows {
			b.StopTimer()
			if h != nil {
				h.Release()
			}
			h = countByK(b, mem, &WindowSpec{Type: expr.Tumble, Time: colTS, Size: time.Millisecond})
			if err := h.Add(rec); err != nil {
				b.Fatal(err)
			}
			next = 0
			b.StartTimer()
		}
		next++
		recs, err := h.Advance(t0 + int64(next)*1000)
		if err != nil || len(recs) != 1 {
			b.Fatalf("closed %d records: %v", len(recs), err)
		}
		releaseRecords(recs)
	}
	h.Release()
}
