package frame

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestHeaderRoundTrip(t *testing.T) {
	cases := []Header{
		{Kind: KindData, Flags: FlagSchema, Query: "q1", Edge: 3, Sender: 1, Receiver: 2, Epoch: 42, Seq: 7, Chunk: 0, Chunks: 1, Total: 5, Ingest: 1_764_000_000_123_456_789},
		{Kind: KindData, Query: "q", Chunks: 1, Ingest: -1}, // every bit of the ingest time survives
		{Kind: KindData, Query: "", Edge: 1<<32 - 1, Sender: 9, Receiver: 0, Epoch: 1<<64 - 1, Seq: 1, Chunk: 2, Chunks: 3, Total: 100},
		{Kind: KindProgress, Query: "q", Epoch: 1<<64 - 1, Seq: 9, Chunks: 1},
		{Kind: KindEnd, Query: string(bytes.Repeat([]byte("x"), MaxQueryLen)), Chunks: 1},
		{Kind: KindResend, Query: "q", Seq: 12, Chunks: 1},
	}
	for _, h := range cases {
		body := bytes.Repeat([]byte{0xAB}, int(min(h.Total, 5)))
		if h.Chunks == 1 {
			body = body[:h.Total]
		}
		b := Append(nil, h, body)
		if len(b) != h.Len()+len(body) {
			t.Fatalf("encoded length %d, want %d", len(b), h.Len()+len(body))
		}
		got, gotBody, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%+v): %v", h, err)
		}
		if got != h || !bytes.Equal(gotBody, body) {
			t.Fatalf("round trip: got %+v body %x, want %+v body %x", got, gotBody, h, body)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Append(nil, Header{Kind: KindData, Query: "q", Chunks: 1, Total: 3}, []byte{1, 2, 3})
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:10],
		"bad magic":      mutate(func(b []byte) []byte { b[0] = 'X'; return b }),
		"bad version":    mutate(func(b []byte) []byte { b[2] = 99; return b }),
		"kind zero":      mutate(func(b []byte) []byte { b[3] = 0; return b }),
		"kind unknown":   mutate(func(b []byte) []byte { b[3] = 200; return b }),
		"query too long": mutate(func(b []byte) []byte { b[5] = 200; return b }),
		"unknown flag":   mutate(func(b []byte) []byte { b[4] = 0x80; return b }),
		"flag on end":    Append(nil, Header{Kind: KindEnd, Flags: FlagSchema, Chunks: 1}, nil),
		"body too short": good[:len(good)-1],
		"body too long":  append(append([]byte(nil), good...), 9),
		"zero chunks":    Append(nil, Header{Kind: KindData, Chunks: 0}, nil),
		"chunk past end": Append(nil, Header{Kind: KindData, Chunk: 3, Chunks: 3, Total: 10}, nil),
		"end with body":  Append(nil, Header{Kind: KindEnd, Chunks: 1, Total: 2}, []byte{1, 2}),
		"progress body":  Append(nil, Header{Kind: KindProgress, Chunks: 1, Total: 1}, []byte{1}),
		"resend body":    Append(nil, Header{Kind: KindResend, Chunks: 1, Total: 1}, []byte{1}),
		"credit short":   Append(nil, Header{Kind: KindCredit, Chunks: 1, Total: 2}, []byte{1, 2}),
		"credit chunked": Append(nil, Header{Kind: KindCredit, Chunks: 2, Total: 8}, nil),
		"chunk over all": Append(nil, Header{Kind: KindData, Chunks: 2, Total: 1}, []byte{1, 2}),
	}
	for name, b := range cases {
		if _, _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestCredit(t *testing.T) {
	want := Credit{Messages: 12345, Bytes: 1 << 40}
	g, err := DecodeCredit(EncodeCredit(nil, want))
	if err != nil || g != want {
		t.Fatalf("DecodeCredit: %+v %v", g, err)
	}
	if _, err := DecodeCredit([]byte{1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short credit: %v", err)
	}
}

func testRecord(mem memory.Allocator, n int) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("row")
		}
	}
	return b.NewRecord()
}

func encodeRecordBytes(t testing.TB, rec arrow.Record) []byte {
	var buf bytes.Buffer
	if err := EncodeRecord(&buf, rec, memory.DefaultAllocator); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRecordRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, n := range []int{0, 1, 1000} {
		rec := testRecord(mem, n)
		var buf bytes.Buffer
		if err := EncodeRecord(&buf, rec, mem); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRecord(buf.Bytes(), mem)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !array.RecordEqual(got, rec) {
			t.Fatalf("n=%d: decoded record differs", n)
		}
		got.Release()
		rec.Release()
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(memory.DefaultAllocator, 10)
	defer rec.Release()
	good := encodeRecordBytes(t, rec)
	two := func() []byte {
		var buf bytes.Buffer
		w := newTwoRecordStream(t, &buf, rec)
		_ = w
		return buf.Bytes()
	}()
	cases := map[string][]byte{
		"empty":        nil,
		"eos only":     {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"truncated":    good[:len(good)/2],
		"no marker":    append([]byte{1, 2, 3, 4}, good[4:]...),
		"huge meta":    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"two records":  two,
		"schema only":  good[:schemaEnd(good)],
		"garbage meta": append([]byte{0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0}, bytes.Repeat([]byte{0xee}, 16)...),
	}
	for name, b := range cases {
		got, err := DecodeRecord(b, mem)
		if !errors.Is(err, ErrMalformed) {
			if got != nil {
				got.Release()
			}
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestEncoderDecoderStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := NewEncoder(mem)
	defer enc.Reset()
	dec := NewDecoder(mem)
	defer dec.Close()
	other := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil)
	mkOther := func() arrow.Record {
		b := array.NewRecordBuilder(mem, other)
		defer b.Release()
		b.Field(0).(*array.Float64Builder).AppendValues([]float64{1.5, 2.5}, nil)
		return b.NewRecord()
	}
	// Same schema three times, a new schema, then the first again: the
	// schema travels exactly when it changes.
	recs := []arrow.Record{testRecord(mem, 3), testRecord(mem, 0), testRecord(mem, 5), mkOther(), testRecord(mem, 2)}
	wantSchema := []bool{true, false, false, true, true}
	var sizes []int
	for i, rec := range recs {
		var buf bytes.Buffer
		withSchema, err := enc.Encode(&buf, rec)
		if err != nil {
			t.Fatal(err)
		}
		if withSchema != wantSchema[i] {
			t.Fatalf("batch %d: withSchema %v, want %v", i, withSchema, wantSchema[i])
		}
		sizes = append(sizes, buf.Len())
		got, err := dec.Decode(buf.Bytes(), withSchema)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !array.RecordEqual(got, rec) {
			t.Fatalf("batch %d differs", i)
		}
		got.Release()
	}
	if sizes[2] >= sizes[0]+100 {
		t.Fatalf("batch without schema (%d bytes) not smaller than with (%d)", sizes[2], sizes[0])
	}
	// A batch without schema on a fresh decoder, and garbage, are errors that
	// leave nothing allocated.
	var buf bytes.Buffer
	if _, err := enc.Encode(&buf, recs[4]); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDecoder(mem).Decode(buf.Bytes(), false); !errors.Is(err, ErrMalformed) {
		t.Fatalf("batch before schema: %v", err)
	}
	if _, err := dec.Decode([]byte{1, 2, 3}, false); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage: %v", err)
	}
	for _, r := range recs {
		r.Release()
	}
}

// The verifier's limits must not refuse real schemas: many columns, deep
// nesting, metadata, dictionaries.
func TestVerifierAcceptsRealSchemas(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var fields []arrow.Field
	for i := 0; i < 300; i++ {
		fields = append(fields, arrow.Field{Name: "c" + string(rune('a'+i%26)), Type: arrow.PrimitiveTypes.Int8})
	}
	var nested arrow.DataType = arrow.PrimitiveTypes.Int32
	for i := 0; i < 30; i++ {
		nested = arrow.StructOf(arrow.Field{Name: "s", Type: nested, Nullable: true})
	}
	md := arrow.NewMetadata([]string{"shape"}, []string{"[1,28,28]"})
	fields = append(fields,
		arrow.Field{Name: "deep", Type: nested, Nullable: true},
		arrow.Field{Name: "t", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Metadata: md},
		arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		arrow.Field{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}},
	)
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range fields {
		b.Field(i).AppendNull()
	}
	rec := b.NewRecord()
	defer rec.Release()
	var buf bytes.Buffer
	if err := EncodeRecord(&buf, rec, mem); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(buf.Bytes(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !got.Schema().Equal(schema) || got.NumRows() != 1 {
		t.Fatalf("schema or rows differ: %s", got.Schema())
	}
}

// Plain layouts decode in place: the record's buffers lie inside the body.
// With ZeroCopy off, or for a layout it does not handle (dictionaries), the
// Arrow reader copies into the allocator.
func TestDecodeZeroCopy(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem, 100)
	defer rec.Release()
	var buf bytes.Buffer
	if err := EncodeRecord(&buf, rec, mem); err != nil {
		t.Fatal(err)
	}
	body := buf.Bytes()
	inBody := func(r arrow.Record) bool {
		b := r.Column(0).Data().Buffers()[1].Bytes()
		lo := uintptr(unsafe.Pointer(&body[0]))
		p := uintptr(unsafe.Pointer(&b[0]))
		return p >= lo && p < lo+uintptr(len(body))
	}
	dec := NewDecoder(mem)
	before := mem.CurrentAlloc()
	got, err := dec.Decode(body, true)
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(got, rec) || !inBody(got) || mem.CurrentAlloc() != before {
		t.Fatalf("zero-copy decode: equal %v, in body %v, allocated %d", array.RecordEqual(got, rec), inBody(got), mem.CurrentAlloc())
	}
	got.Release()
	dec.Close()

	dec = NewDecoder(mem)
	dec.ZeroCopy = false
	got, err = dec.Decode(body, true)
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(got, rec) || inBody(got) {
		t.Fatalf("copying decode: equal %v, in body %v", array.RecordEqual(got, rec), inBody(got))
	}
	got.Release()
	dec.Close()

	// A misaligned body is copied rather than referenced.
	shifted := append(make([]byte, 1, len(body)+1), body...)[1:]
	dec = NewDecoder(mem)
	got, err = dec.Decode(shifted, true)
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(got, rec) {
		t.Fatalf("misaligned body decoded wrong")
	}
	got.Release()
	dec.Close()
}

func TestZeroCopyRejectsForgedLayouts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem, 4)
	defer rec.Release()
	var buf bytes.Buffer
	if err := EncodeRecord(&buf, rec, mem); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// The string column's offsets are the last 4-byte run before the data;
	// find the offsets (0,0,3,6,9 for null,row,row,null... rows) and break
	// their order.
	idx := bytes.Index(good, []byte{0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0})
	if idx < 0 {
		t.Fatalf("offsets not found in the encoding")
	}
	bad := append([]byte(nil), good...)
	bad[idx+8] = 9 // offsets 0,0,9,6: not monotonic
	if _, err := DecodeRecord(bad, mem); !errors.Is(err, ErrMalformed) {
		t.Fatalf("non-monotonic offsets: %v", err)
	}
	bad = append([]byte(nil), good...)
	bad[idx+12] = 200 // offset past the data
	if _, err := DecodeRecord(bad, mem); !errors.Is(err, ErrMalformed) {
		t.Fatalf("offset past the data: %v", err)
	}
}

// The hand-written record batch messages must be what Arrow's own reader
// accepts, and decode to the same records, for every layout the fast path
// takes; sliced records go through Arrow's writer instead.
func TestFastEncoderAgainstArrowReader(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString},
		{Name: "t", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int16}, arrow.Field{Name: "z", Type: arrow.BinaryTypes.Binary, Nullable: true}), Nullable: true},
	}, nil)
	build := func(n int) arrow.Record {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := 0; i < n; i++ {
			if i%4 == 1 {
				b.Field(0).AppendNull()
				b.Field(2).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
				b.Field(2).(*array.StringBuilder).Append(strings.Repeat("x", i%5))
			}
			b.Field(1).(*array.BooleanBuilder).Append(i%3 == 0)
			b.Field(3).(*array.LargeStringBuilder).Append("large")
			fl := b.Field(4).(*array.FixedSizeListBuilder)
			fl.Append(true)
			fl.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2, float32(i)}, nil)
			ll := b.Field(5).(*array.ListBuilder)
			ll.Append(true)
			for j := 0; j < i%3; j++ {
				ll.ValueBuilder().(*array.Int32Builder).Append(int32(j))
			}
			sb := b.Field(6).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int16Builder).Append(int16(i))
			sb.FieldBuilder(1).(*array.BinaryBuilder).Append([]byte{byte(i)})
		}
		return b.NewRecord()
	}
	enc := NewEncoder(mem)
	defer enc.Reset()
	copying := NewDecoder(mem)
	copying.ZeroCopy = false
	defer copying.Close()
	inPlace := NewDecoder(mem)
	defer inPlace.Close()
	big := build(37)
	defer big.Release()
	recs := []arrow.Record{build(5), build(0), build(37), big.NewSlice(3, 20)}
	for i, rec := range recs {
		var buf bytes.Buffer
		withSchema, err := enc.Encode(&buf, rec)
		if err != nil {
			t.Fatal(err)
		}
		var fast bytes.Buffer
		usedFast := appendRecordFast(&fast, rec, &fastWriter{}) && bytes.Equal(fast.Bytes(), buf.Bytes())
		if wantFast := i == 1 || i == 2; usedFast != wantFast {
			t.Fatalf("batch %d: fast path used %v, want %v", i, usedFast, wantFast)
		}
		for _, dec := range []*Decoder{copying, inPlace} {
			got, err := dec.Decode(buf.Bytes(), withSchema)
			if err != nil {
				t.Fatalf("batch %d (zero copy %v): %v", i, dec.ZeroCopy, err)
			}
			if !array.RecordEqual(got, rec) {
				t.Fatalf("batch %d (zero copy %v) differs:\n got %v\nwant %v", i, dec.ZeroCopy, got, rec)
			}
			got.Release()
		}
		rec.Release()
	}
}

// A slice from the start of a tensor record sends only its rows' values: a
// fixed-size list keeps its child whole when sliced, and the wire must not.
func TestFastEncoderTrimsSlicedTensorChild(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.FixedSizeListOf(256, arrow.PrimitiveTypes.Float32)}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	fl := b.Field(0).(*array.FixedSizeListBuilder)
	vals := make([]float32, 256)
	for i := 0; i < 32; i++ {
		fl.Append(true)
		for j := range vals {
			vals[j] = float32(i*1000 + j)
		}
		fl.ValueBuilder().(*array.Float32Builder).AppendValues(vals, nil)
	}
	whole := b.NewRecord()
	b.Release()
	defer whole.Release()
	head := whole.NewSlice(0, 2)
	defer head.Release()

	enc := NewEncoder(mem)
	defer enc.Reset()
	var schemaMsg bytes.Buffer
	if _, err := enc.Encode(&schemaMsg, head); err != nil { // the first message carries the schema
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := enc.Encode(&buf, head); err != nil {
		t.Fatal(err)
	}
	if values := 2 * 256 * 4; buf.Len() > values+512 {
		t.Fatalf("2 rows of 256 floats took %d bytes on the wire, want about %d", buf.Len(), values)
	}
	dec := NewDecoder(mem)
	defer dec.Close()
	for _, msg := range []struct {
		b      []byte
		schema bool
	}{{schemaMsg.Bytes(), true}, {buf.Bytes(), false}} {
		got, err := dec.Decode(msg.b, msg.schema)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, head) {
			t.Fatalf("decoded %v, want %v", got, head)
		}
		got.Release()
	}
}

// TestFrontierTrailer: the frontier comes back off the body it was
// appended to, and a body too short for one is malformed, not a panic.
func TestFrontierTrailer(t *testing.T) {
	body := AppendFrontier([]byte("arrow"), 1<<40+7)
	got, f, err := SplitFrontier(body)
	if err != nil || string(got) != "arrow" || f != 1<<40+7 {
		t.Fatalf("SplitFrontier = %q, %d, %v", got, f, err)
	}
	if _, _, err := SplitFrontier([]byte{1, 2, 3}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short body: err = %v, want ErrMalformed", err)
	}
}
