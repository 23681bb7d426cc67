package rel

import (
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
