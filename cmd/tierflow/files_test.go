package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// writeArrowFiles writes the same rows as Parquet, an Arrow IPC file and an
// Arrow IPC stream under dir.
func writeArrowFiles(t *testing.T, dir string) {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < 4; i++ {
		b.Field(0).(*array.StringBuilder).Append(string(rune('a' + i)))
		b.Field(1).(*array.Int32Builder).Append(int32(i))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(1_700_000_000+i) * 1e9))
	}
	rec := b.NewRecord()
	defer rec.Release()
	create := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := create("x.parquet")
	pw, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	pw.Write(rec)
	pw.Close()
	f = create("x.arrow")
	fw, _ := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	fw.Write(rec)
	fw.Close()
	f.Close()
	f = create("x.stream")
	sw := ipc.NewWriter(f, ipc.WithSchema(schema))
	sw.Write(rec)
	sw.Close()
	f.Close()
}

// A table or stream without a column list takes its file's schema (names
// from the header, types from the rows), in `run` as in the REPL; before,
// the planner dereferenced the missing columns and the process panicked.
func TestRunInfersFileSchemas(t *testing.T) {
	dir := t.TempDir()
	writeArrowFiles(t, dir)
	os.WriteFile(filepath.Join(dir, "x.csv"), []byte("k,n,x,ok,at\na,1,1.5,true,2024-01-01 00:00:01\nb,,2,false,2024-01-01 00:00:12\n\"\",3,,,2024-01-01 00:00:13\n"), 0o644)
	q := filepath.Join(dir, "q.sql")
	os.WriteFile(q, []byte(`CREATE TABLE t FROM FILE 'x.csv' FORMAT CSV;
CREATE STREAM s FROM FILE 'x.csv';
CREATE TABLE p FROM FILE 'x.parquet' FORMAT PARQUET;
CREATE TABLE a FROM FILE 'x.arrow' FORMAT ARROW;
CREATE TABLE st FROM FILE 'x.stream' FORMAT ARROW;
SELECT k, n + 1 AS m, x * 2 AS y, ok FROM t;
SELECT count(*) AS c, sum(n) AS total FROM s GROUP BY TUMBLE(at, INTERVAL '10' SECOND);
SELECT sum(n) AS sp, max(at) AS last FROM p;
SELECT sum(n) AS sa FROM a;
SELECT sum(n) AS ss FROM st;
`), 0o644)
	for _, mode := range [][]string{{"--local"}, {}} {
		code, out, errs := runCLI(t, "", append(append([]string{"run", "--format", "csv"}, mode...), q)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", mode, code, errs)
		}
		for _, want := range []string{
			"k,m,y,ok\na,2,3,true\nb,,4,false\n\"\",4,,\n", // NULL empty, "" kept
			"c,total\n1,1\n2,3\n",
			"sp,last\n6,2023-11-14 22:13:23\n",
			"sa\n6\n", "ss\n6\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: want %q in:\n%s", mode, want, out)
			}
		}
	}
}

// Broken files of every format end with exit 2 and one line naming the file
// and where in it, never a panic, on the local executor and the embedded
// cluster alike.
func TestRunBrokenFilesAreBadInput(t *testing.T) {
	dir := t.TempDir()
	writeArrowFiles(t, dir)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pq, af, as := read("x.parquet"), read("x.arrow"), read("x.stream")
	cases := []struct {
		name, file, format, cols string
		data                     []byte
		where                    string
	}{
		{"unterminated quote", "q.csv", "CSV", "", []byte("a,b\n1,x\n2,\"y\n3,z\n"), "q.csv:3: "},
		{"csv not UTF-8", "u.csv", "CSV", "(a BIGINT, b VARCHAR)", []byte("a,b\n1,ok\n2,\xff\xfe\n"), "u.csv:3: "},
		{"json not UTF-8", "u.jsonl", "JSON", "(a BIGINT, b VARCHAR)", []byte("{\"a\":1,\"b\":\"\xff\"}\n"), "u.jsonl:1: "},
		{"parquet garbage", "g.parquet", "PARQUET", "", []byte("not a parquet file at all"), "g.parquet: "},
		{"parquet truncated", "t.parquet", "PARQUET", "(k VARCHAR)", pq[:len(pq)/2], "t.parquet: "},
		{"arrow file truncated", "t.arrow", "ARROW", "", af[:len(af)-20], "t.arrow: "},
		{"arrow stream truncated", "t.stream", "ARROW", "(k VARCHAR, n INT)", as[:len(as)*2/3], "t.stream: "},
		{"missing", "none.csv", "CSV", "", nil, "none.csv"},
	}
	for _, c := range cases {
		if c.data != nil {
			os.WriteFile(filepath.Join(dir, c.file), c.data, 0o644)
		}
		q := filepath.Join(dir, "q.sql")
		os.WriteFile(q, []byte("CREATE TABLE t "+c.cols+" FROM FILE '"+c.file+"' FORMAT "+c.format+";\nSELECT * FROM t;\n"), 0o644)
		for _, mode := range []string{"--local", "--on-error=fail"} {
			code, _, errs := runCLI(t, "", "run", mode, q)
			var msg []string
			for _, l := range strings.Split(errs, "\n") {
				if strings.HasPrefix(l, "tierflow: ") {
					msg = append(msg, l)
				}
			}
			if code != exitBadInput || len(msg) != 1 || !strings.Contains(msg[0], c.where) || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine ") {
				t.Errorf("%s (%s): exit %d, stderr:\n%s", c.name, mode, code, errs)
			}
		}
	}
}
