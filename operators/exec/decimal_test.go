package exec

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"

	"github.com/tierflow/tierflow/operators/sinks"
)

// writeLineitems writes rows like TPC-H's lineitem: quantity DECIMAL(15,2)
// 1..50, discount 0.00..0.10, a ship date, in row groups of rows/5 (the
// quantities repeat in every group, so no group can be skipped by them).
func writeLineitems(t *testing.T, rows int) string {
	t.Helper()
	money := &arrow.Decimal128Type{Precision: 15, Scale: 2}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "qty", Type: money, Nullable: true},
		{Name: "disc", Type: money, Nullable: true},
		{Name: "ship", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	day0 := time.Date(1994, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i%50+1) * 100))
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i % 11)))
		b.Field(2).(*array.Date32Builder).Append(arrow.Date32FromTime(day0.AddDate(0, 0, i%730)))
	}
	rec := b.NewRecord()
	defer rec.Release()
	return writeParquet(t, "lineitem.parquet", rec, parquet.NewWriterProperties(
		parquet.WithMaxRowGroupLength(int64(rows/5)), parquet.WithStats(true), parquet.WithStoreDecimalAsInteger(true)))
}

func runCount(t *testing.T, script string) (any, string) {
	t.Helper()
	out := &collect{}
	var log bytes.Buffer
	err := RunScript(context.Background(), "q.sql", script, ScriptOptions{
		Options:   Options{Allocator: memory.NewGoAllocator()},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
		Log:       &log,
	})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	if len(out.rows) != 1 {
		t.Fatalf("%s: %d rows", script, len(out.rows))
	}
	return out.rows[0][0], log.String()
}

// TestDecimalFilterOverRowGroups: a DECIMAL column's row-group statistics
// are compared at its scale. Read as stored integers (1.00 as 100), every
// row group but the first was skipped by qty < 24 and 1,886 of 9,200 rows
// came back.
func TestDecimalFilterOverRowGroups(t *testing.T) {
	path := writeLineitems(t, 20000)
	// Declared as in the file, inferred from it, and declared DOUBLE and
	// TIMESTAMP (the values converted as read; the statistics still are
	// the file's).
	for _, decl := range []string{"(qty DECIMAL(15,2), disc DECIMAL(15,2), ship DATE)", "", "(qty DOUBLE, disc DOUBLE, ship TIMESTAMP)"} {
		for _, c := range []struct {
			where string
			want  int64
		}{
			{"qty < 24", 20000 / 50 * 23},
			{"qty >= 49.5", 20000 / 50},
			{"qty = 24", 20000 / 50},
			// Exact, as DuckDB: 0.06 - 0.01 is 0.05, not 0.0499999...
			{"disc BETWEEN 0.06 - 0.01 AND 0.06 + 0.01", int64(countMod(20000, 11, 5, 7))},
			{"ship < date '1994-01-01' + interval '1' year", int64(countDays(20000, 365))},
			{"ship >= date '1995-12-01' - interval '1' month", int64(20000 - countDays(20000, 669))},
		} {
			script := "CREATE TABLE t " + decl + " FROM FILE '" + path + "' FORMAT PARQUET;\nSELECT count(*) AS n FROM t WHERE " + c.where + ";"
			got, log := runCount(t, script)
			if got != c.want {
				t.Errorf("%q WHERE %s: %v rows, want %d (%s)", decl, c.where, got, c.want, strings.TrimSpace(log))
			}
		}
	}
}

// countDays counts the rows (day i%730 after the first) before day d.
func countDays(rows, d int) int {
	n := 0
	for i := 0; i < rows; i++ {
		if i%730 < d {
			n++
		}
	}
	return n
}

// countMod counts the rows whose i%m is in [lo, hi].
func countMod(rows, m, lo, hi int) int {
	n := 0
	for i := 0; i < rows; i++ {
		if i%m >= lo && i%m <= hi {
			n++
		}
	}
	return n
}
