package sources

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/operators/sources/sourcestest"
)

// writeStatsFile writes rows rows in row groups of group rows:
//
//	order  BIGINT: sorted, each value 4 times (an order key in lineitem)
//	part   BIGINT: a hash of the row over 1..parts (a foreign key)
//	id     BIGINT: unique, in a shuffled order
//	mode   VARCHAR: one of 7 values, NULL every 10th row
//	ts     TIMESTAMP: the day of the row from 1992-01-01, 2406 days around
func writeStatsFile(t *testing.T, rows, group, parts int) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "order", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "part", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "mode", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	modes := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	day0 := time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		h := uint64(i)*0x9e3779b97f4a7c15 + 1
		h ^= h >> 31
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 29
		b.Field(0).(*array.Int64Builder).Append(int64(i/4 + 1))
		b.Field(1).(*array.Int64Builder).Append(int64(h%uint64(parts)) + 1)
		b.Field(2).(*array.Int64Builder).Append(int64((uint64(i) * 7919) % uint64(rows)))
		if i%10 == 9 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(modes[h%7])
		}
		ts, _ := arrow.TimestampFromTime(day0.AddDate(0, 0, int(h%2406)), arrow.Microsecond)
		b.Field(4).(*array.TimestampBuilder).Append(ts)
	}
	rec := b.NewRecord()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "stats.parquet")
	sourcestest.WriteParquet(t, path, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(group))), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	return path
}

// The footer gives exact rows, NULLs and ranges (a timestamp as a time);
// the sampled distinct counts are within a fifth of the truth for a sorted
// key with repeats, a random foreign key, a unique column and a code, over
// many row groups, one row group, and a file small enough to read whole.
func TestParquetStatsFromFooterAndSample(t *testing.T) {
	for _, tc := range []struct {
		name               string
		rows, group, parts int
	}{
		{"many row groups", 160000, 20000, 8000},
		{"one row group", 120000, 120000, 5000},
		{"read whole", 20000, 3000, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeStatsFile(t, tc.rows, tc.group, tc.parts)
			st, err := ParquetStats(path, []string{"order", "part", "id", "mode"})
			if err != nil {
				t.Fatal(err)
			}
			if st.Rows != float64(tc.rows) {
				t.Fatalf("rows %v, want %d", st.Rows, tc.rows)
			}
			mode := st.Column("mode")
			if mode == nil || mode.Nulls != float64(tc.rows/10) {
				t.Fatalf("mode NULLs %+v, want %d", mode, tc.rows/10)
			}
			order := st.Column("order")
			if !order.HasRange || order.Min != int64(1) || order.Max != int64(tc.rows/4) {
				t.Fatalf("order range %v..%v, want 1..%d", order.Min, order.Max, tc.rows/4)
			}
			ts := st.Column("ts")
			if lo, ok := ts.Min.(time.Time); !ok || lo.Before(time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("ts min %v, want a time from 1992-01-01", ts.Min)
			}
			if ts.Distinct != 0 {
				t.Fatalf("ts distinct %v: not asked for, not sampled", ts.Distinct)
			}
			parts := float64(tc.parts)
			if n := float64(tc.rows); n < 3*parts {
				// Fewer rows than values: about n(1 - e^{-n/parts}) appear.
				parts *= 1 - math.Exp(-n/parts)
			}
			for _, c := range []struct {
				col  string
				want float64
			}{{"order", float64(tc.rows / 4)}, {"part", parts}, {"id", float64(tc.rows)}, {"mode", 7}} {
				got := st.Column(c.col).Distinct
				if got < 0.8*c.want || got > 1.2*c.want {
					t.Errorf("%s: distinct %.0f, want %.0f within 20%%", c.col, got, c.want)
				}
			}
		})
	}
}
