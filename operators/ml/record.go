package ml

import (
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// record is an arrow.Record whose columns the operator built itself against its
// own output schema. array.NewRecord re-checks every column's type against the
// schema with reflection, which costs as much as the rest of the output
// conversion of a small batch; here the types are right by construction.
// Anything beyond reading (SetColumn, NewSlice, JSON) goes through a checked
// array.NewRecord.
type record struct {
	refs   atomic.Int64
	schema *arrow.Schema
	rows   int64
	cols   []arrow.Array
	// arr backs cols for records of up to len(arr) columns, so that a record
	// and its column list are one allocation.
	arr [8]arrow.Array
}

var _ arrow.Record = (*record)(nil)

// newRecord returns a record whose cols is empty with room for the schema's
// columns; the caller appends them, handing over one reference to each.
func newRecord(schema *arrow.Schema, rows int64) *record {
	r := &record{schema: schema, rows: rows}
	r.cols = r.arr[:0]
	if n := schema.NumFields(); n > len(r.arr) {
		r.cols = make([]arrow.Array, 0, n)
	}
	r.refs.Store(1)
	return r
}

func (r *record) Retain() { r.refs.Add(1) }

func (r *record) Release() {
	if r.refs.Add(-1) == 0 {
		for _, c := range r.cols {
			c.Release()
		}
		r.cols = nil
	}
}

func (r *record) Schema() *arrow.Schema    { return r.schema }
func (r *record) NumRows() int64           { return r.rows }
func (r *record) NumCols() int64           { return int64(len(r.cols)) }
func (r *record) Columns() []arrow.Array   { return r.cols }
func (r *record) Column(i int) arrow.Array { return r.cols[i] }
func (r *record) ColumnName(i int) string  { return r.schema.Field(i).Name }
func (r *record) checked() arrow.Record    { return array.NewRecord(r.schema, r.cols, r.rows) }
func (r *record) MarshalJSON() ([]byte, error) {
	c := r.checked()
	defer c.Release()
	return c.MarshalJSON()
}

func (r *record) SetColumn(i int, col arrow.Array) (arrow.Record, error) {
	c := r.checked()
	defer c.Release()
	return c.SetColumn(i, col)
}

func (r *record) NewSlice(i, j int64) arrow.Record {
	c := r.checked()
	defer c.Release()
	return c.NewSlice(i, j)
}
