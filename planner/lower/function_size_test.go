package lower_test

import (
	"context"
	"math"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
)

const cropCatalog = `
models:
  - name: detect
    inputs: [{name: image, type: BLOB}]
    outputs: [{name: x0, type: INT}, {name: y0, type: INT}, {name: x1, type: INT}, {name: y1, type: INT}, {name: score, type: FLOAT}]
    output_ratio: 2
    variants: [{name: d, accuracy: 90, output_kb: 0.02, latency_ms: {x2: {p50: 10, p75: 10, p90: 10}}}]
  - name: read
    inputs: [{name: crop, type: BLOB}]
    outputs: [{name: text, type: VARCHAR}]
    variants: [{name: r, accuracy: 80, output_kb: 0.05, latency_ms: {x2: {p50: 5, p75: 5, p90: 5}}}]
streams:
  - {name: scenes, source: nats, subject: s, tier: edge, rate: 2, item_kb: 20,
     columns: [{name: id, type: BIGINT}, {name: image, type: BLOB}]}
`

// cropEdgeKB is the KB per item the planner puts on the edge from the
// detector to the reader when the catalog measures crop_image's results
// as functions (nil: not measured).
func cropEdgeKB(t *testing.T, functions string) float64 {
	t.Helper()
	cat, err := catalog.Parse("catalog.yaml", []byte(cropCatalog+functions))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.Parse("infra.yaml", []byte(cascadeInfra))
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("q.sql", `SELECT s.id, r.text FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL read(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text);`)
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
	for _, e := range res.Lowered.Problem.Edges {
		if e.From == "detect" && e.To == "read" {
			return e.KB
		}
	}
	t.Fatalf("no edge detect -> read in %+v", res.Lowered.Problem.Edges)
	return 0
}

// A crop of the frame is what crosses from the detector to the reader: the
// planner counts the catalog's measured size of crop_image's results on
// that edge (with the box's numbers beside it), not the type's guess.
func TestMeasuredFunctionSizeOnTheLink(t *testing.T) {
	guess := cropEdgeKB(t, "")
	got := cropEdgeKB(t, "functions:\n  - {name: crop_image, output_kb: 8.5}\n")
	if math.Abs(got-8.5) > 0.1 {
		t.Errorf("edge detect -> read carries %.3g KB an item with crops of 8.5 KB measured, want about 8.5 (%.3g without)", got, guess)
	}
	if math.Abs(guess-got) < 1 {
		t.Errorf("the measured size changed nothing: %.3g and %.3g KB", guess, got)
	}
}
