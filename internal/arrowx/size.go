package arrowx

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// RecordBytes is the size of rec's buffers (children and dictionaries
// included): what a record holds in memory, with nothing serialised.
func RecordBytes(rec arrow.Record) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += DataBytes(c.Data())
	}
	return n
}

// DataBytes is the size of d's buffers, its children's and its
// dictionary's.
func DataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += DataBytes(c)
	}
	// Dictionary returns a typed nil when there is none.
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += DataBytes(dict)
	}
	return n
}
