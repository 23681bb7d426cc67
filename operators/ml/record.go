package ml

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// record is the operator's output: an arrowx.Record (no reflective re-check
// of columns built against the output schema) with room in the same
// allocation for the column list, the buffer lists and the label and score
// arrays.
type record struct {
	arrowx.Record
	// arr backs the columns for records of up to len(arr) columns, so that a record
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

// newRecord returns a record with no columns yet and an empty column list
// with room for the schema's; the caller appends to it, handing over one
// reference to each, and sets it with Init.
func newRecord(schema *arrow.Schema, rows int64) (*record, []arrow.Array) {
	r := &record{}
	cols := r.arr[:0]
	if n := schema.NumFields(); n > len(r.arr) {
		cols = make([]arrow.Array, 0, n)
	}
	r.Init(schema, nil, rows)
	return r, cols
}
