// Package arrowx holds the Arrow helpers that layers which may not import one
// another share (operators/ml builds output records, relay/frame decodes
// them). It imports only Arrow.
package arrowx

import (
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// Record is an arrow.Record over columns its maker built against the schema
// itself. array.NewRecord re-checks every column's type against the schema,
// through reflection for the primitive ones, which for a small batch costs
// more than making the columns; here the types are right by construction.
// Anything beyond reading (SetColumn, NewSlice, JSON) goes through a checked
// array.NewRecord. Embed it to keep more in the same allocation.
type Record struct {
	refs   atomic.Int64
	schema *arrow.Schema
	rows   int64
	cols   []arrow.Array
}

// Init sets r to hold cols (taking over the caller's references) with one
// reference of its own.
func (r *Record) Init(schema *arrow.Schema, cols []arrow.Array, rows int64) {
	r.schema, r.cols, r.rows = schema, cols, rows
	r.refs.Store(1)
}

// NewRecord is a Record over cols, taking over the caller's references.
func NewRecord(schema *arrow.Schema, cols []arrow.Array, rows int64) *Record {
	r := &Record{}
	r.Init(schema, cols, rows)
	return r
}

func (r *Record) Retain() { r.refs.Add(1) }

func (r *Record) Release() {
	if r.refs.Add(-1) == 0 {
		for _, c := range r.cols {
			c.Release()
		}
		r.cols = nil
	}
}

func (r *Record) Schema() *arrow.Schema    { return r.schema }
func (r *Record) NumRows() int64           { return r.rows }
func (r *Record) NumCols() int64           { return int64(len(r.cols)) }
func (r *Record) Columns() []arrow.Array   { return r.cols }
func (r *Record) Column(i int) arrow.Array { return r.cols[i] }
func (r *Record) ColumnName(i int) string  { return r.schema.Field(i).Name }
func (r *Record) checked() arrow.Record    { return array.NewRecord(r.schema, r.cols, r.rows) }

func (r *Record) MarshalJSON() ([]byte, error) {
	c := r.checked()
	defer c.Release()
	return c.MarshalJSON()
}

func (r *Record) SetColumn(i int, col arrow.Array) (arrow.Record, error) {
	c := r.checked()
	defer c.Release()
	return c.SetColumn(i, col)
}

func (r *Record) NewSlice(i, j int64) arrow.Record {
	c := r.checked()
	defer c.Release()
	return c.NewSlice(i, j)
}

var _ arrow.Record = (*Record)(nil)
