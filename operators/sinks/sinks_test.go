package sinks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/functions"
	"github.com/tierflow/tierflow/operators/sources"
)

func sample(t *testing.T, mem memory.Allocator) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "window_end", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "avg", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	vals := [][]any{{int64(1), nil}, {"a,b", "z"}, {time.Date(2024, 1, 1, 0, 0, 10, 0, time.UTC), nil}, {2.5, nil}}
	cols := make([]arrow.Array, 4)
	for i, v := range vals {
		a, err := functions.ArrayOf(mem, schema.Field(i).Type, v)
		if err != nil {
			t.Fatal(err)
		}
		cols[i] = a
	}
	rec := array.NewRecord(schema, cols, 2)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func TestTextSinks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sample(t, mem)
	defer rec.Release()
	for _, tc := range []struct{ format, want string }{
		{"csv", "k,name,window_end,avg\n1,\"a,b\",2024-01-01 00:00:10,2.5\n,z,,\n"},
		// A FORMAT JSON sink writes JSON lines, as DuckDB's COPY does, with
		// timestamps as DuckDB prints them.
		{"json", `{"k":1,"name":"a,b","window_end":"2024-01-01 00:00:10","avg":2.5}` + "\n" + `{"k":null,"name":"z","window_end":null,"avg":null}` + "\n"},
		{"table", "|    k | name | window_end          |  avg |\n+------+------+---------------------+------+\n|    1 | a,b  | 2024-01-01 00:00:10 |  2.5 |\n| NULL | z    | NULL                | NULL |\n(2 rows)\n"},
	} {
		var buf bytes.Buffer
		w, err := New(tc.format, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.format, buf.String(), tc.want)
		}
	}
	if _, err := New("xml", nil); err == nil {
		t.Fatal("xml accepted")
	}
}

// TestJSONArray: the CLI's --format json is one array, as DuckDB's CLI
// prints .mode json (it was JSON lines): a row a line, "[]" for none.
func TestJSONArray(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sample(t, mem)
	defer rec.Release()
	var buf bytes.Buffer
	w := NewJSONArray(&buf)
	for range 2 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	row1 := `{"k":1,"name":"a,b","window_end":"2024-01-01 00:00:10","avg":2.5}`
	row2 := `{"k":null,"name":"z","window_end":null,"avg":null}`
	if want := "[" + row1 + ",\n" + row2 + ",\n" + row1 + ",\n" + row2 + "]\n"; buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	var rows []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rows); err != nil || len(rows) != 4 {
		t.Errorf("not one JSON array of 4 rows: %v, %d", err, len(rows))
	}
	buf.Reset()
	if err := NewJSONArray(&buf).Close(); err != nil || buf.String() != "[]\n" {
		t.Errorf("an empty result: %q, %v; want []", buf.String(), err)
	}
}

func TestParquetSinkReadsBack(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sample(t, mem)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "out.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewParquet(f)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := sources.OpenParquet(path, nil, 100, mem, sources.Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Next(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumRows() != 2 || functions.ValueAt(got.Column(1), 0) != "a,b" || !strings.Contains(got.Schema().String(), "window_end") {
		t.Fatalf("read back %v", got)
	}
}

// The CSV writer keeps the rule the CSV sources read: NULL is an empty
// field, the empty string is "" (it used to write both as nothing, so an
// empty string came back as NULL); what it writes reads back the same.
func TestCSVWritesNullAndEmptyApart(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"", "", "a,\"b\"", " x"}, []bool{true, false, true, true})
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 0, 3, 4}, []bool{true, false, true, true})
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	var buf bytes.Buffer
	w := NewCSV(&buf)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if want := "s,n\n\"\",1\n,\n\"a,\"\"b\"\"\",3\n\" x\",4\n"; buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
	p := filepath.Join(t.TempDir(), "o.csv")
	os.WriteFile(p, buf.Bytes(), 0o644)
	r, err := sources.OpenCSV(p, schema, 10, sources.Fail, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	back, err := r.Next(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Release()
	if !array.RecordEqual(back, rec) {
		t.Fatalf("read back %v, wrote %v", back, rec)
	}
}
