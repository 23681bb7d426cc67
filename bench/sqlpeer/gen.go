package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// The generator is deterministic: every value is a hash (SplitMix64) of its
// row number and a per-column salt, so a data set of n rows is the same on
// every machine and every run, and the bench can cache it by size.

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func h(i int, salt uint64) uint64 { return mix(uint64(i)*0x100000001b3 + salt) }

var (
	returnFlags = []string{"A", "N", "R"}
	lineStatus  = []string{"F", "O"}
	shipModes   = []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	orderStatus = []string{"F", "O", "P"}
	priorities  = []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	day0        = time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	event0      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// table is one generated relation: its columns as tierflow declares them and
// a function that appends row i to builders of those types.
type table struct {
	name string
	cols []column
	rows func(n int) int
	row  func(i, n int, b []array.Builder)
}

type column struct{ name, sqlType, duckType string }

func (t table) schema() *arrow.Schema {
	fs := make([]arrow.Field, len(t.cols))
	for i, c := range t.cols {
		var dt arrow.DataType
		switch c.sqlType {
		case "INT":
			dt = arrow.PrimitiveTypes.Int32
		case "BIGINT":
			dt = arrow.PrimitiveTypes.Int64
		case "DOUBLE":
			dt = arrow.PrimitiveTypes.Float64
		case "VARCHAR":
			dt = arrow.BinaryTypes.String
		case "TIMESTAMP":
			dt = arrow.FixedWidthTypes.Timestamp_us
		case "DATE":
			dt = arrow.FixedWidthTypes.Date32
		default:
			var p, s int32
			if _, err := fmt.Sscanf(c.sqlType, "DECIMAL(%d,%d)", &p, &s); err == nil {
				dt = &arrow.Decimal128Type{Precision: p, Scale: s}
			}
		}
		fs[i] = arrow.Field{Name: c.name, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

func cents(x uint64) float64 { return float64(x) / 100 }

var tables = []table{
	{
		name: "lineitem",
		cols: []column{
			{"l_orderkey", "BIGINT", "BIGINT"}, {"l_partkey", "INT", "INTEGER"}, {"l_suppkey", "INT", "INTEGER"},
			{"l_linenumber", "INT", "INTEGER"}, {"l_quantity", "DOUBLE", "DOUBLE"}, {"l_extendedprice", "DOUBLE", "DOUBLE"},
			{"l_discount", "DOUBLE", "DOUBLE"}, {"l_tax", "DOUBLE", "DOUBLE"}, {"l_returnflag", "VARCHAR", "VARCHAR"},
			{"l_linestatus", "VARCHAR", "VARCHAR"}, {"l_shipdate", "TIMESTAMP", "TIMESTAMP"}, {"l_shipmode", "VARCHAR", "VARCHAR"},
		},
		rows: func(n int) int { return n },
		row: func(i, n int, b []array.Builder) {
			parts := max(n/5, 1)
			qty := h(i, 4)%50 + 1
			b[0].(*array.Int64Builder).Append(int64(i/4 + 1))
			b[1].(*array.Int32Builder).Append(int32(h(i, 1)%uint64(parts) + 1))
			b[2].(*array.Int32Builder).Append(int32(h(i, 2)%10000 + 1))
			b[3].(*array.Int32Builder).Append(int32(i%4 + 1))
			b[4].(*array.Float64Builder).Append(float64(qty))
			b[5].(*array.Float64Builder).Append(float64(qty) * cents(90000+h(i, 5)%1000000))
			b[6].(*array.Float64Builder).Append(float64(h(i, 6)%11) / 100)
			b[7].(*array.Float64Builder).Append(float64(h(i, 7)%9) / 100)
			b[8].(*array.StringBuilder).Append(returnFlags[h(i, 8)%3])
			b[9].(*array.StringBuilder).Append(lineStatus[h(i, 9)%2])
			b[10].(*array.TimestampBuilder).Append(arrow.Timestamp(day0.AddDate(0, 0, int(h(i, 10)%2526)).UnixMicro()))
			b[11].(*array.StringBuilder).Append(shipModes[h(i, 11)%7])
		},
	},
	{
		name: "orders",
		cols: []column{
			{"o_orderkey", "BIGINT", "BIGINT"}, {"o_custkey", "INT", "INTEGER"}, {"o_orderstatus", "VARCHAR", "VARCHAR"},
			{"o_totalprice", "DOUBLE", "DOUBLE"}, {"o_orderdate", "TIMESTAMP", "TIMESTAMP"}, {"o_orderpriority", "VARCHAR", "VARCHAR"},
		},
		rows: func(n int) int { return max((n+3)/4, 1) },
		row: func(i, n int, b []array.Builder) {
			b[0].(*array.Int64Builder).Append(int64(i + 1))
			b[1].(*array.Int32Builder).Append(int32(h(i, 21)%uint64(max(n/40, 1)) + 1))
			b[2].(*array.StringBuilder).Append(orderStatus[h(i, 22)%3])
			b[3].(*array.Float64Builder).Append(cents(100000 + h(i, 23)%50000000))
			b[4].(*array.TimestampBuilder).Append(arrow.Timestamp(day0.AddDate(0, 0, int(h(i, 24)%2406)).UnixMicro()))
			b[5].(*array.StringBuilder).Append(priorities[h(i, 25)%5])
		},
	},
	{
		// events is a stream in event-time order: one reading every 10 ms.
		name: "events",
		cols: []column{{"ts", "TIMESTAMP", "TIMESTAMP"}, {"sensor", "INT", "INTEGER"}, {"value", "DOUBLE", "DOUBLE"}},
		rows: func(n int) int { return n },
		row: func(i, n int, b []array.Builder) {
			b[0].(*array.TimestampBuilder).Append(arrow.Timestamp(event0.UnixMicro() + int64(i)*10_000))
			b[1].(*array.Int32Builder).Append(int32(h(i, 31) % 100))
			b[2].(*array.Float64Builder).Append(cents(h(i, 32) % 100000))
		},
	},
}

const genBatch = 64 * 1024

// generate writes every table of n rows as Parquet and CSV under dir, unless
// a previous run already did (a marker file is written last).
func generate(dir string, n int) error {
	done := filepath.Join(dir, "COMPLETE")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range tables {
		if err := writeTable(dir, t, n); err != nil {
			return fmt.Errorf("generate %s: %w", t.name, err)
		}
	}
	return os.WriteFile(done, []byte(strconv.Itoa(n)+"\n"), 0o644)
}

func writeTable(dir string, t table, n int) error {
	schema := t.schema()
	pf, err := os.Create(filepath.Join(dir, t.name+".parquet"))
	if err != nil {
		return err
	}
	defer pf.Close()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(122880), parquet.WithStats(true))
	pw, err := pqarrow.NewFileWriter(schema, pf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	cf, err := os.Create(filepath.Join(dir, t.name+".csv"))
	if err != nil {
		return err
	}
	defer cf.Close()
	cw := bufio.NewWriterSize(cf, 1<<20)
	for i, c := range t.cols {
		if i > 0 {
			cw.WriteByte(',')
		}
		cw.WriteString(c.name)
	}
	cw.WriteByte('\n')
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	total := t.rows(n)
	for start := 0; start < total; start += genBatch {
		end := min(start+genBatch, total)
		for i := start; i < end; i++ {
			t.row(i, n, rb.Fields())
		}
		rec := rb.NewRecord()
		writeCSV(cw, rec)
		err := pw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := pw.Close(); err != nil {
		return err
	}
	return cw.Flush()
}

func writeCSV(w *bufio.Writer, rec arrow.Record) {
	var buf []byte
	for r := 0; r < int(rec.NumRows()); r++ {
		buf = buf[:0]
		for c := 0; c < int(rec.NumCols()); c++ {
			if c > 0 {
				buf = append(buf, ',')
			}
			switch a := rec.Column(c).(type) {
			case *array.Int32:
				buf = strconv.AppendInt(buf, int64(a.Value(r)), 10)
			case *array.Int64:
				buf = strconv.AppendInt(buf, a.Value(r), 10)
			case *array.Float64:
				buf = strconv.AppendFloat(buf, a.Value(r), 'f', -1, 64)
			case *array.String:
				buf = append(buf, a.Value(r)...)
			case *array.Timestamp:
				buf = time.UnixMicro(int64(a.Value(r))).UTC().AppendFormat(buf, "2006-01-02 15:04:05.000")
			}
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
}
