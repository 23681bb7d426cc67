package exec

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// A Parquet file rewritten (a query's file sink another query reads as a
// table) replaces its cached statistics: the cache kept one entry per
// version of the file, for the life of the process, and grows no more than
// its files now, while each version's rows are the ones planned with.
func TestFileStatsKeepOneEntryPerFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	entries := func() int {
		fileStatsCache.Lock()
		defer fileStatsCache.Unlock()
		return len(fileStatsCache.m)
	}
	before := entries()
	for v := 1; v <= 5; v++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := range v * 10 {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
		}
		rec := b.NewRecord()
		src := writeParquet(t, "t.parquet", rec, nil)
		rec.Release()
		b.Release()
		if err := os.Rename(src, path); err != nil {
			t.Fatal(err)
		}
		// A modification time of its own, as a later write has.
		at := time.Now().Add(time.Duration(v) * time.Second)
		os.Chtimes(path, at, at)
		st, err := FileStats{}.TableStats(path, "parquet", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != float64(v*10) {
			t.Fatalf("version %d: %g rows, want %d", v, st.Rows, v*10)
		}
		if got := entries() - before; got != 1 {
			t.Fatalf("version %d: the cache holds %d entries for the file, want 1", v, got)
		}
	}
}
