package sources

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// A line is held whole to be parsed, outside the query's charged memory: a
// 300 MB line grew a worker 300 MB beside a 16 MiB query limit, and a file
// without a line break would have grown it until it died. Read with a
// bound (the query's limit), a line past it fails the read as a memory
// limit, naming the line, having allocated a few times the bound at most,
// on every path: a stream's typed read, a table's parallel chunks, the
// scanner (a quoted field), the header; a line within the bound reads.
func TestALineLongerThanTheBoundFails(t *testing.T) {
	const bound = 1 << 20
	long := strings.Repeat("x", 64<<20)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		table      bool
		line       string
	}{
		{"stream", "id,s\n1,a\n2," + long + "\n3,c\n", false, "line 3"},
		{"table", "id,s\n1,a\n2," + long + "\n3,c\n", true, "line 3"},
		{"quoted", "id,s\n1,a\n2,\"" + long + "\"\n3,c\n", false, "line 3"},
		{"header", "id,s" + long + "\n1,a\n", true, "line 1"},
	} {
		path := filepath.Join(dir, c.name+".csv")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		open := OpenCSVLimited
		if c.table {
			open = OpenCSVTableLimited
		}
		var err error
		var r *CSVReader
		if r, err = open(path, schema, 1024, Fail, nil, bound); err == nil {
			for {
				var rec arrow.Record
				if rec, err = r.Next(memory.DefaultAllocator); err != nil || rec == nil {
					break
				}
				rec.Release()
			}
			r.Close()
		}
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrLineTooLong) || !errors.Is(err, dataflow.ErrMemory) || !strings.Contains(err.Error(), c.line) {
			t.Errorf("%s: %v, want the read failed for its %s past the bound", c.name, err, c.line)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 8*bound {
			t.Errorf("%s: allocated %d MiB to refuse a 64 MiB line at a 1 MiB bound", c.name, got>>20)
		}
	}
	// JSON lines: the scanner's token bound is the query's.
	jpath := filepath.Join(dir, "long.jsonl")
	os.WriteFile(jpath, []byte(`{"id": 1, "s": "a"}`+"\n"+`{"id": 2, "s": "`+long+`"}`+"\n"), 0o644)
	jr, err := OpenJSONLLimited(jpath, schema, 1024, Fail, nil, bound)
	if err == nil {
		for {
			var rec arrow.Record
			if rec, err = jr.Next(memory.DefaultAllocator); err != nil || rec == nil {
				break
			}
			rec.Release()
		}
		jr.Close()
	}
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("json lines: %v, want the read failed for its line 2 past the bound", err)
	}
	// Within the bound: read.
	path := filepath.Join(dir, "fits.csv")
	os.WriteFile(path, []byte("id,s\n1,"+strings.Repeat("y", bound/2)+"\n"), 0o644)
	r, err := OpenCSVLimited(path, schema, 1024, Fail, nil, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next(memory.DefaultAllocator)
	if err != nil || rec == nil || rec.NumRows() != 1 {
		t.Fatalf("a line within the bound: %v %v", rec, err)
	}
	rec.Release()
}
