package sources

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources/sourcestest"
)

// A page is decompressed into a buffer of the size its header states. A
// file of a few KB whose page states 16 MB is refused by a 4 MiB budget
// before the buffer is made (the sequential reader and the one over row
// groups), where it came from Go's allocator uncharged: a query's worker
// grew to gigabytes over a file that small.
func TestParquetPagesAreChargedToTheQuery(t *testing.T) {
	path, size := sourcestest.ParquetPageBomb(t, 2<<20)
	if size > 64<<10 {
		t.Fatalf("the page bomb is %d bytes on disk: not a bomb", size)
	}
	for _, parallel := range []bool{false, true} {
		budget := dataflow.NewMemory("query q", 4<<20, nil)
		mem := budget.Allocator(memory.NewGoAllocator())
		open := OpenParquet
		if parallel {
			open = OpenParquetTable
		}
		r, err := open(path, nil, 1024, mem, Fail, nil)
		rows := 0
		for err == nil {
			var rec arrow.Record
			if rec, err = r.Next(mem); rec == nil && err == nil {
				t.Fatalf("parallel %v: read all %d rows of a 16 MB page within 4 MiB", parallel, rows)
			}
			if rec != nil {
				rows += int(rec.NumRows())
				rec.Release()
			}
		}
		if r != nil {
			r.Close()
		}
		if !errors.Is(err, dataflow.ErrMemory) || !strings.Contains(err.Error(), "over its memory limit") {
			t.Errorf("parallel %v: %v, want the budget's refusal", parallel, err)
		}
		if peak := budget.Peak(); peak > 4<<20 {
			t.Errorf("parallel %v: the budget peaked at %d bytes, past its limit", parallel, peak)
		}
		budget.Close()
	}
}

// The planner's statistics read a sample of pages before any query's
// budget exists: a page past statsSampleMemory gives the column no distinct
// estimate, the footer's statistics still come, and the page is never
// allocated.
func TestParquetStatsSkipAPageLargerThanTheirBound(t *testing.T) {
	rows := statsSampleMemory/8 + 1<<20 // one page, 8 MiB past the bound
	path, _ := sourcestest.ParquetPageBomb(t, rows)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := ParquetStats(path, []string{"z"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != float64(rows) {
		t.Errorf("rows %v, want %d", st.Rows, rows)
	}
	if cs := st.Columns["z"]; cs == nil || cs.Distinct != 0 {
		t.Errorf("column z: %+v, want no distinct estimate", cs)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > statsSampleMemory/2 {
		t.Errorf("the statistics allocated %d MiB for a %d MiB page", grew>>20, rows*8>>20)
	}
}
