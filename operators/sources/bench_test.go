package sources

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/dataflow"
)

var lineitemLike = arrow.NewSchema([]arrow.Field{
	{Name: "orderkey", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "quantity", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "flag", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "mode", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "shipdate", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
}, nil)

func drainBench(b *testing.B, r Reader) int64 { return drainBenchIn(b, r, memory.DefaultAllocator) }

func drainBenchIn(b *testing.B, r Reader, mem memory.Allocator) int64 {
	var n int64
	for {
		rec, err := r.Next(mem)
		if err != nil {
			b.Fatal(err)
		}
		if rec == nil {
			break
		}
		n += rec.NumRows()
		rec.Release()
	}
	r.Close()
	return n
}

// BenchmarkCSVTable reads 200k lineitem-like rows (12 MB) with the scanner
// (OpenCSV, what every CSV file went through) and with the typed parallel
// read of a table (OpenCSVTable), also charged to a query budget of no
// limit (the allocator's accounting alone), of 64 MiB and of 10 MiB, whose
// read-ahead (a quarter: readahead.go) holds fewer, smaller chunks in
// flight.
func BenchmarkCSVTable(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	var sb strings.Builder
	sb.WriteString("orderkey,quantity,price,flag,mode,shipdate\n")
	modes := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	for i := range 200000 {
		fmt.Fprintf(&sb, "%d,%d,%.2f,%s,%s,199%d-%02d-%02d 00:00:00.000\n", i/4, 1+r.IntN(50), r.Float64()*1e5,
			[]string{"A", "N", "R"}[r.IntN(3)], modes[r.IntN(7)], 2+r.IntN(7), 1+r.IntN(12), 1+r.IntN(28))
	}
	path := filepath.Join(b.TempDir(), "l.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	budgets := map[string]int64{"typed-parallel-budget": -1, "typed-parallel-64MiB": 64 << 20, "typed-parallel-10MiB": 10 << 20}
	for _, name := range []string{"scanner", "typed-parallel", "typed-parallel-budget", "typed-parallel-64MiB", "typed-parallel-10MiB"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				open := OpenCSV
				if name != "scanner" {
					open = OpenCSVTable
				}
				rd, err := open(path, lineitemLike, 4096, Fail, nil)
				if err != nil {
					b.Fatal(err)
				}
				mem := memory.Allocator(memory.DefaultAllocator)
				if limit := budgets[name]; limit != 0 {
					mem = dataflow.NewMemory("query", max(limit, 0), nil).Allocator(mem)
				}
				if n := drainBenchIn(b, rd, mem); n != 200000 {
					b.Fatal(n)
				}
			}
		})
	}
}

// BenchmarkParquetTable reads 500k lineitem-like rows in row groups of 50k
// sequentially (OpenParquet: one reader, strings built row by row) and by
// row group on every core with dictionary strings (OpenParquetTable).
// writeLineitemLike writes rows of lineitemLike to a Parquet file of
// groupRows-row row groups and returns its path.
func writeLineitemLike(b testing.TB, rows, groupRows int) string {
	r := rand.New(rand.NewPCG(2, 2))
	mem := memory.NewGoAllocator()
	bld := array.NewRecordBuilder(mem, lineitemLike)
	modes := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i / 4))
		bld.Field(1).(*array.Float64Builder).Append(float64(1 + r.IntN(50)))
		bld.Field(2).(*array.Float64Builder).Append(float64(r.IntN(10000000)) / 100)
		bld.Field(3).(*array.StringBuilder).Append([]string{"A", "N", "R"}[r.IntN(3)])
		bld.Field(4).(*array.StringBuilder).Append(modes[r.IntN(7)])
		bld.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(r.Int64N(1e15)))
	}
	rec := bld.NewRecord()
	bld.Release()
	path := filepath.Join(b.TempDir(), "l.parquet")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(lineitemLike, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(groupRows))), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	w.Close()
	rec.Release()
	return path
}

// BenchmarkParquetReadProps reads every column of every row group of one
// file with arrow/go's default reader properties (the baseline: each column
// chunk read whole, then copied) and with parquetReadProps (pages read
// through a small buffer), alternately in one process; ratio is
// tierflow's time over the baseline's.
func BenchmarkParquetReadProps(b *testing.B) {
	// Row groups of 122,880 rows, as DuckDB and bench/tpch write them.
	path := writeLineitemLike(b, 500000, 122880)
	read := func(props *parquet.ReaderProperties) time.Duration {
		start := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		pf, err := file.NewParquetReader(f, file.WithReadProps(props))
		if err != nil {
			b.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 16384}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer rr.Release()
		n := 0
		for rr.Next() {
			n += int(rr.Record().NumRows())
		}
		if n != 500000 {
			b.Fatal(n)
		}
		return time.Since(start)
	}
	var base, ours time.Duration
	for range b.N {
		base += read(parquet.NewReaderProperties(memory.DefaultAllocator))
		ours += read(parquetReadProps(memory.DefaultAllocator))
	}
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "tierflow-ns/op")
	b.ReportMetric(ours.Seconds()/base.Seconds(), "ratio")
}

func BenchmarkParquetTable(b *testing.B) {
	path := writeLineitemLike(b, 500000, 50000)
	for _, name := range []string{"sequential", "row-groups-parallel"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				open := OpenParquet
				if name == "row-groups-parallel" {
					open = OpenParquetTable
				}
				rd, err := open(path, lineitemLike, 16384, memory.DefaultAllocator, Fail, nil)
				if err != nil {
					b.Fatal(err)
				}
				if n := drainBench(b, rd); n != 500000 {
					b.Fatal(n)
				}
			}
		})
	}
}
