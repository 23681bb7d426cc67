package frame

import (
	"bytes"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// The steady stream's per-batch allocations, counted exactly (#30): a
// 64-row batch of an id, a timestamp and a 64-float tensor encodes with
// none, and decodes in place with the Arrow objects a record is made of
// (per column its ArrayData and array, the tensor's child too) plus one
// allocation that holds the record, its buffer headers and its lists; a
// query's budget adds the charged body. An allocation per batch coming
// back (a pool per record, a buffer per charged slice) fails here.
func TestSteadyStreamAllocations(t *testing.T) {
	const (
		encodeAllocs        = 0
		decodeAllocs        = 9 + 1            // 4 ArrayData, 4 arrays, the fixed-size list's child list; the slab
		chargedDecodeAllocs = decodeAllocs + 1 // the body as the parent buffer of the record's
	)
	rec := benchRecord(64)
	defer rec.Release()
	enc := NewEncoder(memory.DefaultAllocator)
	defer enc.Reset()
	var first, buf bytes.Buffer
	if _, err := enc.Encode(&first, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Encode(&buf, rec); err != nil {
		t.Fatal(err)
	}
	steady := bytes.Clone(buf.Bytes())
	if got := testing.AllocsPerRun(100, func() {
		buf.Reset()
		if _, err := enc.Encode(&buf, rec); err != nil {
			t.Fatal(err)
		}
	}); got > encodeAllocs {
		t.Errorf("encoding a steady batch: %.1f allocations, want %d", got, encodeAllocs)
	}
	for _, c := range []struct {
		name string
		mem  memory.Allocator
		want float64
	}{
		{"plain", memory.DefaultAllocator, decodeAllocs},
		{"charged", dataflow.NewMemory("query q", 1<<30, nil).Allocator(memory.DefaultAllocator), chargedDecodeAllocs},
	} {
		dec := NewDecoder(c.mem)
		out, err := dec.Decode(first.Bytes(), true)
		if err != nil {
			t.Fatal(err)
		}
		out.Release()
		got := testing.AllocsPerRun(100, func() {
			out, err := dec.Decode(steady, false)
			if err != nil {
				t.Fatal(err)
			}
			out.Release()
		})
		dec.Close()
		t.Logf("%s: %.1f allocations per decoded batch", c.name, got)
		if got > c.want {
			t.Errorf("%s: decoding a steady batch takes %.1f allocations, want at most %.0f", c.name, got, c.want)
		}
	}
}
