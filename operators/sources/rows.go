package sources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// RowBuilder builds records row by row from decoded values, with the
// conversions of the file readers, for sources whose rows arrive one message
// at a time (runtime/connectors). A row that does not fit is refused whole:
// nothing of it is appended.
type RowBuilder struct {
	mem    memory.Allocator
	schema *arrow.Schema
	b      *batcher
	row    []any
	json   *jsonRow // made by the first AppendJSON
	// lastRows and lastData are the rows and each variable-width column's
	// bytes of the record Finish returned last. A stream's batches are
	// alike: the next batch's builders reserve as much, instead of
	// growing from nothing by doubling and copying (a message source's
	// string columns were a third of what it allocated:
	// BenchmarkRowBuilderReserves).
	lastRows int
	lastData []int
	// at and fields: AppendCSV reads field at[i] of records of fields
	// fields into column i (nil at: field i, of as many as columns).
	at     []int
	fields int
}

// AtPositions has AppendCSV read column i from field at[i] of records of n
// fields: a stream declares n columns in field order and the query reads
// the columns of r's schema. The other fields are skipped, not converted
// (as a CSV file's unread columns are).
func (r *RowBuilder) AtPositions(at []int, n int) {
	r.at, r.fields = at, n
}

// start makes the builders of a new record, sized as the last one.
func (r *RowBuilder) start() {
	r.b = newBatcher(r.mem, r.schema)
	if r.lastRows == 0 {
		return
	}
	for i, bb := range r.b.bs {
		arrowx.Reserve(bb, r.lastRows)
		if d, ok := bb.(interface{ ReserveData(int) }); ok && r.lastData[i] > 0 {
			d.ReserveData(r.lastData[i])
		}
	}
}

// NewRowBuilder builds records of schema from mem.
func NewRowBuilder(mem memory.Allocator, schema *arrow.Schema) *RowBuilder {
	return &RowBuilder{mem: mem, schema: schema, row: make([]any, schema.NumFields())}
}

// Len is the rows appended since the last Finish.
func (r *RowBuilder) Len() int {
	if r.b == nil {
		return 0
	}
	return r.b.n
}

func (r *RowBuilder) commit() {
	if r.b == nil {
		r.start()
	}
	r.b.add(r.row)
}

// AppendObject appends a decoded JSON object, fields matched by name (missing
// ones are NULL). The error wraps ErrBadRow and names the field.
func (r *RowBuilder) AppendObject(obj map[string]any) error {
	for i, f := range r.schema.Fields() {
		v, err := convert(obj[f.Name], f.Type)
		if err != nil {
			return fmt.Errorf("%w: field %q: %v", ErrBadRow, f.Name, err)
		}
		r.row[i] = v
	}
	r.commit()
	return nil
}

// AppendJSON appends one JSON object's text, fields matched by name
// (missing ones are NULL), accepting and converting exactly as DecodeObject
// and AppendObject do but without building the object. The error wraps
// ErrBadRow; nothing of a refused row is appended.
func (r *RowBuilder) AppendJSON(text []byte) error {
	if r.json == nil {
		r.json = newJSONRow(r.schema)
	}
	if err := r.json.decode(text); err != nil {
		return err
	}
	if r.b == nil {
		r.start()
	}
	r.json.appendTo(r.b, text)
	return nil
}

// AppendCSV appends a CSV record's fields in schema order (a row without
// header), empty fields under TextValue's rule, as the CSV file reader reads
// them.
func (r *RowBuilder) AppendCSV(fields []CSVField) error {
	want := r.schema.NumFields()
	if r.at != nil {
		want = r.fields
	}
	if len(fields) != want {
		return fmt.Errorf("%w: %d fields, want %d", ErrBadRow, len(fields), want)
	}
	for i, f := range r.schema.Fields() {
		field := fields[i]
		if r.at != nil {
			field = fields[r.at[i]]
		}
		v, err := TextValue(field, f.Type)
		if err != nil {
			return fmt.Errorf("%w: column %q: %w", ErrBadRow, f.Name, err)
		}
		r.row[i] = v
	}
	r.commit()
	return nil
}

// Finish returns the rows appended so far as a record (nil if none) and
// starts a new one.
func (r *RowBuilder) Finish() arrow.Record {
	if r.b == nil {
		return nil
	}
	r.lastRows = r.b.n
	r.lastData = slices.Grow(r.lastData[:0], len(r.b.bs))[:len(r.b.bs)]
	for i, bb := range r.b.bs {
		r.lastData[i] = 0
		if d, ok := bb.(interface{ DataLen() int }); ok {
			r.lastData[i] = d.DataLen()
		}
	}
	rec := r.b.finish()
	r.b = nil
	return rec
}

// Release drops rows not yet finished.
func (r *RowBuilder) Release() {
	if r.b != nil {
		r.b.discard()
		r.b = nil
	}
}

// DecodeObject reads one JSON object the way the JSON-lines reader does
// (numbers kept exact until converted to their column's type).
func DecodeObject(text []byte) (map[string]any, error) {
	if !utf8.Valid(text) {
		return nil, fmt.Errorf("%w: %w", ErrBadRow, ErrInvalidUTF8)
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %v", ErrBadRow, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%w: not a JSON object: null", ErrBadRow)
	}
	return obj, nil
}
