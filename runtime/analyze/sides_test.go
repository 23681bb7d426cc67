package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestReportShowsSides: a LATENCY query's source-side adaptation reports
// the rows it sent at each side (its side_<n> counters, over its
// instances), and the query's ended generations theirs; EXPLAIN ANALYZE
// shows them, largest side first.
func TestReportShowsSides(t *testing.T) {
	q := run()
	q.Placement.Operators = append(q.Placement.Operators, deploy.OperatorPlan{Name: "adapt image 28x28 float32 by link", Workers: []int{0}, Tier: "edge", Stage: "s"})
	id := len(q.Placement.Operators) - 1
	for i, c := range []map[string]int64{{"side_28": 1000, "side_20": 300, "side_14": 90}, {"side_28": 200, "side_20": 10, "side_14": 5}} {
		q.Operators = append(q.Operators, dataflow.InstanceStats{Operator: "adapt image 28x28 float32 by link", OperatorID: id, Index: i, Worker: 0, Counters: c})
	}
	q.Earlier = &deploy.Earlier{Sides: map[string]int64{"side_28": 5, "side_14": 1}} // a generation before a re-plan
	r, err := New(q, Options{Infra: testInfra()})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Operators[id].Sides; got != "28:1200 20:310 14:95" {
		t.Fatalf("sides %q, want 28:1200 20:310 14:95", got)
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	if r.Sides != "28:1205 20:310 14:96" {
		t.Errorf("every generation's sides %q, want 28:1205 20:310 14:96", r.Sides)
	}
	if !strings.Contains(b.String(), "data adaptation (rows sent at each side") || !strings.Contains(b.String(), "28:1200 20:310 14:95") ||
		!strings.Contains(b.String(), "(every generation): 28:1205 20:310 14:96") {
		t.Fatalf("EXPLAIN ANALYZE does not show the sides:\n%s", b.String())
	}
	for _, o := range r.Operators[:id] {
		if o.Sides != "" {
			t.Errorf("operator %s has sides %q", o.Name, o.Sides)
		}
	}
}

// TestReportShowsVariantsRan: a LATENCY model call that ran rows sent at a
// smaller side on the variant of that side reports the rows each variant
// ran (ran_<variant>), over its instances and the ended generations;
// EXPLAIN ANALYZE shows them beside the sides.
func TestReportShowsVariantsRan(t *testing.T) {
	q := run()
	q.Placement.Operators = append(q.Placement.Operators, deploy.OperatorPlan{Name: "classify", Workers: []int{0}, Tier: "cloud", Stage: "s"})
	id := len(q.Placement.Operators) - 1
	for i, c := range []map[string]int64{{"ran_fit-28": 900, "ran_fit-14": 250, "model_rows": 1150}, {"ran_fit-28": 100, "ran_fit-14": 50}} {
		q.Operators = append(q.Operators, dataflow.InstanceStats{Operator: "classify", OperatorID: id, Index: i, Worker: 0, Counters: c})
	}
	q.Earlier = &deploy.Earlier{Sides: map[string]int64{"ran_fit-14": 7}}
	r, err := New(q, Options{Infra: testInfra()})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Operators[id]; got.Ran != "fit-28:1000 fit-14:300" || got.Sides != "" {
		t.Fatalf("operator ran %q sides %q, want fit-28:1000 fit-14:300 and none", got.Ran, got.Sides)
	}
	if r.Ran != "fit-28:1000 fit-14:307" {
		t.Errorf("every generation's rows by variant %q, want fit-28:1000 fit-14:307", r.Ran)
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "variants ran") || !strings.Contains(b.String(), "fit-28:1000 fit-14:300") ||
		!strings.Contains(b.String(), "(every generation): fit-28:1000 fit-14:307") {
		t.Fatalf("EXPLAIN ANALYZE does not show the variants ran:\n%s", b.String())
	}
}
