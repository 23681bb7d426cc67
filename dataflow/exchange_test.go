package dataflow_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/tierflow/tierflow/dataflow"
)

func TestSplitGathersRowsByPartition(t *testing.T) {
	mem := checkedAlloc(t)
	rec := kvRecord(mem, 0, 7)
	defer rec.Release()
	parts, err := dataflow.Split(mem, rec, []uint32{2, 0, 2, 2, 0, 3, 0}, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]int64{0: {1, 4, 6}, 2: {0, 2, 3}, 3: {5}}
	for p, r := range parts {
		if want[p] == nil {
			if r != nil {
				t.Fatalf("partition %d has %d rows, want none", p, r.NumRows())
			}
			continue
		}
		got := keys(r)
		if len(got) != len(want[p]) {
			t.Fatalf("partition %d keys %v, want %v", p, got, want[p])
		}
		for i := range got {
			if got[i] != want[p][i] {
				t.Fatalf("partition %d keys %v, want %v", p, got, want[p])
			}
			if v := r.Column(1).(*array.String).Value(i); v != "v"+itoa(int(got[i])) {
				t.Fatalf("partition %d row %d: value %q does not follow its key %d", p, i, v, got[i])
			}
		}
		r.Release()
	}
	// All rows to one partition: the record itself, not a copy.
	parts, err = dataflow.Split(mem, rec, make([]uint32, 7), 3)
	if err != nil || parts[0] != rec || parts[1] != nil {
		t.Fatalf("single partition: %v %v", parts, err)
	}
	parts[0].Release()
	if _, err := dataflow.Split(mem, rec, []uint32{0, 0, 0, 0, 0, 0, 9}, 3); !errors.Is(err, dataflow.ErrPartition) {
		t.Fatalf("out of range index: %v", err)
	}
}

func TestHashColumnsIsDeterministicAndSpreads(t *testing.T) {
	mem := checkedAlloc(t)
	rec := kvRecord(mem, 0, 1000)
	defer rec.Release()
	for _, col := range []int{0, 1} {
		f := dataflow.HashColumns(col)
		a, b := make([]uint32, 1000), make([]uint32, 1000)
		if err := f(rec, 8, a); err != nil {
			t.Fatal(err)
		}
		// The same key in another record at another offset hashes alike.
		sl := rec.NewSlice(500, 1000)
		if err := f(sl, 8, b[:500]); err != nil {
			t.Fatal(err)
		}
		sl.Release()
		hist := make([]int, 8)
		for i, p := range a {
			hist[p]++
			if i >= 500 && b[i-500] != p {
				t.Fatalf("column %d row %d: %d in a slice, %d in the whole", col, i, b[i-500], p)
			}
		}
		for p, n := range hist {
			if n < 60 || n > 190 {
				t.Fatalf("column %d: partition %d got %d of 1000 rows: %v", col, p, n, hist)
			}
		}
	}
	// Nulls hash alike; unsupported types are a clear error.
	bld := array.NewInt64Builder(mem)
	bld.AppendNull()
	bld.Append(1)
	bld.AppendNull()
	arr := bld.NewArray()
	bld.Release()
	lst := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	lst.AppendNull()
	lst.AppendNull()
	lst.AppendNull()
	larr := lst.NewArray()
	lst.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "l", Type: larr.DataType(), Nullable: true}}, nil)
	nrec := array.NewRecord(schema, []arrow.Array{arr, larr}, 3)
	arr.Release()
	larr.Release()
	defer nrec.Release()
	dst := make([]uint32, 3)
	if err := dataflow.HashColumns(0)(nrec, 1<<20, dst); err != nil || dst[0] != dst[2] {
		t.Fatalf("nulls: %v %v", dst, err)
	}
	if err := dataflow.HashColumns(1)(nrec, 4, dst); !errors.Is(err, dataflow.ErrPartition) {
		t.Fatalf("list key: %v", err)
	}
	if err := dataflow.HashColumns(7)(nrec, 4, dst); !errors.Is(err, dataflow.ErrPartition) {
		t.Fatalf("missing column: %v", err)
	}
}

// Split on a sliced record with nulls, across the directly gathered layouts
// (int64, string, float32) and one that goes through the take kernel
// (boolean, list).
func TestSplitSlicedRecordWithNulls(t *testing.T) {
	mem := checkedAlloc(t)
	ib := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	fb := array.NewFloat32Builder(mem)
	bb := array.NewBooleanBuilder(mem)
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	for i := 0; i < 20; i++ {
		if i%3 == 0 {
			ib.AppendNull()
			sb.AppendNull()
			fb.AppendNull()
			bb.AppendNull()
			lb.AppendNull()
			continue
		}
		ib.Append(int64(i))
		sb.Append(itoa(i))
		fb.Append(float32(i) / 2)
		bb.Append(i%2 == 0)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{int32(i), int32(i)}, nil)
	}
	var cols []arrow.Array
	for _, b := range []array.Builder{ib, sb, fb, bb, lb} {
		cols = append(cols, b.NewArray())
		b.Release()
	}
	var fields []arrow.Field
	for i, c := range cols {
		fields = append(fields, arrow.Field{Name: itoa(i), Type: c.DataType(), Nullable: true})
	}
	full := array.NewRecord(arrow.NewSchema(fields, nil), cols, 20)
	for _, c := range cols {
		c.Release()
	}
	defer full.Release()
	rec := full.NewSlice(5, 17) // rows 5..16
	defer rec.Release()
	part := make([]uint32, rec.NumRows())
	for i := range part {
		part[i] = uint32(i % 2)
	}
	parts, err := dataflow.Split(mem, rec, part, 2)
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range parts {
		for i := 0; i < int(r.NumRows()); i++ {
			src := 2*i + p // row in rec
			for c := 0; c < int(r.NumCols()); c++ {
				want, got := rec.Column(c), r.Column(c)
				if want.IsNull(src) != got.IsNull(i) {
					t.Fatalf("partition %d row %d col %d: null %v, want %v", p, i, c, got.IsNull(i), want.IsNull(src))
				}
				if !want.IsNull(src) && want.ValueStr(src) != got.ValueStr(i) {
					t.Fatalf("partition %d row %d col %d: %s, want %s", p, i, c, got.ValueStr(i), want.ValueStr(src))
				}
			}
		}
		r.Release()
	}
}
