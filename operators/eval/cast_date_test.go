package eval

import (
	"time"

	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func dateColumn(n int, nullEvery int) *array.Date32 {
	b := array.NewDate32Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range n {
		if nullEvery > 0 && i%nullEvery == 0 {
			b.AppendNull()
			continue
		}
		b.Append(arrow.Date32(8000 + i%3000 - 1500)) // before and after 1970
	}
	return b.NewDate32Array()
}

// A DATE cast to TIMESTAMP is each value's midnight in the wanted unit,
// NULLs kept, slices (an offset into the column) read from their start.
func TestDateToTimestampCast(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	col := dateColumn(1000, 7)
	defer col.Release()
	for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		to := &arrow.TimestampType{Unit: unit}
		per := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[unit]
		for _, in := range []arrow.Array{col, array.NewSlice(col, 13, 500)} {
			out, ok, err := castTemporalOrDecimal(mem, in, to)
			if !ok || err != nil {
				t.Fatalf("%s: ok %v, err %v", unit, ok, err)
			}
			ts := out.(*array.Timestamp)
			src := in.(*array.Date32)
			if ts.Len() != src.Len() || ts.NullN() != src.NullN() {
				t.Fatalf("%s: %d rows, %d NULLs; want %d, %d", unit, ts.Len(), ts.NullN(), src.Len(), src.NullN())
			}
			for i := range src.Len() {
				if src.IsNull(i) != ts.IsNull(i) {
					t.Fatalf("%s row %d: NULL %v, want %v", unit, i, ts.IsNull(i), src.IsNull(i))
				}
				if want := int64(src.Value(i)) * 86400 * per; !src.IsNull(i) && int64(ts.Value(i)) != want {
					t.Fatalf("%s row %d: %d, want %d", unit, i, ts.Value(i), want)
				}
			}
			out.Release()
			if in != col {
				in.Release()
			}
		}
	}
}

// perRowDatesToTimestamps is the cast as it was: a builder appended per
// row, the unit looked up per row. The benchmark's baseline.
func perRowDatesToTimestamps(mem memory.Allocator, a *array.Date32, to *arrow.TimestampType) arrow.Array {
	b := array.NewTimestampBuilder(mem, to)
	defer b.Release()
	b.Reserve(a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		per := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[to.Unit]
		b.UnsafeAppend(arrow.Timestamp(int64(a.Value(i)) * 86400 * per))
	}
	return b.NewArray()
}

// BenchmarkDateToTimestamp: a 64K-row DATE column cast to microsecond
// timestamps (l_shipdate against TPC-H's DATE + INTERVAL constants), the
// per-row builder (baseline) and the slice loop alternating; ratio is the
// loop's time over the baseline's.
func BenchmarkDateToTimestamp(b *testing.B) {
	col := dateColumn(1<<16, 0)
	defer col.Release()
	to := &arrow.TimestampType{Unit: arrow.Microsecond}
	var base, now int64
	for range b.N {
		t0 := nanotime()
		perRowDatesToTimestamps(memory.DefaultAllocator, col, to).Release()
		t1 := nanotime()
		datesToTimestamps(memory.DefaultAllocator, col, to).Release()
		t2 := nanotime()
		base, now = base+t1-t0, now+t2-t1
	}
	b.ReportMetric(float64(now)/float64(base), "ratio")
	b.ReportMetric(float64(base)/float64(b.N)/1e3, "baseline-µs/op")
	b.ReportMetric(float64(now)/float64(b.N)/1e3, "loop-µs/op")
}

func nanotime() int64 { return time.Now().UnixNano() }
