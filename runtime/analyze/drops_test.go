package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
)

// TestReportShowsDrops: EXPLAIN ANALYZE says what the run dropped, by
// reason, next to the rates that leave those rows out.
func TestReportShowsDrops(t *testing.T) {
	q := run()
	q.Dropped = dataflow.DropCounts{dataflow.DropLate: 3, dataflow.DropSlowConsumer: 120}
	r, err := New(q, Options{Infra: testInfra()})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "dropped: 3 late, 120 slow_consumer\n") {
		t.Fatalf("EXPLAIN ANALYZE does not show the drops:\n%s", b.String())
	}
	if r.Dropped[dataflow.DropSlowConsumer] != 120 {
		t.Fatalf("report's drops %v", r.Dropped)
	}
}
