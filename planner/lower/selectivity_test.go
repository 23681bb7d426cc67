package lower_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
)

const cascadeCatalog = `
models:
  - name: coarse
    inputs: [{name: x, type: "TENSOR(FLOAT, 4)"}]
    outputs:
      - {name: label, type: VARCHAR, values: {tops: 0.54, shoes: 0.3, bags: 0.16}}
      - {name: score, type: FLOAT}
    variants: [{name: c1, accuracy: 90, output_kb: 0.02, latency_ms: {x2: {p50: 1, p75: 1, p90: 1}}}]
  - name: fine
    inputs: [{name: x, type: "TENSOR(FLOAT, 4)"}]
    outputs: [{name: label, type: VARCHAR}, {name: score, type: FLOAT}]
    variants: [{name: f1, accuracy: 80, output_kb: 0.02, latency_ms: {x2: {p50: 1, p75: 1, p90: 1}}}]
streams:
  - {name: s, source: nats, subject: s, tier: edge, rate: 100, item_kb: 1,
     columns: [{name: id, type: BIGINT}, {name: x, type: "TENSOR(FLOAT, 4)"}]}
`

const cascadeInfra = `
tiers: [{name: edge}, {name: cloud}]
worker_types: [{name: x2, vcpus: 2, price: 1}]
workers: [{name: e, type: x2, tier: edge, count: 1}, {name: c, type: x2, tier: cloud, count: 1}]
links: [{from: edge, to: cloud, cost_per_gb: 0.1}]
`

// demandOf lowers a cascade whose filter is pred and returns the items per
// second the plan expects into the fine model.
func demandOf(t *testing.T, pred string) float64 {
	t.Helper()
	cat, err := catalog.Parse("catalog.yaml", []byte(cascadeCatalog))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.Parse("infra.yaml", []byte(cascadeInfra))
	if err != nil {
		t.Fatal(err)
	}
	src := `SELECT f.label FROM s CROSS JOIN LATERAL coarse(s.x) AS g(label, score)
CROSS JOIN LATERAL fine(s.x) AS f(label, score) WHERE ` + pred + `;`
	script, err := lang.Parse("q.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := bind.New(cat).Bind(script.Statements[0])
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.PlanLogical(context.Background(), plan, cat, inf, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range res.Physical.Operators {
		if strings.HasPrefix(op.Name, "fine") {
			return op.Demand
		}
	}
	t.Fatalf("no fine stage in %+v", res.Physical.Operators)
	return 0
}

// A filter on a classifier's label keeps that label's measured share of the
// rows; without measured values (or on another column) the textbook guesses
// stay.
func TestFilterOnModelOutputUsesMeasuredValues(t *testing.T) {
	for _, c := range []struct {
		pred string
		want float64
	}{
		{"g.label = 'tops'", 54},
		{"g.label <> 'tops'", 46},
		{"g.label IN ('shoes', 'bags')", 46},
		{"g.label = 'hats'", 10},     // not measured: the 0.1 default
		{"s.id = 3", 10},             // not a model output
		{"g.score > 0.5", 100.0 / 3}, // a range: 1/3
	} {
		if got := demandOf(t, c.pred); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("WHERE %s: %.4g items/s into fine, want %.4g", c.pred, got, c.want)
		}
	}
}
