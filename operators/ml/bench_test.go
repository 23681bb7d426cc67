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
