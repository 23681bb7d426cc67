package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/runtime/control"
)

// TestPlanHistory: EXPLAIN ANALYZE prints the query's re-plans and
// recoveries, oldest first, with the epoch each cut over at.
func TestPlanHistory(t *testing.T) {
	r := &Report{Query: "q", State: "finished",
		Replans: []control.Replan{{Epoch: 42, Reason: "link e1->h1 stalled 90% of the time (threshold 50%)", Old: "e1,h1,c1", New: "e1,c1"},
			{Epoch: 50, Reason: "drift: model classify (mlp-large) at 0.04 ms per item, planned 4 (past 2x)",
				Old: "classify=mlp-large; model classify@h1+h2, sink@h1", New: "classify=mlp-large; model classify@h1, sink@h1", Seconds: 1.75}},
		Recoveries: []control.Recovery{{Epoch: 77, LostWorker: "c1", Seconds: 2.25}}}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "plan history")
	if i < 0 {
		t.Fatalf("no plan history:\n%s", out)
	}
	for _, want := range []string{"re-plan", "42", "e1->h1 stalled", "e1,h1,c1", "e1,c1", "recovery", "77", "lost worker c1", "2.25",
		"50", "drift: model classify", "model classify@h1+h2", "model classify@h1, sink@h1", "1.75"} {
		if !strings.Contains(out[i:], want) {
			t.Errorf("plan history lacks %q:\n%s", want, out[i:])
		}
	}
	// Without changes, no section.
	b.Reset()
	if err := (&Report{Query: "q"}).Write(&b); err != nil || strings.Contains(b.String(), "plan history") {
		t.Fatalf("a run without changes prints a plan history (%v):\n%s", err, b.String())
	}
}
