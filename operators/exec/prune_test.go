package exec

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"

	"github.com/tierflow/tierflow/operators/sinks"
)

// writeSortedParquet writes rows (id INT, x DOUBLE, s VARCHAR, ts TIMESTAMP)
// with id = ts seconds = row number, in row groups of 100 rows: each row
// group's statistics cover a distinct range.
func writeSortedParquet(t *testing.T, rows int) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("s%05d", i))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(i) * time.Second).UnixMicro()))
	}
	rec := b.NewRecord()
	defer rec.Release()
	return writeParquet(t, "sorted.parquet", rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100), parquet.WithStats(true)))
}

// TestParquetTableSkipsRowGroupsTheFilterRefutes: a filter over a Parquet
// table reads only the row groups whose min/max can hold a passing row, for
// comparisons of every kind of column with a constant (either side, BETWEEN,
// a widened column), with the same answer as reading everything; a stream
// reads every row (its watermark moves with each), and an OR bounds nothing.
func TestParquetTableSkipsRowGroupsTheFilterRefutes(t *testing.T) {
	path := writeSortedParquet(t, 1000)
	for _, c := range []struct {
		kind, where string
		sum         int64
		read        string
	}{
		{"TABLE", "id >= 950", sumRange(950, 999), "100 rows read"},
		{"TABLE", "950 <= id", sumRange(950, 999), "100 rows read"},
		{"TABLE", "id BETWEEN 120 AND 130", sumRange(120, 130), "100 rows read"},
		{"TABLE", "id = 555", 555, "100 rows read"},
		{"TABLE", "x < 100.0", sumRange(0, 199), "200 rows read"},
		{"TABLE", "id < 150.5", sumRange(0, 150), "200 rows read"},
		{"TABLE", "s > 's00899'", sumRange(900, 999), "100 rows read"},
		{"TABLE", "ts >= TIMESTAMP '2026-01-01 00:15:00' AND ts < TIMESTAMP '2026-01-01 00:16:40'", sumRange(900, 999), "100 rows read"},
		{"TABLE", "id > 5000", 0, "100 rows read"},
		{"TABLE", "id < 50 OR id > 950", sumRange(0, 49) + sumRange(951, 999), "1000 rows read"},
		{"STREAM", "id >= 950", sumRange(950, 999), "1000 rows read"},
	} {
		script := "CREATE " + c.kind + " t (id INT, x DOUBLE, s VARCHAR, ts TIMESTAMP) FROM FILE '" + path + "' FORMAT PARQUET;\n" +
			"SELECT count(*) AS n, sum(id) AS total FROM t WHERE " + c.where + ";"
		out := &collect{}
		var log bytes.Buffer
		err := RunScript(context.Background(), "q.sql", script, ScriptOptions{
			Options:   Options{Allocator: memory.NewGoAllocator()},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
			Log:       &log,
		})
		if err != nil {
			t.Fatalf("%s %s: %v", c.kind, c.where, err)
		}
		var got any
		if len(out.rows) == 1 {
			got = out.rows[0][1]
		}
		if want := any(c.sum); c.sum == 0 && got == nil || got == want {
			// ok
		} else {
			t.Errorf("%s WHERE %s: sum %v, want %d", c.kind, c.where, got, c.sum)
		}
		if !strings.Contains(log.String(), "-- "+c.read+",") {
			t.Errorf("%s WHERE %s: %q, want %s", c.kind, c.where, strings.TrimSpace(log.String()), c.read)
		}
	}
}

func sumRange(lo, hi int64) int64 { return (lo + hi) * (hi - lo + 1) / 2 }

// A DATE column compared with a DATE plus an interval (a TIMESTAMP
// constant, at midnight as TPC-H writes its ranges, or within a day)
// gives the rows it should and skips the row groups the column's
// statistics refute.
func TestParquetDateRangeWithIntervalSkipsRowGroups(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	day0 := arrow.Date32FromTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := 0; i < 1000; i++ {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.Date32Builder).Append(day0 + arrow.Date32(i/10)) // ten rows a day
	}
	rec := b.NewRecord()
	defer rec.Release()
	path := writeParquet(t, "dates.parquet", rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100), parquet.WithStats(true)))
	for _, c := range []struct {
		where string
		sum   int64
		read  string
	}{
		{"d >= DATE '2026-01-01' + INTERVAL '95' DAY", sumRange(950, 999), "100 rows read"},
		{"d < DATE '2026-01-01' + INTERVAL '1' MONTH AND d >= DATE '2026-01-01' + INTERVAL '25' DAY", sumRange(250, 309), "200 rows read"},
		{"DATE '2026-01-01' + INTERVAL '3' DAY > d", sumRange(0, 29), "100 rows read"},
		{"d < DATE '2026-01-01' + INTERVAL '12' HOUR", sumRange(0, 9), "100 rows read"},
	} {
		script := "CREATE TABLE t (id INT, d DATE) FROM FILE '" + path + "' FORMAT PARQUET;\n" +
			"SELECT count(*) AS n, sum(id) AS total FROM t WHERE " + c.where + ";"
		out := &collect{}
		var log bytes.Buffer
		err := RunScript(context.Background(), "q.sql", script, ScriptOptions{
			Options:   Options{Allocator: memory.NewGoAllocator()},
			NewOutput: func() (sinks.Writer, error) { return out, nil },
			Log:       &log,
		})
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		if len(out.rows) != 1 || out.rows[0][1] != any(c.sum) {
			t.Errorf("WHERE %s: %v, want sum %d", c.where, out.rows, c.sum)
		}
		if !strings.Contains(log.String(), "-- "+c.read+",") {
			t.Errorf("WHERE %s: %q, want %s", c.where, strings.TrimSpace(log.String()), c.read)
		}
	}
}
