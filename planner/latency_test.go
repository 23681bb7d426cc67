package planner_test

import (
	"context"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
)

const latencyCatalog = `models:
  - name: classify
    inputs: [{name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]
    outputs: [{name: label, type: VARCHAR}, {name: score, type: FLOAT}]
    variants:
      - name: big
        accuracy: 90
        output_kb: 0.02
        latency_ms:
          x2:
            p50: 0.5
            p75: 0.6
            p90: 0.7
            by_batch:
              1: {p50: 2, p75: 2.5, p90: 3}
              2: {p50: 3, p75: 3.5, p90: 4}
              4: {p50: 4, p75: 4.5, p90: 5}
              8: {p50: 6, p75: 7, p90: 8}
              16: {p50: 10, p75: 12, p90: 14}
streams:
  - {name: frames, source: nats, subject: f, format: arrow, tier: edge, rate: 800, item_kb: 3.1,
     columns: [{name: id, type: BIGINT}, {name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]}
`

const latencyInfra = `tiers: [{name: edge}, {name: hub}]
worker_types: [{name: x2, vcpus: 2, price: 1}]
workers:
  - {name: e, type: x2, tier: edge}
  - {name: h, type: x2, tier: hub, count: 2}
links:
  - {from: edge, to: hub, cost_per_gb: 0, bandwidth_mbps: 0.31}
`

// TestLatencyBoundPicksTheBatchSize: WITH (LATENCY <= x) leaves the model
// x minus an item's network time (3.1 KB over 0.31 MB/s: 10 ms when the
// model is on the hub) and the planner picks the batch size the by-batch
// profile allows in that budget, at the P90 profile.
func TestLatencyBoundPicksTheBatchSize(t *testing.T) {
	cat, err := catalog.Parse("c.yaml", []byte(latencyCatalog))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.Parse("i.yaml", []byte(latencyInfra))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		slo       string
		wantBatch int
	}{
		// 100 ms: budget 90 (or 100 on the edge); the smallest batch that
		// carries the 800 rows/s (batch 4: 800/s at p90 5 ms).
		{"100", 4},
		// 24 ms: 2 x l(b) must fit 14 (or 24); batch 4 (2 x 5) still does.
		{"24", 4},
	} {
		script, err := lang.Parse("q.sql", "SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score) WITH (LATENCY <= "+tc.slo+" MS);")
		if err != nil {
			t.Fatal(err)
		}
		res, err := planner.PlanStatement(context.Background(), script.Statements[0], cat, inf, planner.Options{})
		if err != nil {
			t.Fatal(err)
		}
		op := res.Physical.Operator("classify")
		if op == nil || op.Batch == nil {
			t.Fatalf("no model operator: %+v", res.Physical.Operators)
		}
		b := op.Batch
		net := 0.0
		if op.Workers[0].Tier == "hub" {
			net = 3.1 / 1024 / 0.31 * 1000
		}
		slo := map[string]float64{"100": 100, "24": 24}[tc.slo]
		if d := b.ComputeBudgetMs - (slo - net); d > 1e-9 || d < -1e-9 {
			t.Errorf("LATENCY %s on %s: compute budget %v, want %v", tc.slo, op.Workers[0].Tier, b.ComputeBudgetMs, slo-net)
		}
		if b.MaxBatch != tc.wantBatch || b.BatchFrom != "latency" {
			t.Errorf("LATENCY %s: batch %d from %s, want %d from latency", tc.slo, b.MaxBatch, b.BatchFrom, tc.wantBatch)
		}
		if b.MaxDelay > 5*time.Millisecond {
			t.Errorf("max delay %v", b.MaxDelay)
		}
	}
}
