package ml

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// nopSession returns at once: what is left is the operator's own cost per batch.
type nopSession struct{ fakeSession }

func (*nopSession) Run(in, out []Tensor) error { return nil }

// BenchmarkInferOverhead measures the operator's own work for one record of 8 rows
// (conversion, heads, output record), with a session that does nothing.
func BenchmarkInferOverhead(b *testing.B) {
	mem := memory.NewGoAllocator()
	m, err := Bind(&nopSession{}, inputSchema(), Config{Input: "x", Heads: []Head{{Kind: Classify, Output: "probs"}}, MaxBatch: 64})
	if err != nil {
		b.Fatal(err)
	}
	rec := inputRecord(b, mem, 0, 8, nil, nil)
	defer rec.Release()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := m.Infer(mem, rec)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
}

// Infer's own work per record is a fixed handful of objects, whatever the row
// count: the output arena, the label and score arrays and the record. A change
// that puts an allocation back on the per-row or per-call path fails here.
func TestInferAllocations(t *testing.T) {
	// The checked allocator's own bookkeeping allocates, so it is left out here;
	// the other tests check that Infer releases what it takes.
	mem := memory.NewGoAllocator()
	m, err := Bind(&nopSession{}, inputSchema(), Config{Input: "x", Heads: []Head{{Kind: Classify, Output: "probs"}}, MaxBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 8, 64} {
		rec := inputRecord(t, mem, 0, n, nil, nil)
		allocs := testing.AllocsPerRun(50, func() {
			out, err := m.Infer(mem, rec)
			if err != nil {
				t.Fatal(err)
			}
			if out.NumRows() != int64(n) || out.Column(int(out.NumCols())-1).NullN() != n {
				t.Fatalf("%d rows: output %d rows, error column %d nulls", n, out.NumRows(), out.Column(int(out.NumCols())-1).NullN())
			}
			out.Release()
		})
		rec.Release()
		// arena (buffer + bytes), score slice, 2 x (data + array), record
		// (with the buffer lists)
		if allocs > 8 {
			t.Errorf("%d rows: Infer allocates %v objects, want at most 8", n, allocs)
		}
	}
}
