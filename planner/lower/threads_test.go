package lower_test

import (
	"context"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
)

// latencyOn is the per-item latency (p75) the planner gives model m's one
// variant on worker w, with the workers of infra spec inf.
func latencyOn(t *testing.T, inf, w string) float64 {
	t.Helper()
	cat, err := catalog.Parse("catalog.yaml", []byte(`
models:
  - name: m
    inputs: [{name: x, type: "TENSOR(FLOAT, 4)"}]
    outputs: [{name: label, type: VARCHAR}]
    variants:
      - name: v
        accuracy: 90
        output_kb: 0.02
        latency_ms:
          x2:
            threads: 1
            p50: 100
            p75: 110
            p90: 120
            by_threads:
              2: {p50: 55, p75: 60, p90: 66}
streams:
  - {name: s, source: nats, subject: s, tier: edge, rate: 1, item_kb: 1,
     columns: [{name: id, type: BIGINT}, {name: x, type: "TENSOR(FLOAT, 4)"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	in, err := infra.Parse("infra.yaml", []byte(inf))
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("q.sql", `SELECT c.label FROM s CROSS JOIN LATERAL m(s.x) AS c(label);`)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := bind.New(cat).Bind(script.Statements[0])
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.PlanLogical(context.Background(), plan, cat, in, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	op := res.Lowered.Problem.Operators[0]
	if ms, ok := op.Variants[0].LatencyMs[w]; ok {
		return ms
	}
	return op.Variants[0].LatencyMs["x2"]
}

// A worker's model sessions run with its type's vcpus as threads, or with
// the threads the infrastructure (or the worker itself) says: the planner
// takes the variant's profile of that thread count.
func TestLatencyOfTheWorkersThreads(t *testing.T) {
	const types = "tiers: [{name: edge}]\nworker_types: [{name: x2, vcpus: 2, price: 1}]\n"
	for _, tc := range []struct {
		workers string
		want    float64
	}{
		{"workers: [{name: w, type: x2, tier: edge}]", 60},              // 2 vcpus: the 2-thread profile
		{"workers: [{name: w, type: x2, tier: edge, threads: 1}]", 110}, // a worker that shares its machine
		{"workers: [{name: w, type: x2, tier: edge, threads: 8}]", 60},  // no 8-thread profile: the most under 8
	} {
		if got := latencyOn(t, types+tc.workers, "w"); got != tc.want {
			t.Errorf("%s: %g ms an item, want %g", tc.workers, got, tc.want)
		}
	}
}
