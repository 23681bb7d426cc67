package sources

import (
	"os"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
)

// A Parquet file opened again unchanged shares the footer parsed the first
// time; rewritten, it is parsed anew (its row count is the new one); the
// cache keeps at most its bound of serialized footers, dropping the oldest.
func TestParquetFooterIsParsedOncePerFileVersion(t *testing.T) {
	path := writeLineitemLike(t, 3000, 1000)
	open := func() *file.Reader {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		pf, err := newParquetReader(f, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		return pf
	}
	a, b := open(), open()
	if a.MetaData() != b.MetaData() {
		t.Fatal("the second open parsed the footer again")
	}
	if got := b.NumRows(); got != 3000 {
		t.Fatalf("%d rows from the shared footer, want 3000", got)
	}
	// Rewritten (another size), the file's footer is its own.
	other := writeLineitemLike(t, 5000, 1000)
	data, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := open(); c.MetaData() == a.MetaData() || c.NumRows() != 5000 {
		t.Fatalf("after a rewrite: %d rows (same footer: %v), want 5000 from a new footer", c.NumRows(), c.MetaData() == a.MetaData())
	}

	// The bound: room for two footers of this size.
	small := footerCache{max: 2*a.MetaData().Size() + 1}
	keys := []footerKey{{"a", 1, time.Unix(1, 0)}, {"b", 1, time.Unix(1, 0)}, {"c", 1, time.Unix(1, 0)}}
	for _, k := range keys {
		small.put(k, a.MetaData())
	}
	if small.get(keys[0]) != nil || small.get(keys[1]) == nil || small.get(keys[2]) == nil || small.bytes > small.max {
		t.Fatalf("bound %d: kept %d bytes, a %v b %v c %v", small.max, small.bytes, small.get(keys[0]) != nil, small.get(keys[1]) != nil, small.get(keys[2]) != nil)
	}
}

// BenchmarkParquetFooter opens a file of 122 row groups (a lineitem of 1M
// rows in groups of 8,192) and reads its metadata: parsing the footer every
// time (arrow/go's reader, the baseline) and through the footer cache
// (newParquetReader), alternating; ratio is the cached open's time over
// the baseline's.
func BenchmarkParquetFooter(b *testing.B) {
	path := writeLineitemLike(b, 1_000_000, 8192)
	open := func(cached bool) time.Duration {
		start := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var pf *file.Reader
		if cached {
			pf, err = newParquetReader(f, memory.DefaultAllocator)
		} else {
			pf, err = file.NewParquetReader(f, file.WithReadProps(parquetReadProps(memory.DefaultAllocator)))
		}
		if err != nil || pf.NumRowGroups() != 123 {
			b.Fatal(err, pf.NumRowGroups())
		}
		return time.Since(start)
	}
	var base, ours time.Duration
	b.ResetTimer()
	for range b.N {
		base += open(false)
		ours += open(true)
	}
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "baseline-µs/op")
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "cached-µs/op")
	b.ReportMetric(ours.Seconds()/base.Seconds(), "ratio")
}
