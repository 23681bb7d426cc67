package sources

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// A CSV stream over a small file takes buffers and a batch sized to it: a
// glob's partitions are all read at once, and 20,000 one-row files took
// two 64 KiB buffers and a 4,096-row batch each (877 MiB beside a query
// limit of 16 MiB). Bytes allocated to open and read a one-row file, read
// from the runtime's count.
func TestCSVStreamOverASmallFileTakesLittle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.csv")
	if err := os.WriteFile(path, []byte("id,ts\n7,2026-01-01 00:00:00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}}, nil)
	read := func() (uint64, int64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, err := OpenCSV(path, schema, 4096, Fail, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows := int64(0)
		for {
			rec, err := r.Next(memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if rec == nil {
				break
			}
			rows += rec.NumRows()
			rec.Release()
		}
		r.Close()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, rows
	}
	read() // warm: the parser's tables, built once
	alloc, rows := read()
	if rows != 1 {
		t.Fatalf("%d rows, want 1", rows)
	}
	if alloc > 32<<10 {
		t.Errorf("a one-row file took %d bytes to read, want its size's worth (under 32 KiB)", alloc)
	}
	t.Logf("%d bytes", alloc)
}
