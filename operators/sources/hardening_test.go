package sources

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// drain reads r to the end and returns the rows or the first error.
func drain(mem memory.Allocator, r Reader) (int, error) {
	n := 0
	for {
		rec, err := r.Next(mem)
		if err != nil {
			return n, err
		}
		if rec == nil {
			return n, nil
		}
		n += int(rec.NumRows())
		rec.Release()
	}
}

// One rule for empty CSV fields, as PostgreSQL's COPY: unquoted empty is
// NULL in every column type, a quoted "" is the empty string (which only a
// VARCHAR holds). The file reader and the row builder of NATS messages
// share it.
func TestCSVEmptyFieldRule(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	}, nil)
	path := write(t, "e.csv", "s,i,d,b,t\n,,,,\n\"\",1,2,true,2024-01-01\n\"x\",\"\",,,\n")
	rep := &Report{}
	r, err := OpenCSV(path, schema, 10, Skip, rep)
	if err != nil {
		t.Fatal(err)
	}
	rows := readAll(t, mem, r)
	r.Close()
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	for j, v := range rows[0] {
		if v != nil {
			t.Errorf("unquoted empty field %d read as %#v, want NULL", j, v)
		}
	}
	if rows[1][0] != "" {
		t.Errorf(`quoted "" read as %#v, want the empty string`, rows[1][0])
	}
	if msgs := rep.Messages(); rep.BadRows.Load() != 1 || !strings.Contains(msgs[0], path+":4:") || !strings.Contains(msgs[0], "quoted empty string") {
		t.Errorf(`quoted "" in a BIGINT: %v`, msgs)
	}

	// The same lines as NATS messages (no header) through RowBuilder.
	rb := NewRowBuilder(mem, schema)
	sc := NewCSVScanner(strings.NewReader(",,,,\n\"\",1,2,true,2024-01-01\n"))
	for {
		fields, _, err := sc.Read()
		if err != nil {
			break
		}
		if err := rb.AppendCSV(fields); err != nil {
			t.Fatal(err)
		}
	}
	rec := rb.Finish()
	defer rec.Release()
	if rec.NumRows() != 2 || !rec.Column(0).IsNull(0) || rec.Column(0).IsNull(1) || rec.Column(0).(*array.String).Value(1) != "" || !rec.Column(1).IsNull(0) {
		t.Fatalf("row builder: %v", rec)
	}
}

// A quote left open used to panic in encoding/csv's FieldPos; now it is a
// bad row at the line where the quote opened (skipped under Skip).
func TestCSVUnterminatedQuote(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, schema := range []*arrow.Schema{nil, declared} {
		path := write(t, "q.csv", "id,name,ts,score\n1,a,2024-01-01,1\n2,\"b,2024-01-02,2\n3,c,2024-01-03,3\n")
		r, err := OpenCSV(path, schema, 10, Fail, nil)
		if err == nil {
			_, err = drain(mem, r)
			r.Close()
		}
		if !errors.Is(err, ErrBadRow) || !errors.Is(err, ErrCSVSyntax) || !strings.Contains(err.Error(), path+":3:") || !strings.Contains(err.Error(), "not closed") {
			t.Fatalf("schema %v: %v", schema != nil, err)
		}
		rep := &Report{}
		r, err = OpenCSV(path, schema, 10, Skip, rep)
		if err != nil {
			t.Fatal(err)
		}
		n, err := drain(mem, r)
		r.Close()
		if err != nil || n != 1 || rep.BadRows.Load() != 1 {
			t.Fatalf("skip: %d rows, %d bad, %v", n, rep.BadRows.Load(), err)
		}
	}
}

// Tables and streams without columns take their file's (InferSchema):
// names from the CSV header (empty and repeated names made unique, as
// DuckDB does), types from the rows, NULLs allowed; Parquet and Arrow files
// carry theirs.
func TestInferSchemaEveryFormat(t *testing.T) {
	csv := write(t, "x.csv", "n,x,ok,at,s,,n\n1,1.5,true,2024-01-01 10:00:00,a,u,7\n,2,false,,\"\",v,8\n3,,,2024-01-02,c,w,\n")
	s, err := InferSchema(csv, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "n:int64 x:float64 ok:bool at:timestamp[us, tz=UTC] s:utf8 column5:utf8 n_1:int64"
	if got := fields(s); got != want {
		t.Errorf("csv:\n got %s\nwant %s", got, want)
	}
	jl := write(t, "x.jsonl", `{"id": 1, "v": 0.5, "tag": "a", "on": true}
{"id": null, "v": 2, "tag": null, "on": false, "late": "2024-01-01T00:00:00Z"}
`)
	if s, err = InferSchema(jl, "json"); err != nil {
		t.Fatal(err)
	}
	if got, want := fields(s), "id:int64 v:float64 tag:utf8 on:bool late:timestamp[us, tz=UTC]"; got != want {
		t.Errorf("jsonl:\n got %s\nwant %s", got, want)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sampleRecord(mem)
	defer rec.Release()
	for _, f := range []string{"parquet", "arrow", "stream"} {
		p := writeFormat(t, f, rec)
		s, err := InferSchema(p, map[string]string{"stream": "arrow"}[f]+map[bool]string{true: f}[f != "stream"])
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.NumFields() != 3 || s.Field(0).Name != "k" || s.Field(2).Type.ID() != arrow.TIMESTAMP {
			t.Errorf("%s: %s", f, s)
		}
	}
	if _, err := InferSchema(write(t, "empty.csv", ""), "csv"); !errors.Is(err, ErrBadFile) {
		t.Errorf("empty csv: %v", err)
	}
	if _, err := InferSchema(filepath.Join(t.TempDir(), "missing.csv"), "csv"); !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

func fields(s *arrow.Schema) string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name+":"+f.Type.String())
	}
	return strings.Join(out, " ")
}

// sampleRecord has a string key, a float and a naive millisecond timestamp.
func sampleRecord(mem memory.Allocator) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < 5; i++ {
		b.Field(0).(*array.StringBuilder).Append(string(rune('a' + i)))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + int64(i)))
	}
	return b.NewRecord()
}

// writeFormat writes rec as parquet, an Arrow IPC file ("arrow") or an
// Arrow IPC stream ("stream").
func writeFormat(t testing.TB, format string, recs ...arrow.Record) string {
	t.Helper()
	p := filepath.Join(t.(interface{ TempDir() string }).TempDir(), "x."+format)
	buf, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	switch format {
	case "parquet":
		w, err := pqarrow.NewFileWriter(recs[0].Schema(), buf, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case "arrow":
		w, err := ipc.NewFileWriter(buf, ipc.WithSchema(recs[0].Schema()))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
	case "stream":
		w := ipc.NewWriter(buf, ipc.WithSchema(recs[0].Schema()))
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
	}
	return p
}

// A truncated or damaged Arrow IPC file or stream is an error naming the
// file, never a panic of arrow/go's reader: every prefix of a good file, and
// the file with any one byte of its metadata flipped.
func TestIPCCorruptIsAnError(t *testing.T) {
	// Not a checked allocator: a reader that panicked part-way has left
	// its buffers to the garbage collector.
	mem := memory.NewGoAllocator()
	rec := sampleRecord(mem)
	defer rec.Release()
	for _, f := range []string{"arrow", "stream"} {
		good, err := os.ReadFile(writeFormat(t, f, rec, rec))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "bad."+f)
		try := func(data []byte, what string) {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := OpenIPC(path, nil, mem, Fail, nil)
			if err == nil {
				_, err = drain(mem, r)
				r.Close()
			}
			// A flipped byte in string data is a bad row (not UTF-8).
			if err != nil && (!errors.Is(err, ErrBadFile) && !errors.Is(err, ErrInvalidUTF8) || !strings.Contains(err.Error(), path)) {
				t.Errorf("%s %s: %v", f, what, err)
			}
		}
		for n := 0; n < len(good); n += 3 {
			try(good[:n], "truncated")
		}
		for i := 0; i < len(good); i += 5 {
			bad := append([]byte(nil), good...)
			bad[i] ^= 0xA5
			try(bad, "flipped")
		}
	}
}

// A malformed Parquet file used to leak the file descriptor arrow/go's
// OpenParquetFile opened; every failed open now closes it.
func TestParquetBadFileClosesDescriptor(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd here")
	}
	count := func() int {
		es, _ := os.ReadDir("/proc/self/fd")
		return len(es)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sampleRecord(mem)
	defer rec.Release()
	good, _ := os.ReadFile(writeFormat(t, "parquet", rec))
	cases := map[string][]byte{
		"garbage":      []byte("garbage, not parquet"),
		"no footer":    good[:len(good)-3],
		"footer only":  append([]byte("PAR1"), good[len(good)-8:]...),
		"bad metadata": append(append(append([]byte(nil), good[:len(good)-40]...), bytes.Repeat([]byte{0xff}, 32)...), good[len(good)-8:]...),
	}
	for name, data := range cases {
		path := write(t, "bad.parquet", string(data))
		before := count()
		for i := 0; i < 50; i++ {
			r, err := OpenParquet(path, nil, 10, mem, Fail, nil)
			if err == nil {
				_, err = drain(mem, r)
				r.Close()
			}
			if err == nil || !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), path) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if after := count(); after > before {
			t.Errorf("%s: %d file descriptors left open by 50 failed opens", name, after-before)
		}
	}
}

// Parquet and Arrow timestamps in s, ms or ns, zoned or naive, read as the
// engine's TIMESTAMP (microseconds, UTC) where they were refused.
func TestTimestampsCoerced(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	at := time.Date(2024, 3, 1, 12, 30, 15, 123456000, time.UTC)
	types := []arrow.DataType{
		&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Microsecond}, // naive
		&arrow.TimestampType{Unit: arrow.Nanosecond},  // naive
		&arrow.TimestampType{Unit: arrow.Second, TimeZone: "Europe/Paris"},
	}
	var fs []arrow.Field
	var want []arrow.Field
	for i, dt := range types {
		name := string(rune('a' + i))
		fs = append(fs, arrow.Field{Name: name, Type: dt, Nullable: true})
		want = append(want, arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true})
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fs, nil))
	for i, dt := range types {
		ts, err := arrow.TimestampFromTime(at, dt.(*arrow.TimestampType).Unit)
		if err != nil {
			t.Fatal(err)
		}
		b.Field(i).(*array.TimestampBuilder).Append(ts)
		b.Field(i).(*array.TimestampBuilder).AppendNull()
	}
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	for _, f := range []string{"parquet", "arrow"} {
		path := writeFormat(t, f, rec)
		var r Reader
		var err error
		if f == "parquet" {
			r, err = OpenParquet(path, arrow.NewSchema(want, nil), 10, mem, Fail, nil)
		} else {
			r, err = OpenIPC(path, arrow.NewSchema(want, nil), mem, Fail, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		rows := readAll(t, mem, r)
		r.Close()
		if len(rows) != 2 {
			t.Fatalf("%s: %v", f, rows)
		}
		for j, dt := range types {
			w := at.Truncate(map[arrow.TimeUnit]time.Duration{arrow.Second: time.Second, arrow.Millisecond: time.Millisecond}[dt.(*arrow.TimestampType).Unit] + time.Microsecond*0)
			if dt.(*arrow.TimestampType).Unit >= arrow.Microsecond {
				w = at
			}
			if got, ok := rows[0][j].(time.Time); !ok || !got.Equal(w) || rows[1][j] != nil {
				t.Errorf("%s column %s (%s): %v, %v; want %v", f, fs[j].Name, dt, rows[0][j], rows[1][j], w)
			}
		}
	}
}

// Strings that are not UTF-8 break Arrow's contract: every reader refuses
// the row with file and row (line for text formats); under Skip the row is
// left out and counted.
func TestInvalidUTF8(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	bad := string([]byte{'o', 0xff, 'k'})
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i, s := range []string{"a", bad, "c"} {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		b.Field(1).(*array.StringBuilder).Append(s)
	}
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	paths := map[string]string{
		"csv":     write(t, "u.csv", "id,s\n1,a\n2,"+bad+"\n3,c\n"),
		"json":    write(t, "u.jsonl", `{"id":1,"s":"a"}`+"\n"+`{"id":2,"s":"`+bad+`"}`+"\n"+`{"id":3,"s":"c"}`+"\n"),
		"parquet": writeFormat(t, "parquet", rec),
		"arrow":   writeFormat(t, "arrow", rec),
	}
	open := func(f string, policy OnError, rep *Report) Reader {
		var r Reader
		var err error
		switch f {
		case "csv":
			r, err = OpenCSV(paths[f], schema, 10, policy, rep)
		case "json":
			r, err = OpenJSONL(paths[f], schema, 10, policy, rep)
		case "parquet":
			r, err = OpenParquet(paths[f], schema, 10, mem, policy, rep)
		case "arrow":
			r, err = OpenIPC(paths[f], schema, mem, policy, rep)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return r
	}
	where := map[string]string{"csv": ":3:", "json": ":2:", "parquet": ": row 2:", "arrow": ": row 2:"}
	for f, path := range paths {
		r := open(f, Fail, nil)
		_, err := drain(mem, r)
		r.Close()
		if !errors.Is(err, ErrBadRow) || !errors.Is(err, ErrInvalidUTF8) || !strings.Contains(err.Error(), path+where[f]) {
			t.Errorf("%s fail: %v", f, err)
		}
		rep := &Report{}
		r = open(f, Skip, rep)
		rows := readAll(t, mem, r)
		r.Close()
		if len(rows) != 2 || rows[0][0] != int64(1) || rows[1][0] != int64(3) || rep.BadRows.Load() != 1 {
			t.Errorf("%s skip: %v, %d bad", f, rows, rep.BadRows.Load())
		}
	}
}
