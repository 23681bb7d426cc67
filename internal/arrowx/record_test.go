package arrowx

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// A Record reads like Arrow's own, releases its columns with its last
// reference, and slices through a checked record.
func TestRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2, 3, 4}, nil)
	col := b.NewArray()
	b.Release()
	r := NewRecord(schema, []arrow.Array{col}, 4)
	if r.NumRows() != 4 || r.NumCols() != 1 || r.ColumnName(0) != "x" || r.Schema() != schema || r.Column(0) != col {
		t.Fatalf("accessors of %v", r)
	}
	sl := r.NewSlice(1, 3)
	want := array.NewRecord(schema, []arrow.Array{col}, 4)
	wantSl := want.NewSlice(1, 3)
	if !array.RecordEqual(sl, wantSl) {
		t.Fatalf("slice %v, want %v", sl, wantSl)
	}
	js, err := r.MarshalJSON()
	if err != nil || string(js) != `[{"x":1}
,{"x":2}
,{"x":3}
,{"x":4}
]` {
		t.Fatalf("JSON %s, %v", js, err)
	}
	sl.Release()
	wantSl.Release()
	want.Release()
	r.Retain()
	r.Release()
	if r.NumCols() != 1 {
		t.Fatal("released with a reference left")
	}
	r.Release() // the last: the column goes, and the allocator is empty
}
