package sources

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sources/sourcestest"
)

// manyGroups writes n rows in row groups of 100: ids, strings (every 137th
// not UTF-8) and numbers.
func manyGroups(t *testing.T, n int) (string, *arrow.Schema) {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		s := fmt.Sprint("k", i%7)
		if i%137 == 5 {
			s = string([]byte{'x', 0xff})
		}
		if i%50 == 7 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(s)
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
	}
	rec := b.NewRecord()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "g.parquet")
	sourcestest.WriteParquet(t, p, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100)), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	return p, schema
}

// The row groups decoded on several goroutines come out as a sequential
// read gives them: the same rows in the same order, the same skipped rows
// with the same row numbers, the same first error; nothing leaks.
func TestParquetParallelReadsWhatTheSequentialReaderReads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	path, schema := manyGroups(t, 2000)
	read := func(parallel bool, policy OnError, bounds ...Bound) csvRun {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rep := &Report{}
		open := OpenParquet
		if parallel {
			open = OpenParquetTable
		}
		r, err := open(path, schema, 30, mem, policy, rep, bounds...)
		if err != nil {
			t.Fatal(err)
		}
		pp, par := r.(*parquetParallel)
		if par && !pp.seq.pq.dictProps.ReadDict(1) {
			t.Fatal("the string column is not read as its dictionary")
		}
		out := csvRun{par: par}
		for {
			rec, err := r.Next(mem)
			if err != nil {
				out.err = err.Error()
				break
			}
			if rec == nil {
				break
			}
			out.rows = append(out.rows, readAll(t, mem, &oneRecord{rec})...)
		}
		out.messages = rep.Messages()
		r.Close()
		return out
	}
	for _, policy := range []OnError{Skip, Fail} {
		want := read(false, policy)
		got := read(true, policy)
		if !got.par {
			t.Fatal("not read in parallel")
		}
		if policy == Skip && (len(want.rows) != 2000-15 || len(want.messages) != 15) {
			t.Fatalf("sequential: %d rows, %d problems, %s", len(want.rows), len(want.messages), want.err)
		}
		if policy == Skip { // the values written, strings unpacked from their dictionary
			k := 0
			for i := range 2000 {
				if i%137 == 5 {
					continue
				}
				var s any = fmt.Sprint("k", i%7)
				if i%50 == 7 {
					s = nil
				}
				if r := want.rows[k]; r[0] != int64(i) || r[1] != s || r[2] != float64(i)/4 {
					t.Fatalf("row %d: %v", i, r)
				}
				k++
			}
		}
		if got.err != want.err || !reflect.DeepEqual(got.messages, want.messages) || policy == Skip && !reflect.DeepEqual(got.rows, want.rows) {
			t.Fatalf("policy %d: parallel %d rows, %q %q; sequential %d rows, %q %q", policy, len(got.rows), got.err, got.messages, len(want.rows), want.err, want.messages)
		}
	}
	// Row groups skipped by their statistics: the rest, in order.
	b := []Bound{{Column: "id", Op: ">=", Value: int64(1234)}}
	if got, want := read(true, Skip, b...), read(false, Skip, b...); !reflect.DeepEqual(got, csvRun{rows: want.rows, messages: want.messages, par: true}) {
		t.Fatalf("bounds: parallel %d rows, sequential %d", len(got.rows), len(want.rows))
	}
	// Closed half-way: the workers stop, their records are released.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := OpenParquetTable(path, schema, 30, mem, Skip, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next(mem)
	if err != nil || rec == nil {
		t.Fatal(rec, err)
	}
	rec.Release()
	r.Close()
}

// A query's memory budget refusing a Parquet reader's buffer is that, named
// (dataflow.ErrMemory, the LimitError's words), not a corrupt file: TPC-H
// Q21 under 128 MiB said "bad file: lineitem.parquet: corrupt or
// truncated". Both the sequential reader and the one over row groups.
func TestParquetReadPastTheBudgetIsNotABadFile(t *testing.T) {
	path, _ := manyGroups(t, 5000)
	for _, parallel := range []bool{false, true} {
		budget := dataflow.NewMemory("query q", 4<<10, nil)
		mem := budget.Allocator(memory.NewGoAllocator())
		open := OpenParquet
		if parallel {
			open = OpenParquetTable
		}
		r, err := open(path, nil, 1000, mem, Fail, nil)
		for err == nil {
			var rec arrow.Record
			if rec, err = r.Next(mem); rec == nil && err == nil {
				t.Fatalf("parallel %v: read the whole file within 4 KiB", parallel)
			}
			if rec != nil {
				rec.Release()
			}
		}
		if r != nil {
			r.Close()
		}
		if !errors.Is(err, dataflow.ErrMemory) || errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), "over its memory limit") {
			t.Errorf("parallel %v: %v, want the budget's refusal, not a bad file", parallel, err)
		}
	}
}
