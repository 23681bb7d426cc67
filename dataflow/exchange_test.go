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

// A join exchanges each input by its own key column; an INT key and a
// BIGINT one (or a FLOAT and a DOUBLE) of the same value must land in the
// same instance, nulls included.
func TestHashColumnsHashesEqualValuesOfOtherWidthsAlike(t *testing.T) {
	mem := checkedAlloc(t)
	vals := []int64{0, 1, -1, 7, -123456, 1 << 30, -(1 << 31), 42}
	null := map[int]bool{3: true}
	b8, b16, b32, b64 := array.NewInt8Builder(mem), array.NewInt16Builder(mem), array.NewInt32Builder(mem), array.NewInt64Builder(mem)
	u32, f32, f64 := array.NewUint32Builder(mem), array.NewFloat32Builder(mem), array.NewFloat64Builder(mem)
	for i, v := range vals {
		if null[i] {
			for _, b := range []array.Builder{b8, b16, b32, b64, u32, f32, f64} {
				b.AppendNull()
			}
			continue
		}
		b8.Append(int8(v))
		b16.Append(int16(v))
		b32.Append(int32(v))
		b64.Append(v)
		u32.Append(uint32(max(v, 0)))
		f32.Append(float32(v))
		f64.Append(float64(v))
	}
	var arrs []arrow.Array
	var fields []arrow.Field
	for i, b := range []array.Builder{b8, b16, b32, b64, u32, f32, f64} {
		a := b.NewArray()
		b.Release()
		arrs = append(arrs, a)
		fields = append(fields, arrow.Field{Name: "c" + itoa(i), Type: a.DataType(), Nullable: true})
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(len(vals)))
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	part := func(col int) []uint32 {
		dst := make([]uint32, len(vals))
		if err := dataflow.HashColumns(col)(rec, 1<<16, dst); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	i8, i16, i32, i64, ui32, fl32, fl64 := part(0), part(1), part(2), part(3), part(4), part(5), part(6)
	for i, v := range vals {
		if v == int64(int8(v)) && i8[i] != i64[i] {
			t.Errorf("%d: TINYINT to %d, BIGINT to %d", v, i8[i], i64[i])
		}
		if v == int64(int16(v)) && i16[i] != i64[i] {
			t.Errorf("%d: SMALLINT to %d, BIGINT to %d", v, i16[i], i64[i])
		}
		if i32[i] != i64[i] {
			t.Errorf("%d: INT to %d, BIGINT to %d", v, i32[i], i64[i])
		}
		if v >= 0 && ui32[i] != i64[i] {
			t.Errorf("%d: UINT32 to %d, BIGINT to %d", v, ui32[i], i64[i])
		}
		if fl32[i] != fl64[i] {
			t.Errorf("%d: FLOAT to %d, DOUBLE to %d", v, fl32[i], fl64[i])
		}
	}
	if i32[1] == i32[2] && i32[2] == i32[4] && i32[4] == i32[6] {
		t.Errorf("1, -1, -123456 and -2^31 all in partition %d of 65536", i32[1])
	}
	for _, c := range []struct {
		a, b arrow.DataType
		want bool
	}{
		{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, true},
		{arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int64, true},
		{arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, true},
		{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, true},
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, false},
		{arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Timestamp_ms, false},
		{arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Timestamp_us, true},
	} {
		if got := dataflow.HashAlike(c.a, c.b); got != c.want {
			t.Errorf("HashAlike(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
