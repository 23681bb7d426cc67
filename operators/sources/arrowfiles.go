package sources

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
)

// recordReader adapts arrow's array.RecordReader (Parquet, IPC) to Reader. It
// selects the declared columns by name and coerces them to the declared types
// (timestamps of any unit or zone to the engine's, narrower numbers wider),
// and refuses strings that are not UTF-8 (Arrow's contract, which neither
// reader checks) row by row under the row policy. The readers of arrow/go
// panic on some corrupt input; every call into them is guarded, so a bad
// file is an error naming it.
type recordReader struct {
	path   string
	rr     array.RecordReader
	want   *arrow.Schema
	closer func() error
	errs   rowErrors
	rows   int64 // rows read so far, for the row number in errors
	pq     *parquetPlan
	codes  codeColumns // columns passed on as dictionary codes (ParquetScan.Codes)
}

// parquetPlan is what a Parquet reader reads, for reading it again by row
// group on other goroutines (parquetparallel.go).
type parquetPlan struct {
	leaves []int   // nil: every column
	groups []int   // the row groups read, in order
	rows   []int64 // the rows of each
	props  pqarrow.ArrowReadProperties
	// dictProps reads string columns stored as dictionaries as such, for a
	// reader of one row group (stringDictColumns)
	dictProps pqarrow.ArrowReadProperties
	codes     []string // ParquetScan.Codes
	mem       memory.Allocator
	pages     memory.Allocator // what each page is decompressed into: the query's budget
	// stored are the columns read as their stored integers (readAsStored)
	// and the types they stand for.
	stored map[string]arrow.DataType
}

func (r *recordReader) Schema() *arrow.Schema {
	if r.want != nil {
		return r.want
	}
	return r.rr.Schema()
}

// guard turns a panic in arrow/go's readers into an error naming the file:
// the query's memory budget refusing a buffer (the allocator panics with
// its dataflow.LimitError) is that, anything else a bad file.
func guard(path string, err *error) {
	if p := recover(); p != nil {
		if e, ok := p.(error); ok && errors.Is(e, dataflow.ErrMemory) {
			*err = fmt.Errorf("%s: %w", path, e)
			return
		}
		*err = fmt.Errorf("%w: %s: corrupt or truncated: %v", ErrBadFile, path, p)
	}
}

func (r *recordReader) Next(mem memory.Allocator) (rec arrow.Record, err error) {
	defer guard(r.path, &err)
	for {
		if !r.rr.Next() {
			if err := r.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				if errors.Is(err, dataflow.ErrMemory) {
					return nil, fmt.Errorf("%s: %w", r.path, err)
				}
				return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, r.path, err)
			}
			return nil, nil
		}
		in := r.rr.Record()
		in.Retain()
		out, err := r.convert(mem, in)
		in.Release()
		if err != nil || out != nil {
			return out, err
		}
		// every row of this batch was skipped
	}
}

// convert checks one batch; nil, nil when every row was skipped.
func (r *recordReader) convert(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	first := r.rows
	r.rows += rec.NumRows()
	schema := rec.Schema()
	var cols []arrow.Array
	var checked []int // columns known to be UTF-8
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	if r.want == nil {
		for _, c := range rec.Columns() {
			c.Retain()
			cols = append(cols, c)
		}
	} else {
		schema = r.want
		for _, f := range r.want.Fields() {
			idx := rec.Schema().FieldIndices(f.Name)
			if len(idx) == 0 {
				return nil, fmt.Errorf("%w: %s: no column %q", ErrBadFile, r.path, f.Name)
			}
			in := rec.Column(idx[0])
			if d, ok := in.(*array.Dictionary); ok && f.Type.ID() == arrow.STRING && r.codes.keep(f.Name, d) {
				// Only grouped by: the codes go on, as read.
				d.Retain()
				cols = append(cols, d)
				checked = append(checked, len(cols)-1)
				continue
			}
			if d, ok := in.(*array.Dictionary); ok && f.Type.ID() == arrow.STRING {
				// A string column read as its dictionary (stringDictColumns):
				// unpacked here in one pass, its values checked once each.
				c, valid := unpackStrings(mem, d)
				cols = append(cols, c)
				if valid {
					checked = append(checked, len(cols)-1)
				}
				continue
			}
			if r.pq != nil && r.pq.stored[f.Name] != nil {
				if c := fromStored(mem, in, r.pq.stored[f.Name]); c != nil {
					defer c.Release()
					in = c
				}
			}
			c, err := coerce(mem, in, f.Type)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: column %q: %v", ErrBadFile, r.path, f.Name, err)
			}
			cols = append(cols, c)
		}
	}
	bad, err := r.badUTF8(schema, cols, first, checked)
	if err != nil {
		return nil, err
	}
	schema = withColumnTypes(schema, cols)
	out := array.NewRecord(schema, cols, rec.NumRows())
	if len(bad) == 0 {
		return out, nil
	}
	defer out.Release()
	if len(bad) == int(rec.NumRows()) {
		return nil, nil
	}
	keep := make([]int32, 0, int(rec.NumRows())-len(bad))
	for i, j := int32(0), 0; i < int32(rec.NumRows()); i++ {
		if j < len(bad) && bad[j] == i {
			j++
			continue
		}
		keep = append(keep, i)
	}
	return arrowx.GatherRecord(compute.WithAllocator(context.Background(), dataflow.Unrefused(mem)), mem, out, keep)
}

// badUTF8 lists the rows (ascending) whose strings are not UTF-8 and that
// the row policy skips; under Fail the first one is the error.
func (r *recordReader) badUTF8(schema *arrow.Schema, cols []arrow.Array, first int64, checked []int) ([]int32, error) {
	var bad []int32
	seen := map[int32]bool{}
	for j, c := range cols {
		s, ok := c.(*array.String)
		if !ok || slices.Contains(checked, j) {
			continue
		}
		for i := 0; i < s.Len(); i++ {
			if s.IsNull(i) || utf8.ValidString(s.Value(i)) || seen[int32(i)] {
				continue
			}
			err := fmt.Errorf("%w: %s: row %d: column %q: %w", ErrBadRow, r.path, first+int64(i)+1, schema.Field(j).Name, ErrInvalidUTF8)
			if err := r.errs.handle(err); err != nil {
				return nil, err
			}
			seen[int32(i)] = true
			bad = append(bad, int32(i))
		}
	}
	if len(bad) > 1 {
		// columns were walked one after another
		sortInt32(bad)
	}
	return bad, nil
}

func sortInt32(xs []int32) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// coerce returns c as type t (retained): the same array when the types
// agree, a relabelled one for a tensor whose element field only differs in
// name or nullability, else a safe cast (an overflow is an error).
func coerce(mem memory.Allocator, c arrow.Array, t arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(c.DataType(), t) {
		c.Retain()
		return c, nil
	}
	if have, ok := c.DataType().(*arrow.FixedSizeListType); ok {
		if want, ok := t.(*arrow.FixedSizeListType); ok && have.Len() == want.Len() && arrow.TypeEqual(have.Elem(), want.Elem()) {
			d := c.Data()
			nd := array.NewData(t, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
			defer nd.Release()
			return array.MakeFromData(nd), nil
		}
	}
	if want, ok := t.(*arrow.TimestampType); ok {
		if out, ok, err := toTimestamp(mem, c, want); ok {
			return out, err
		}
	}
	if !compute.CanCast(c.DataType(), t) {
		return nil, fmt.Errorf("is %s, declared %s", c.DataType(), t)
	}
	out, err := compute.CastArray(compute.WithAllocator(context.Background(), dataflow.Unrefused(mem)), c, compute.SafeCastOptions(t))
	if err != nil {
		return nil, fmt.Errorf("%s does not fit %s: %v", c.DataType(), t, err)
	}
	return out, nil
}

// toTimestamp converts timestamps of any unit and zone (naive ones are taken
// as UTC, as DuckDB reads them) and dates to t's unit. arrow/go v17's cast
// kernel panics on some of these (a column with NULLs), and the conversion
// is a multiply or divide. ok false: c is neither.
func toTimestamp(mem memory.Allocator, c arrow.Array, t *arrow.TimestampType) (arrow.Array, bool, error) {
	if have, ok := c.DataType().(*arrow.TimestampType); ok && have.Unit == t.Unit {
		// The same numbers: a naive or zoned timestamp of t's unit is
		// relabelled, not copied (TPC-H's dates, written as naive
		// microseconds, are every row of several columns).
		d := c.Data()
		nd := array.NewData(t, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), true, nil
	}
	var at func(i int) int64
	var from int64 // units per second of the input
	switch a := c.(type) {
	case *array.Timestamp:
		at = func(i int) int64 { return int64(a.Value(i)) }
		from = unitsPerSecond(a.DataType().(*arrow.TimestampType).Unit)
	case *array.Date32:
		at = func(i int) int64 { return int64(a.Value(i)) * 86400 }
		from = 1
	case *array.Date64:
		at = func(i int) int64 { return int64(a.Value(i)) }
		from = 1000
	default:
		return nil, false, nil
	}
	to := unitsPerSecond(t.Unit)
	b := array.NewTimestampBuilder(mem, t)
	defer b.Release()
	arrowx.Reserve(b, c.Len())
	for i := 0; i < c.Len(); i++ {
		if c.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := at(i)
		switch {
		case to > from:
			f := to / from
			if v > math.MaxInt64/f || v < math.MinInt64/f {
				return nil, true, fmt.Errorf("row %d: %d is out of the range of %s", i+1, v, t)
			}
			v *= f
		case to < from:
			v = floorDiv(v, from/to)
		}
		b.Append(arrow.Timestamp(v))
	}
	return b.NewArray(), true, nil
}

func unitsPerSecond(u arrow.TimeUnit) int64 {
	return map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[u]
}

// floorDiv rounds toward minus infinity, so a time before 1970 keeps its
// second.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (r *recordReader) Close() error {
	func() {
		defer func() { _ = recover() }() // a reader that panicked may panic again on release
		r.rr.Release()
	}()
	if r.closer != nil {
		return r.closer()
	}
	return nil
}

// OpenParquet reads a Parquet file in batches of batch rows, decoding only
// the columns schema names. The file is closed on every error path (arrow/go's
// OpenParquetFile leaks it when the footer does not parse). Bounds from the
// query's filter skip the row groups whose statistics show that no row passes.
// Columns are decoded on the calling goroutine, not pqarrow's parallel ones:
// guard must be able to turn a panic on a corrupt file into an error.
func OpenParquet(path string, schema *arrow.Schema, batch int, mem memory.Allocator, policy OnError, report *Report, bounds ...Bound) (_ Reader, err error) {
	return openParquet(path, schema, batch, mem, policy, report, ParquetScan{Bounds: bounds})
}

func openParquet(path string, schema *arrow.Schema, batch int, mem memory.Allocator, policy OnError, report *Report, scan ParquetScan) (_ Reader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	defer guard(path, &err)
	size, err := fileSize(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	// Pages are charged to the query's budget as they are (a page states
	// its size); fileAllocator bounds the buffers arrow/go sizes from
	// the metadata.
	pages := mem
	mem = fileAllocator(mem, size)
	pf, err := newParquetReader(f, pages)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a Parquet file: %v", ErrBadFile, path, err)
	}
	if err := checkStoredSchema(pf.MetaData().KeyValueMetadata()); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	props := pqarrow.ArrowReadProperties{BatchSize: int64(max(batch, 1))}
	fr, err := pqarrow.NewFileReader(pf, props, mem)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	leaves, groups := parquetLeaves(fr.Manifest, schema), keepRowGroups(pf.MetaData(), fr.Manifest, scan.Bounds)
	pq := &parquetPlan{leaves: leaves, groups: groups, props: props, mem: mem, pages: pages}
	if pq.groups == nil {
		for g := range pf.NumRowGroups() {
			pq.groups = append(pq.groups, g)
		}
	}
	for _, g := range pq.groups {
		pq.rows = append(pq.rows, pf.MetaData().RowGroup(g).NumRows())
	}
	pq.dictProps = props
	for _, c := range stringDictColumns(pf.MetaData(), pq.groups, schema) {
		pq.dictProps.SetReadDict(c, true)
	}
	pq.codes = scan.Codes
	if len(scan.Codes) > 0 && len(pq.groups) == 1 {
		// One dictionary per column: this reader can keep it (codes). (The
		// properties shape the reader's schema, so it is made anew.)
		if fr, err = pqarrow.NewFileReader(pf, pq.dictProps, mem); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
		}
	}
	if schema != nil {
		pq.stored = readAsStored(fr)
	}
	rr, err := fr.GetRecordReader(context.Background(), leaves, groups)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	return &recordReader{path: path, rr: rr, want: schema, closer: f.Close, errs: rowErrors{policy, report}, pq: pq, codes: newCodeColumns(scan.Codes)}, nil
}

// checkStoredSchema checks the Arrow schema pqarrow keeps in a Parquet
// file's metadata (an IPC message, base64) before pqarrow decodes it: its
// lengths are taken as they are.
func checkStoredSchema(kv metadata.KeyValueMetadata) error {
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(*v)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return fmt.Errorf("stored Arrow schema is not base64: %v", err)
		}
	}
	if err := checkIPCFraming(bytes.NewReader(raw), int64(len(raw))); err != nil {
		return fmt.Errorf("stored Arrow schema: %v", err)
	}
	return nil
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
func OpenIPC(path string, schema *arrow.Schema, mem memory.Allocator, policy OnError, report *Report) (_ Reader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	defer guard(path, &err)
	size, err := fileSize(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFile, path, err)
	}
	if err := checkIPCFraming(f, size); err != nil {
		return nil, fmt.Errorf("%w: %s: corrupt or truncated Arrow IPC: %v", ErrBadFile, path, err)
	}
	mem = fileAllocator(mem, size)
	errs := rowErrors{policy, report}
	fr, ferr := openIPCFile(f, mem)
	if ferr == nil {
		return &recordReader{path: path, rr: &fileRecords{fr: fr}, want: schema, closer: func() error { fr.Close(); return f.Close() }, errs: errs}, nil
	}
	head := make([]byte, len(ipcMagic))
	if n, _ := f.ReadAt(head, 0); n == len(head) && bytes.Equal(head, ipcMagic) {
		// The file format, broken: read as a stream, its magic would be a
		// message length of 1.3 GB.
		return nil, fmt.Errorf("%w: %s: corrupt Arrow IPC file: %v", ErrBadFile, path, ferr)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	sr, err := ipc.NewReader(f, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not an Arrow IPC file (%v) or stream (%v)", ErrBadFile, path, ferr, err)
	}
	return &recordReader{path: path, rr: sr, want: schema, closer: f.Close, errs: errs}, nil
}

// openIPCFile tries the IPC file format; a panic in it means "not one".
func openIPCFile(f *os.File, mem memory.Allocator) (fr *ipc.FileReader, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt: %v", p)
		}
	}()
	return ipc.NewFileReader(f, ipc.WithAllocator(mem))
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
