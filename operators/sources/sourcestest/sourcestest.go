// Package sourcestest writes files that tests of the sources, and of a
// cluster reading them, share.
package sourcestest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// ParquetPageBomb writes a Parquet file whose one column of rows zeros is a
// single page (no dictionary, zstd): a few KB on disk, 8 bytes a row once
// its page is decompressed. Returns the path and the file's size.
func ParquetPageBomb(t *testing.T, rows int) (string, int64) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "z", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(make([]int64, rows), nil)
	col := b.NewArray()
	rec := array.NewRecord(schema, []arrow.Array{col}, int64(rows))
	defer rec.Release()
	col.Release()
	path := filepath.Join(t.TempDir(), "bomb.parquet")
	WriteParquet(t, path, rec, parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithDataPageSize(1<<30), parquet.WithMaxRowGroupLength(int64(rows)), parquet.WithStats(false)), pqarrow.DefaultWriterProps())
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, st.Size()
}

// WriteParquet writes rec to a Parquet file at path with props (the
// writer's) and arrowProps (how Arrow types are stored).
func WriteParquet(t testing.TB, path string, rec arrow.Record, props *parquet.WriterProperties, arrowProps pqarrow.ArrowWriterProperties) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, props, arrowProps)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
