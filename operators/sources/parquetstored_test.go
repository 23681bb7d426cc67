package sources

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/operators/sources/sourcestest"
)

// writeStoredFile writes DATE, DECIMAL(9,2) (INT32), DECIMAL(15,2) (INT64)
// and DECIMAL(30,4) (FIXED_LEN_BYTE_ARRAY) columns with NULLs over several
// row groups, and negative values.
func writeStoredFile(t *testing.T, rows, group int) (string, *arrow.Schema) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "m9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
		{Name: "m15", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "m30", Type: &arrow.Decimal128Type{Precision: 30, Scale: 4}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		v := int64(i*7919%20000 - 10000)
		if i%11 == 3 {
			for f := range 4 {
				b.Field(f).AppendNull()
			}
			continue
		}
		b.Field(0).(*array.Date32Builder).Append(arrow.Date32(v))
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(v * 1000))
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(v * 1e12))
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.New(v>>63, uint64(v)).Mul(decimal128.FromI64(1e15)))
	}
	rec := b.NewRecord()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "stored.parquet")
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(group)), parquet.WithStoreDecimalAsInteger(true))
	sourcestest.WriteParquet(t, path, rec, props, pqarrow.NewArrowWriterProperties())
	return path, schema
}

// DATE and integer-stored DECIMAL columns, decoded as their stored integers
// and turned into their types (readAsStored), read the values and NULLs
// arrow/go's own decoding gives, sequentially, on parallel row-group
// workers, and with a column read alone.
func TestStoredIntegersReadAsTheirTypes(t *testing.T) {
	path, schema := writeStoredFile(t, 5000, 700)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fr.ReadTable(context.Background())
	pf.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	if n := len(readAsStored(fr)); n != 3 {
		t.Fatalf("%d columns read as stored integers, want 3 (DATE, DECIMAL(9,2), DECIMAL(15,2))", n)
	}
	for _, sub := range []*arrow.Schema{schema, arrow.NewSchema([]arrow.Field{schema.Field(2)}, nil)} {
		for name, open := range map[string]func() (Reader, error){
			"sequential": func() (Reader, error) {
				return OpenParquet(path, sub, 512, memory.DefaultAllocator, Fail, nil)
			},
			"parallel": func() (Reader, error) {
				return OpenParquetTable(path, sub, 512, memory.DefaultAllocator, Fail, nil)
			},
		} {
			r, err := open()
			if err != nil {
				t.Fatal(err)
			}
			row := 0
			for {
				rec, err := r.Next(memory.DefaultAllocator)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if rec == nil {
					break
				}
				for c, f := range sub.Fields() {
					got := rec.Column(c)
					if !arrow.TypeEqual(got.DataType(), f.Type) {
						t.Fatalf("%s %s: %s, want %s", name, f.Name, got.DataType(), f.Type)
					}
					w := array.NewChunkedSlice(want.Column(schema.FieldIndices(f.Name)[0]).Data(), int64(row), int64(row)+rec.NumRows())
					wa, err := array.Concatenate(w.Chunks(), memory.DefaultAllocator)
					if err != nil {
						t.Fatal(err)
					}
					if !array.Equal(got, wa) {
						t.Fatalf("%s %s rows %d..: %v, want %v", name, f.Name, row, got, wa)
					}
					wa.Release()
					w.Release()
				}
				row += int(rec.NumRows())
				rec.Release()
			}
			r.Close()
			if row != 5000 {
				t.Fatalf("%s: %d rows, want 5000", name, row)
			}
		}
	}
}

// BenchmarkParquetStoredIntegers: a file of DATE and DECIMAL(9,2) and
// DECIMAL(15,2) columns (TPC-H lineitem's dates and money) decoded to
// those types by arrow/go (the baseline: value by value through reflect)
// and as stored integers turned into them (readAsStored, fromStored),
// alternately in one process; ratio is the latter's time over the
// baseline's.
func BenchmarkParquetStoredIntegers(b *testing.B) {
	path, schema := writeStoredFile(&testing.T{}, 400000, 122880)
	read := func(stored bool) time.Duration {
		start := time.Now()
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			b.Fatal(err)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 16384}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		var types map[string]arrow.DataType
		if stored {
			types = readAsStored(fr)
		}
		rr, err := fr.GetRecordReader(context.Background(), []int{0, 1, 2}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer rr.Release()
		n := 0
		for rr.Next() {
			rec := rr.Record()
			for c := range 3 {
				if to := types[schema.Field(c).Name]; to != nil {
					fromStored(memory.DefaultAllocator, rec.Column(c), to).Release()
				}
			}
			n += int(rec.NumRows())
		}
		if n != 400000 {
			b.Fatal(n)
		}
		return time.Since(start)
	}
	var base, ours time.Duration
	for range b.N {
		base += read(false)
		ours += read(true)
	}
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "baseline-µs/op")
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "stored-µs/op")
	b.ReportMetric(ours.Seconds()/base.Seconds(), "ratio")
}
