package arrowx

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Every layout, sliced, gathered at scattered rows with NULL picks, equals
// the source row by row: the direct kernels (fixed width of every size,
// boolean, string, tensor) and the fallback (a dictionary).
func TestGatherMatchesRowByRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "t", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}},
		{Name: "k", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	const n = 300
	for r := 0; r < n; r++ {
		if r%7 == 3 {
			b.Field(0).AppendNull()
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(r) * 1001)
			b.Field(2).(*array.StringBuilder).Append(string(rune('a' + r%26)))
			fl := b.Field(3).(*array.FixedSizeListBuilder)
			fl.Append(true)
			fl.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(r), float32(r) + 0.5, -float32(r)}, nil)
		}
		b.Field(1).(*array.BooleanBuilder).Append(r%3 == 0)
		b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(r) * 12345))
		if err := b.Field(5).(*array.BinaryDictionaryBuilder).AppendString([]string{"x", "y", "z"}[r%3]); err != nil {
			t.Fatal(err)
		}
	}
	whole := b.NewRecord()
	defer whole.Release()
	sl := whole.NewSlice(17, 270) // offsets everywhere
	defer sl.Release()
	rng := rand.New(rand.NewPCG(5, 6))
	idx := make([]int32, 500)
	for k := range idx {
		idx[k] = int32(rng.IntN(int(sl.NumRows())))
		if rng.IntN(9) == 0 {
			idx[k] = -1
		}
	}
	out, err := GatherRecord(context.Background(), mem, sl, idx)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	for c := 0; c < int(sl.NumCols()); c++ {
		src, got := sl.Column(c), out.Column(c)
		if got.Len() != len(idx) {
			t.Fatalf("column %s: %d rows, want %d", schema.Field(c).Name, got.Len(), len(idx))
		}
		for k, i := range idx {
			switch {
			case i < 0 && c < 4 && !got.IsNull(k):
				t.Fatalf("column %s row %d: a NULL pick gave %s", schema.Field(c).Name, k, got.ValueStr(k))
			case i >= 0 && (got.IsNull(k) != src.IsNull(int(i)) || got.ValueStr(k) != src.ValueStr(int(i))):
				t.Fatalf("column %s row %d (source %d): %s, want %s", schema.Field(c).Name, k, i, got.ValueStr(k), src.ValueStr(int(i)))
			}
		}
	}
	if _, ok := out.Column(3).(*array.FixedSizeList); !ok {
		t.Fatalf("tensor column came back as %T", out.Column(3))
	}
}

// BenchmarkGatherTensor: a batch of 784-float tensors (Fashion-MNIST images)
// gathered at a scattered selection, as the exchange splits a batch across
// workers: the direct block copy against Arrow's take kernel.
func BenchmarkGatherTensor(b *testing.B) {
	mem := memory.NewGoAllocator()
	const rows, size = 1024, 784
	fl := array.NewFixedSizeListBuilder(mem, size, arrow.PrimitiveTypes.Float32)
	vals := make([]float32, size)
	for r := 0; r < rows; r++ {
		fl.Append(true)
		fl.ValueBuilder().(*array.Float32Builder).AppendValues(vals, nil)
	}
	col := fl.NewArray()
	fl.Release()
	defer col.Release()
	rng := rand.New(rand.NewPCG(7, 8))
	idx := make([]int32, rows/2)
	for k := range idx {
		idx[k] = int32(rng.IntN(rows))
	}
	ib := array.NewInt32Builder(mem)
	ib.AppendValues(idx, nil)
	ia := ib.NewArray()
	ib.Release()
	defer ia.Release()
	ctx := context.Background()
	b.Run("gather", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			out, err := Gather(ctx, mem, col, idx)
			if err != nil {
				b.Fatal(err)
			}
			out.Release()
		}
	})
	b.Run("arrow-take", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			out, err := compute.TakeArray(ctx, col, ia)
			if err != nil {
				b.Fatal(err)
			}
			out.Release()
		}
	})
}

// A gathered string column's size is summed in 64 bits: past the 2 GiB its
// 32-bit offsets address it is ErrTooLarge, not a wrapped offset and a
// panic (the limit is small here; the real one is math.MaxInt32).
func TestGatherStringsPastTheOffsetLimitIsAnError(t *testing.T) {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(strings.Repeat("x", 1000))
	a := b.NewArray()
	defer a.Release()
	idx := make([]int32, 3000)
	if _, err := gatherVarBinary(memory.DefaultAllocator, a.Data(), idx, 2_999_999); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("3,000,000 bytes under a limit of 2,999,999: %v", err)
	}
	bufs, err := gatherVarBinary(memory.DefaultAllocator, a.Data(), idx, 3_000_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, buf := range bufs {
		buf.Release()
	}
}
