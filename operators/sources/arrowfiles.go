package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// recordReader adapts arrow's array.RecordReader (Parquet, IPC) to Reader,
// checking each batch against the declared schema when one is given.
type recordReader struct {
	path   string
	rr     array.RecordReader
	want   *arrow.Schema
	closer func() error
}

func (r *recordReader) Schema() *arrow.Schema {
	if r.want != nil {
		return r.want
	}
	return r.rr.Schema()
}

func (r *recordReader) Next(memory.Allocator) (arrow.Record, error) {
	if !r.rr.Next() {
		if err := r.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, r.path, err)
		}
		return nil, nil
	}
	rec := r.rr.Record()
	rec.Retain()
	if r.want == nil {
		return rec, nil
	}
	// Select the declared columns by name.
	cols := make([]arrow.Array, r.want.NumFields())
	for i, f := range r.want.Fields() {
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			rec.Release()
			return nil, fmt.Errorf("%w: %s: no column %q", ErrBadFile, r.path, f.Name)
		}
		c := rec.Column(idx[0])
		if !arrow.TypeEqual(c.DataType(), f.Type) {
			rec.Release()
			return nil, fmt.Errorf("%w: %s: column %q is %s, declared %s", ErrBadFile, r.path, f.Name, c.DataType(), f.Type)
		}
		cols[i] = c
	}
	out := array.NewRecord(r.want, cols, rec.NumRows())
	rec.Release()
	return out, nil
}

func (r *recordReader) Close() error {
	r.rr.Release()
	if r.closer != nil {
		return r.closer()
	}
	return nil
}

// OpenParquet reads a Parquet file in batches of batch rows.
// Bounds from the query's filter skip the row groups whose statistics show
// that no row passes.
func OpenParquet(path string, schema *arrow.Schema, batch int, mem memory.Allocator, bounds ...Bound) (Reader, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	// Parallel: the columns of each batch decode on their own goroutines.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batch), Parallel: true}, mem)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), parquetLeaves(fr.Manifest, schema), keepRowGroups(pf.MetaData(), fr.Manifest, bounds))
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	return &recordReader{path: path, rr: rr, want: schema, closer: pf.Close}, nil
}

// parquetLeaves lists the leaf columns of the fields schema names, so that
// only the declared columns are decoded (a scan declares just the columns its
// query reads); nil, every column, without a schema or when a name is not in
// the file (the reader then reports the missing column).
func parquetLeaves(m *pqarrow.SchemaManifest, schema *arrow.Schema) []int {
	if schema == nil || m == nil {
		return nil
	}
	var leaves []int
	var walk func(f *pqarrow.SchemaField)
	walk = func(f *pqarrow.SchemaField) {
		if f.IsLeaf() {
			leaves = append(leaves, f.ColIndex)
		}
		for i := range f.Children {
			walk(&f.Children[i])
		}
	}
	for _, want := range schema.Fields() {
		found := false
		for i := range m.Fields {
			if m.Fields[i].Field.Name == want.Name {
				walk(&m.Fields[i])
				found = true
				break
			}
		}
		if !found {
			return nil
		}
	}
	slices.Sort(leaves)
	return slices.Compact(leaves)
}

// OpenIPC reads an Arrow IPC file (or, failing that, an IPC stream).
func OpenIPC(path string, schema *arrow.Schema, mem memory.Allocator) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fr, err := ipc.NewFileReader(f, ipc.WithAllocator(mem)); err == nil {
		return &recordReader{path: path, rr: &fileRecords{fr: fr}, want: schema, closer: func() error { fr.Close(); return f.Close() }}, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	sr, err := ipc.NewReader(f, ipc.WithAllocator(mem))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: not an Arrow IPC file or stream: %v", ErrBadFile, path, err)
	}
	return &recordReader{path: path, rr: sr, want: schema, closer: f.Close}, nil
}

// fileRecords walks an IPC file's record batches as a RecordReader.
type fileRecords struct {
	fr  *ipc.FileReader
	i   int
	cur arrow.Record
	err error
}

func (r *fileRecords) Retain()               {}
func (r *fileRecords) Release()              { r.drop() }
func (r *fileRecords) Schema() *arrow.Schema { return r.fr.Schema() }
func (r *fileRecords) Record() arrow.Record  { return r.cur }
func (r *fileRecords) Err() error            { return r.err }
func (r *fileRecords) drop() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
func (r *fileRecords) Next() bool {
	r.drop()
	if r.i >= r.fr.NumRecords() {
		return false
	}
	rec, err := r.fr.RecordAt(r.i)
	if err != nil {
		r.err = err
		return false
	}
	r.i++
	r.cur = rec
	return true
}
