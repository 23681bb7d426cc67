package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// A steady stream (same schema, same layout batch after batch) takes the
// cached paths: metadata compared instead of verified again, records built
// without Arrow's type check, buffer headers from one pool. Those must
// still reject what they rejected before and behave as Arrow's records do.
func TestSteadyStreamDecode(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc := NewEncoder(mem)
	defer enc.Reset()
	dec := NewDecoder(mem)
	defer dec.Close()
	rec := testRecord(mem, 4)
	defer rec.Release()
	encode := func() []byte {
		var buf bytes.Buffer
		if _, err := enc.Encode(&buf, rec); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := encode()
	got, err := dec.Decode(first, true)
	if err != nil {
		t.Fatal(err)
	}
	got.Release()
	steady := encode()
	for i := 0; i < 3; i++ { // the second and third reuse the verified metadata
		got, err := dec.Decode(steady, false)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !array.RecordEqual(got, rec) {
			t.Fatalf("batch %d differs", i)
		}
		got.Release()
	}
	// Same metadata bytes as the verified one, forged body: the offsets are
	// checked per body, not cached.
	idx := bytes.Index(steady, []byte{0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0})
	if idx < 0 {
		t.Fatalf("offsets not found in the encoding")
	}
	bad := append([]byte(nil), steady...)
	bad[idx+12] = 200
	if _, err := dec.Decode(bad, false); !errors.Is(err, ErrMalformed) {
		t.Fatalf("forged offsets under cached metadata: %v", err)
	}
}

// The zero-copy record is an arrow.Record in every respect callers use.
func TestZeroCopyRecordMethods(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem, 5)
	defer rec.Release()
	var buf bytes.Buffer
	if err := EncodeRecord(&buf, rec, mem); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(buf.Bytes(), mem)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(*arrowx.Record); !ok {
		t.Fatalf("plain layout decoded to %T, not the zero-copy record", got)
	}
	if got.NumRows() != 5 || got.NumCols() != 2 || got.ColumnName(1) != "name" || got.Schema() != got.Schema() || len(got.Columns()) != 2 {
		t.Fatalf("accessors: %d rows, %d cols, %q", got.NumRows(), got.NumCols(), got.ColumnName(1))
	}
	sl, want := got.NewSlice(1, 3), rec.NewSlice(1, 3)
	if sl.NumRows() != 2 || !array.RecordEqual(sl, want) {
		t.Fatalf("slice differs")
	}
	sl.Release()
	want.Release()
	set, err := got.SetColumn(0, got.Column(0))
	if err != nil || !array.RecordEqual(set, rec) {
		t.Fatalf("set column: %v", err)
	}
	set.Release()
	if _, err := got.SetColumn(1, got.Column(0)); err == nil {
		t.Fatalf("column of the wrong type accepted")
	}
	a, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	if !bytes.Equal(a, b) {
		t.Fatalf("json %s, want %s", a, b)
	}
	got.Retain()
	got.Release()
	if got.Column(0).Len() != 5 {
		t.Fatalf("released too early")
	}
	got.Release()
}

func TestDecodeQuery(t *testing.T) {
	b := Append(nil, Header{Kind: KindProgress, Query: "q1", Seq: 1, Chunks: 1}, nil)
	for _, q := range []string{"q1", "other", ""} {
		h, _, err := DecodeQuery(b, q)
		if err != nil || h.Query != "q1" {
			t.Fatalf("expecting %q: %q, %v", q, h.Query, err)
		}
	}
}
