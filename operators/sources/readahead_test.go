package sources

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources/sourcestest"
)

// readAheadCSV is a file of n rows of ~40 bytes: an id, a name, a value.
func readAheadCSV(t *testing.T, n int) string {
	var b strings.Builder
	b.WriteString("id,name,v\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,customer number %07d,%d.%02d\n", i, i*7919%10_000_000, i%100_000, i%100)
	}
	return write(t, "ahead.csv", b.String())
}

var readAheadSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// readUnderBudget reads path on workers goroutines under a budget of limit
// bytes, as a query whose operator keeps perRow bytes of state for every
// row it consumes ("aggregate[0]"): the rows read, the most the budget
// held beside the state when a record was handed out, and the read's error.
func readUnderBudget(t *testing.T, path string, workers int, limit, perRow int64) (rows int64, ahead int64, err error) {
	return readerUnderBudget(t, func(mem memory.Allocator) Reader {
		r, err := OpenCSVTable(path, readAheadSchema, 1024, Fail, &Report{})
		if err != nil {
			t.Fatal(err)
		}
		r.workers = workers
		return r
	}, limit, perRow, true)
}

// readerUnderBudget is readUnderBudget of the reader open makes; leaks
// checks that every buffer went back.
func readerUnderBudget(t *testing.T, open func(memory.Allocator) Reader, limit, perRow int64, leaks bool) (rows int64, ahead int64, err error) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	if leaks {
		defer checked.AssertSize(t, 0)
	}
	budget := dataflow.NewMemory("query q1 on worker w1", limit, nil)
	defer budget.Close()
	mem := budget.Allocator(checked)
	state := budget.Account("aggregate[0]")
	defer state.Close()
	r := open(mem)
	defer r.Close()
	for {
		rec, err := r.Next(mem)
		if err != nil || rec == nil {
			return rows, ahead, err
		}
		ahead = max(ahead, budget.Used()-state.Held())
		rows += rec.NumRows()
		err = state.Grow(rec.NumRows() * perRow)
		rec.Release()
		if err != nil {
			return rows, ahead, err
		}
	}
}

// A parallel CSV read holds ahead at most a fixed share of the query's
// budget (dataflow.ReadAhead), whatever the number of cores parsing: the
// same query under a 10 MiB limit, its state half the budget, reads every
// row with 2 parsers and with 16; when the state outgrows the budget, it
// fails naming the state, not the scan. Before, the read-ahead was
// 2*cores+2 chunks of 1 MiB: ~34 MiB on 16 cores, so the query failed in
// its scan there (and took budget from the state on any machine).
func TestCSVReadAheadIsBoundedByTheBudgetNotTheCores(t *testing.T) {
	const n = 200_000
	const limit = 10 << 20
	path := readAheadCSV(t, n)
	allow := int64(limit / dataflow.ReadAheadFraction)
	for _, workers := range []int{2, 16} {
		rows, ahead, err := readUnderBudget(t, path, workers, limit, (limit/2)/n)
		if err != nil || rows != n {
			t.Fatalf("%d parsers: %d rows, %v: want all %d rows under %s with half of it state", workers, rows, err, n, dataflow.Bytes(limit))
		}
		// A chunk being parsed is charged its estimate, which may fall
		// short of what it takes by the variation between chunks: a
		// quarter over at most (uniform rows: a few percent). Before, 2
		// parsers held 4.3-4.5 MiB ahead.
		if ahead > allow+allow/4 {
			t.Errorf("%d parsers: %s held ahead of the consumer, want about %s (a quarter of the budget)", workers, dataflow.Bytes(ahead), dataflow.Bytes(allow))
		}
		t.Logf("%d parsers: at most %s held ahead (allowance %s)", workers, dataflow.Bytes(ahead), dataflow.Bytes(allow))

		_, _, err = readUnderBudget(t, path, workers, limit, 2*limit/n)
		var le *dataflow.LimitError
		if !errors.As(err, &le) || !errors.Is(err, dataflow.ErrMemory) || !strings.Contains(err.Error(), "aggregate[0]") {
			t.Errorf("%d parsers, state twice the budget: %v: want failed for its memory, naming aggregate[0]", workers, err)
		}
	}
}

// A parallel Parquet read holds ahead the row groups the same share of
// the budget takes, whatever its number of decoders: as the CSV read
// above, on a file of 25 row groups of 8,192 rows (~0.3 MiB each).
// Before, the queue held workers+1 decoded groups: 17 (~5 MiB) with 16.
func TestParquetReadAheadIsBoundedByTheBudgetNotTheCores(t *testing.T) {
	const n = 200_000
	const limit = 10 << 20
	path := readAheadParquet(t, n, 8192)
	allow := int64(limit / dataflow.ReadAheadFraction)
	for _, workers := range []int{2, 16} {
		open := func(mem memory.Allocator) Reader {
			r, err := OpenParquetTable(path, readAheadSchema, 1024, mem, Fail, &Report{})
			if err != nil {
				t.Fatal(err)
			}
			if pp, ok := r.(*parquetParallel); ok {
				pp.workers = workers
			} else {
				t.Fatalf("%T: want the parallel reader of %d row groups", r, n/8192+1)
			}
			return r
		}
		rows, ahead, err := readerUnderBudget(t, open, limit, (limit/2)/n, true)
		if err != nil || rows != n {
			t.Fatalf("%d decoders: %d rows, %v: want all %d rows under %s with half of it state", workers, rows, err, n, dataflow.Bytes(limit))
		}
		// A row group is charged its rows times the largest bytes per
		// row its records took; while it is decoded, its pages and
		// builders take more (1.7-2.3 MiB at most with 2 decoders,
		// 2.9-3.3 with 16: as many groups decode at once as the
		// allowance admits, whatever the schedule). Before, 16 decoders
		// held 5.3-7.3 MiB.
		if ahead > 2*allow {
			t.Errorf("%d decoders: %s held ahead of the consumer, want about %s (a quarter of the budget)", workers, dataflow.Bytes(ahead), dataflow.Bytes(allow))
		}
		t.Logf("%d decoders: at most %s held ahead (allowance %s)", workers, dataflow.Bytes(ahead), dataflow.Bytes(allow))
		// (arrow/go's decoder refused a buffer mid-page keeps what it
		// had: ~240 KB the failed query's budget goes on counting.)
		_, _, err = readerUnderBudget(t, open, limit, 2*limit/n, false)
		if !errors.Is(err, dataflow.ErrMemory) || !strings.Contains(err.Error(), "aggregate[0]") {
			t.Errorf("%d decoders, state twice the budget: %v: want failed for its memory, naming aggregate[0]", workers, err)
		}
	}
}

// readAheadParquet writes readAheadCSV's rows as Parquet, in row groups of
// group rows.
func readAheadParquet(t *testing.T, n, group int) string {
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, readAheadSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer number %07d", i*7919%10_000_000))
		b.Field(2).(*array.Float64Builder).Append(float64(i%100_000) + float64(i%100)/100)
	}
	rec := b.NewRecord()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "ahead.parquet")
	sourcestest.WriteParquet(t, p, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(group))), pqarrow.NewArrowWriterProperties())
	return p
}

// What a parallel CSV read holds is charged to its query: the records it
// parsed ahead and the text they were parsed from (the chunks in flight
// and the spare buffers kept for the next ones). Uncharged, the text was
// about as much as the records: a UNION ALL of 200 scans of one 3,000,000-
// row file under a 64 MiB query limit took its worker to 1.7 GB before the
// query failed for its memory.
func TestCSVParallelTextIsChargedToTheQuery(t *testing.T) {
	path := readAheadCSV(t, 200_000)
	budget := dataflow.NewMemory("query q1 on worker w1", 64<<20, nil)
	defer budget.Close()
	mem := budget.Allocator(memory.NewGoAllocator())
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	r, err := OpenCSVTable(path, readAheadSchema, 1024, Fail, &Report{})
	if err != nil {
		t.Fatal(err)
	}
	r.workers = 2
	rec, err := r.Next(mem)
	if err != nil || rec == nil || r.par == nil {
		t.Fatalf("first record %v, %v, parallel %v", rec, err, r.par != nil)
	}
	// The splitter and parsers read ahead until the read-ahead is full.
	for last, still := int64(-1), 0; still < 5; time.Sleep(20 * time.Millisecond) {
		if u := budget.Used(); u == last {
			still++
		} else {
			last, still = u, 0
		}
	}
	grown, charged := heap()-before, budget.Used()
	t.Logf("the read holds %s of heap, %s charged", dataflow.Bytes(grown), dataflow.Bytes(charged))
	if charged < grown*3/4 {
		t.Errorf("the read grew the heap by %s and charged its query %s", dataflow.Bytes(grown), dataflow.Bytes(charged))
	}
	rec.Release()
	r.Close()
	if u := budget.Used(); u != 0 {
		t.Errorf("closed, the read still charges %s", dataflow.Bytes(u))
	}
}

// A query's scans read ahead out of one allowance, not one each: four
// parallel reads of one file under one budget (a UNION ALL of four
// scans), taking turns, hold together about what one may, and every row
// of each is read. One allowance each held four, so a UNION ALL of four
// scans failed under the limit one scan fits.
func TestCSVScansShareTheQuerysReadAhead(t *testing.T) {
	const n, scans = 100_000, 4
	const limit = 16 << 20
	path := readAheadCSV(t, n)
	budget := dataflow.NewMemory("query q1 on worker w1", limit, nil)
	defer budget.Close()
	mem := budget.Allocator(memory.NewGoAllocator())
	var readers []*CSVReader
	for range scans {
		r, err := OpenCSVTable(path, readAheadSchema, 1024, Fail, &Report{})
		if err != nil {
			t.Fatal(err)
		}
		r.workers = 2
		defer r.Close()
		readers = append(readers, r)
	}
	rows := make([]int64, scans)
	var peak int64
	for done := 0; done < scans; {
		done = 0
		for i, r := range readers {
			rec, err := r.Next(mem)
			if err != nil {
				t.Fatalf("scan %d: %v", i, err)
			}
			if rec == nil {
				done++
				continue
			}
			peak = max(peak, budget.Used())
			rows[i] += rec.NumRows()
			rec.Release()
		}
	}
	for i, got := range rows {
		if got != n {
			t.Errorf("scan %d read %d rows, want %d", i, got, n)
		}
	}
	// Each reader may have one chunk ahead whatever the pool holds, and a
	// chunk being parsed is charged its estimate: a quarter over at most.
	allow := int64(limit / dataflow.ReadAheadFraction)
	if bound := allow + allow/4; peak > bound {
		t.Errorf("%d scans held %s ahead together, want about %s (the query's read-ahead)", scans, dataflow.Bytes(peak), dataflow.Bytes(allow))
	}
	t.Logf("%d scans held at most %s ahead together (the query's read-ahead %s)", scans, dataflow.Bytes(peak), dataflow.Bytes(allow))
	if u := budget.Used(); u != 0 {
		for _, r := range readers {
			r.Close()
		}
		if u := budget.Used(); u != 0 {
			t.Errorf("after the reads the budget holds %s", dataflow.Bytes(u))
		}
	}
}
