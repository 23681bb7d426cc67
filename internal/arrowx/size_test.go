package arrowx

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Slices of one record weigh, together, what the record weighs: each its
// rows' share of the buffers, not the buffers it shares.
func TestRecordBytesOfSlicesAddUp(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "blob", Type: arrow.BinaryTypes.LargeBinary},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	const rows = 4000
	for i := range rows {
		if i%7 == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
		}
		b.Field(1).(*array.StringBuilder).Append(string(make([]byte, i%50)))
		b.Field(2).(*array.BinaryBuilder).Append(make([]byte, 3*(i%11)))
		b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
	}
	rec := b.NewRecord()
	defer rec.Release()
	whole := RecordBytes(rec)
	if whole < rows*8 {
		t.Fatalf("the record weighs %d bytes, less than its int64 column's %d", whole, rows*8)
	}
	// 1,000 slices of 4 rows: together within the bitmaps' rounding (a
	// bitmap byte per slice and column) and the offsets' extra entry.
	var sum int64
	for from := int64(0); from < rows; from += 4 {
		s := rec.NewSlice(from, from+4)
		sum += RecordBytes(s)
		s.Release()
	}
	slack := int64(rows/4) * (4 + 8 + 4) // bitmaps of 4 columns, one offset of each width
	if sum > whole+slack || sum < whole/2 {
		t.Fatalf("1,000 slices weigh %d bytes together, the record %d (slack %d): a slice counted the buffers it shares", sum, whole, slack)
	}
	// A slice of the strings counts its own values.
	one := rec.NewSlice(49, 50) // "name" is 49 bytes long there
	defer one.Release()
	if got := DataBytes(one.Column(1).Data()); got < 49 || got > 49+8+1 {
		t.Fatalf("a one-row slice of a 49-byte string weighs %d bytes", got)
	}
}

// An empty builder reserved n values holds room for n, not the next power
// of two past n (Arrow's Reserve: 2048 for 1024), and one holding values
// still grows.
func TestReserveSizesAnEmptyBuilderExactly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	defer b.Release()
	Reserve(b, 1024)
	if got := b.Cap(); got != 1024 {
		t.Errorf("empty builder reserved 1024: room for %d", got)
	}
	for i := range 1024 {
		b.Append(int64(i))
	}
	Reserve(b, 10)
	if got := b.Cap(); got < 1034 {
		t.Errorf("a builder of 1024 values reserved 10 more: room for %d", got)
	}
	a := array.NewInt64Builder(mem)
	defer a.Release()
	a.Reserve(1024)
	if a.Cap() != 2048 {
		t.Logf("Arrow's own Reserve(1024) now makes room for %d (was 2048)", a.Cap())
	}
}
