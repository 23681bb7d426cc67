package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/explain"
	"github.com/tierflow/tierflow/planner/infra"
)

const adaptCatalog = `models:
  - name: classify
    inputs: [{name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]
    outputs: [{name: label, type: VARCHAR}, {name: score, type: FLOAT}]
    variants:
      - {name: small, accuracy: 84, output_kb: 0.02, input_size: [14, 14], latency_ms: {y2: {p50: 0.5, p75: 0.6, p90: 0.7}}}
streams:
  - {name: frames, source: nats, subject: f, format: arrow, tier: edge, rate: 100, item_kb: 3.1,
     columns: [{name: id, type: BIGINT}, {name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]}
`

const adaptInfra = `tiers: [{name: edge}, {name: hub}]
worker_types: [{name: x2, vcpus: 2, price: 1}, {name: y2, vcpus: 2, price: 1}]
workers:
  - {name: e, type: x2, tier: edge}
  - {name: h, type: y2, tier: hub}
links:
  - {from: edge, to: hub, cost_per_gb: 0.1, bandwidth_mbps: 100}
`

// EXPLAIN shows the source-side adaptation of the chosen variant: the
// images resized (and with uint8 packed) with the source, before the link
// to the model on the hub; SET planner.adapt_inputs = 'off' leaves them.
func TestExplainShowsTheAdaptation(t *testing.T) {
	cat, err := catalog.Parse("c.yaml", []byte(adaptCatalog))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.Parse("i.yaml", []byte(adaptInfra))
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("q.sql", "SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score) WITH (LATENCY <= 100 MS);")
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{
		"":      "runs with: Adapt image 28x28 -> 14x14 float32 for classify small (before the link)",
		"uint8": "runs with: Adapt image 28x28 -> 14x14 uint8 for classify small (before the link)",
		"off":   "",
	} {
		res, err := planner.PlanStatement(context.Background(), script.Statements[0], cat, inf, planner.Options{AdaptInputs: mode})
		if err != nil {
			t.Fatal(err)
		}
		text := explain.Text(res.Physical)
		src := res.Physical.Source("frames")
		has := src != nil && len(src.Fused) > 0 && strings.Contains(strings.Join(src.Fused, "\n"), "Adapt")
		if want == "" && (has || strings.Contains(text, "Adapt")) || want != "" && (!has || !strings.Contains(text, want)) {
			t.Errorf("mode %q: want %q with the source:\n%s", mode, want, text)
		}
	}
}
