package exec

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
)

// countingAllocator counts every byte allocated through it.
type countingAllocator struct {
	memory.Allocator
	total atomic.Int64
}

func (c *countingAllocator) Allocate(n int) []byte {
	c.total.Add(int64(n))
	return c.Allocator.Allocate(n)
}

func (c *countingAllocator) Reallocate(n int, b []byte) []byte {
	c.total.Add(int64(n))
	return c.Allocator.Reallocate(n, b)
}

// writeWideParquet writes rows of (id INT, ts TIMESTAMP, pad VARCHAR) with a
// 4 KiB pad per row: a column no query below reads.
func writeWideParquet(t testing.TB, rows, pad int) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "pad", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(i) * time.Second).UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(strings.Repeat(string(rune('a'+i%26)), pad))
	}
	rec := b.NewRecord()
	defer rec.Release()
	return writeParquet(t, "wide.parquet", rec, nil)
}

// TestParquetScanDecodesOnlyTheColumnsUsed: a query over one narrow column
// of a file whose other column holds 8 MiB allocates far less than that
// column, as a table and as a stream (whose event-time column is read too),
// and still gives the right answer; a query of the wide column reads it.
func TestParquetScanDecodesOnlyTheColumnsUsed(t *testing.T) {
	const rows = 2048
	path := writeWideParquet(t, rows, 4096)
	for _, c := range []struct {
		name, script string
		want         any
		wide         bool
	}{
		{"table", "CREATE TABLE w (id INT, ts TIMESTAMP, pad VARCHAR) FROM FILE '" + path + "' FORMAT PARQUET;\nSELECT sum(id) AS s FROM w;", int64(rows * (rows - 1) / 2), false},
		{"stream", "CREATE STREAM w (id INT, ts TIMESTAMP, pad VARCHAR) FROM FILE '" + path + "' FORMAT PARQUET;\nSELECT max(id) AS m FROM w GROUP BY TUMBLE(ts, INTERVAL '1' DAY);", int64(rows - 1), false},
		{"wide column", "CREATE TABLE w (id INT, ts TIMESTAMP, pad VARCHAR) FROM FILE '" + path + "' FORMAT PARQUET;\nSELECT max(pad) AS p FROM w;", strings.Repeat("z", 4096), true},
	} {
		mem := &countingAllocator{Allocator: memory.NewGoAllocator()}
		out := &collect{}
		err := RunScript(context.Background(), "q.sql", c.script, ScriptOptions{
			Options:   Options{Allocator: mem},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(out.rows) != 1 || out.rows[0][0] != c.want {
			t.Fatalf("%s: rows %v, want [[%v]]", c.name, out.rows, c.want)
		}
		padBytes := int64(rows * 4096)
		if got := mem.total.Load(); !c.wide && got > padBytes/4 {
			t.Errorf("%s: allocated %d bytes; the unread column alone is %d", c.name, got, padBytes)
		} else if c.wide && got < padBytes {
			t.Errorf("%s: allocated %d bytes, less than the column read (%d)", c.name, got, padBytes)
		}
	}
}

// BenchmarkParquetTableBatch reads two columns of a 256k-row Parquet file in
// the default batch and in a table scan's batch (minColumnarBatch).
func BenchmarkParquetTableBatch(b *testing.B) {
	path := writeWideParquet(b, 1<<18, 16)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	}, nil)
	for _, batch := range []int{4096, minColumnarBatch} {
		b.Run(strconv.Itoa(batch), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r, err := sources.OpenParquet(path, schema, batch, memory.DefaultAllocator, sources.Fail, nil)
				if err != nil {
					b.Fatal(err)
				}
				for {
					rec, err := r.Next(memory.DefaultAllocator)
					if err != nil {
						b.Fatal(err)
					}
					if rec == nil {
						break
					}
					rec.Release()
				}
				r.Close()
			}
		})
	}
}
