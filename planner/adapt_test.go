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

// The model runs on the edge (price 1) or on the hub (price 0.5) behind a
// link at 1 per GB: shipping the stream's full-size frames (3.1 KB x 100/s)
// costs more than the edge worker saves, the resized 14x14 ones do not.
const adaptCostCatalog = `models:
  - name: classify
    inputs: [{name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]
    outputs: [{name: label, type: VARCHAR}, {name: score, type: FLOAT}]
    variants:
      - {name: small, accuracy: 84, output_kb: 0.02, input_size: [14, 14],
         latency_ms: {x2: {p50: 0.5, p75: 0.6, p90: 0.7}, y2: {p50: 0.5, p75: 0.6, p90: 0.7}}}
streams:
  - {name: frames, source: nats, subject: f, format: arrow, tier: edge, rate: 100, item_kb: 3.1,
     columns: [{name: id, type: BIGINT}, {name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]}
`

const adaptCostInfra = `tiers: [{name: edge}, {name: hub}]
worker_types: [{name: x2, vcpus: 2, price: 1}, {name: y2, vcpus: 2, price: 0.5}]
workers:
  - {name: e, type: x2, tier: edge}
  - {name: h, type: y2, tier: hub}
links:
  - {from: edge, to: hub, cost_per_gb: 1, bandwidth_mbps: 100}
`

func planAdapt(t *testing.T, catText, infText, query, mode string) *planner.Result {
	t.Helper()
	cat, err := catalog.Parse("c.yaml", []byte(catText))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.Parse("i.yaml", []byte(infText))
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("q.sql", query)
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.PlanStatement(context.Background(), script.Statements[0], cat, inf, planner.Options{AdaptInputs: mode})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The network cost counts the bytes that cross the link after the
// source-side resize: 14x14 float32 (784 B) or uint8 (196 B) images plus
// the id's share of item_kb, not the stream's 3.1 KB. That turns the
// placement around: with the full-size bytes (adapt_inputs off) the model
// stays on the dearer edge worker.
func TestNetworkCostCountsTheAdaptedBytes(t *testing.T) {
	const q = "SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score);"
	idKB := 3.1 * 8 / (8 + 28*28*4)
	perHour := func(kb float64) float64 { return 100 * kb * 3600 / (1024 * 1024) }
	// At 0.31 Mbit/s (37.8 KB/s) the link's cap binds too: only the uint8
	// frames (19.9 KB/s) fit, the float32 ones (77 KB/s) do not.
	narrow := strings.Replace(adaptCostInfra, "bandwidth_mbps: 100", "bandwidth_mbps: 0.31", 1)
	for _, tc := range []struct {
		mode    string
		inf     string
		tier    string
		network float64
	}{
		{"off", adaptCostInfra, "edge", 0},
		{"", adaptCostInfra, "hub", perHour(idKB + 14*14*4/1024.0)},
		{"uint8", adaptCostInfra, "hub", perHour(idKB + 14*14/1024.0)},
		{"", narrow, "edge", 0},
		{"uint8", narrow, "hub", perHour(idKB + 14*14/1024.0)},
	} {
		res := planAdapt(t, adaptCostCatalog, tc.inf, q, tc.mode)
		op := res.Physical.Operator("classify")
		if op == nil || len(op.Workers) == 0 {
			t.Fatalf("mode %q: no placed model operator: %+v", tc.mode, res.Physical.Operators)
		}
		if got := op.Workers[0].Tier; got != tc.tier {
			t.Errorf("mode %q: model on %s, want %s\n%s", tc.mode, got, tc.tier, explain.Text(res.Physical))
		}
		if d := res.Physical.NetworkCost - tc.network; d > 1e-9 || d < -1e-9 {
			t.Errorf("mode %q: network cost %v per hour, want %v", tc.mode, res.Physical.NetworkCost, tc.network)
		}
	}
}

// The LATENCY compute budget is the bound minus the time the adapted item
// takes over the link (4 Mbit/s), not the full-size item's.
func TestLatencyBudgetCountsTheAdaptedBytes(t *testing.T) {
	// Only the hub runs the model, with a by-batch profile.
	cat := strings.Replace(adaptCostCatalog, "latency_ms: {x2: {p50: 0.5, p75: 0.6, p90: 0.7}, y2: {p50: 0.5, p75: 0.6, p90: 0.7}}",
		"latency_ms: {y2: {p50: 0.5, p75: 0.6, p90: 0.7, by_batch: {1: {p50: 2, p75: 2.5, p90: 3}, 2: {p50: 3, p75: 3.5, p90: 4}}}}", 1)
	const q = "SELECT id, c.label FROM frames CROSS JOIN LATERAL classify(image) AS c(label, score) WITH (LATENCY <= 100 MS);"
	idKB := 3.1 * 8 / (8 + 28*28*4)
	inf := strings.Replace(adaptCostInfra, "bandwidth_mbps: 100", "bandwidth_mbps: 4", 1)
	mbps := 4 * 1e6 / 8 / (1024 * 1024)
	netMs := func(kb float64) float64 { return kb / 1024 / mbps * 1000 }
	for _, tc := range []struct {
		mode   string
		budget float64
	}{
		{"off", 100 - netMs(3.1)},
		{"", 100 - netMs(idKB+14*14*4/1024.0)},
		{"uint8", 100 - netMs(idKB+14*14/1024.0)},
	} {
		res := planAdapt(t, cat, inf, q, tc.mode)
		op := res.Physical.Operator("classify")
		if op == nil || op.Batch == nil || len(op.Workers) == 0 || op.Workers[0].Tier != "hub" {
			t.Fatalf("mode %q: want the model batched on the hub: %+v", tc.mode, res.Physical.Operators)
		}
		if d := op.Batch.ComputeBudgetMs - tc.budget; d > 1e-9 || d < -1e-9 {
			t.Errorf("mode %q: compute budget %v ms, want %v", tc.mode, op.Batch.ComputeBudgetMs, tc.budget)
		}
	}
}
