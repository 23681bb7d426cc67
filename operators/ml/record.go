package ml

import (
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
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
	// bufs backs the buffer lists (two entries each) of the columns the
	// operator makes, for up to two heads: one allocation fewer per record.
	// A column that outlives the record keeps this memory alive, which is all
	// its buffer list needs.
	bufs [8]*memory.Buffer
	// Slots for the operator's own primitive columns (a label and a score,
	// or a scalar), so that they cost no allocation of their own: Data.Reset
	// and the arrays' Reset are Arrow's API for re-using these objects, used
	// here on fresh zero values. Like bufs, a column that outlives the record
	// keeps the record's memory alive.
	data  [2]array.Data
	i64   array.Int64
	f32   [2]array.Float32
	nData int
	nI64  int
	nF32  int
}

// primitive makes an int64 or float32 array over bufs in r's slots; nil when
// they are used up or dt is another type. The array holds the only reference
// to its Data, as array.MakeFromData's result does once the caller released
// its own.
func (r *record) primitive(dt arrow.DataType, n int, bufs []*memory.Buffer, nulls int) arrow.Array {
	if r.nData == len(r.data) {
		return nil
	}
	var a interface {
		arrow.Array
		Reset(*array.Data)
	}
	switch {
	case dt.ID() == arrow.INT64 && r.nI64 < 1:
		a = &r.i64
		r.nI64++
	case dt.ID() == arrow.FLOAT32 && r.nF32 < len(r.f32):
		a = &r.f32[r.nF32]
		r.nF32++
	default:
		return nil
	}
	d := &r.data[r.nData]
	r.nData++
	d.Reset(dt, n, bufs, nil, nulls, 0) // a zero Data: no reference yet
	a.Reset(d)                          // the array's reference to d
	a.Retain()                          // a zero array: the caller's reference
	return a
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
