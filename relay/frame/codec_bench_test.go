package frame

import (
	"bytes"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func benchRecord(rows int) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.FixedSizeListOf(64, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	xl := b.Field(2).(*array.FixedSizeListBuilder)
	xv := xl.ValueBuilder().(*array.Float32Builder)
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		xl.Append(true)
		for j := 0; j < 64; j++ {
			xv.Append(float32(j))
		}
	}
	return b.NewRecord()
}

// BenchmarkCodec is the relay's own per-batch cost: encode on the sender,
// decode on the receiver, without the network.
func BenchmarkCodec(b *testing.B) {
	rec := benchRecord(64)
	defer rec.Release()
	enc := NewEncoder(memory.DefaultAllocator)
	dec := NewDecoder(memory.DefaultAllocator)
	defer dec.Close()
	var buf bytes.Buffer
	first := true
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		ws, err := enc.Encode(&buf, rec)
		if err != nil || ws != first {
			b.Fatal(err)
		}
		first = false
		out, err := dec.Decode(buf.Bytes(), ws)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkEncode and BenchmarkDecode split BenchmarkCodec into its halves.
func BenchmarkEncode(b *testing.B) {
	rec := benchRecord(64)
	defer rec.Release()
	enc := NewEncoder(memory.DefaultAllocator)
	var buf bytes.Buffer
	if _, err := enc.Encode(&buf, rec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if _, err := enc.Encode(&buf, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

func BenchmarkDecode(b *testing.B) {
	rec := benchRecord(64)
	defer rec.Release()
	enc := NewEncoder(memory.DefaultAllocator)
	var first, next bytes.Buffer
	if _, err := enc.Encode(&first, rec); err != nil {
		b.Fatal(err)
	}
	if _, err := enc.Encode(&next, rec); err != nil {
		b.Fatal(err)
	}
	dec := NewDecoder(memory.DefaultAllocator)
	defer dec.Close()
	out, err := dec.Decode(first.Bytes(), true)
	if err != nil {
		b.Fatal(err)
	}
	out.Release()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := dec.Decode(next.Bytes(), false)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.SetBytes(int64(next.Len()))
}
