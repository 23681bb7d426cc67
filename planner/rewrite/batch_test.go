package rewrite_test

import (
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// Rewriting (pruned columns, filters below the model) keeps a model call's
// own batching.
func TestRewriteKeepsCallBatching(t *testing.T) {
	script, err := lang.Parse("q.sql", `
CREATE MODEL m OUTPUTS (label VARCHAR, score FLOAT) VARIANTS (v FROM 'm.onnx');
CREATE STREAM s (id BIGINT, x TENSOR(FLOAT, 4), extra VARCHAR) FROM FILE 's.arrow' FORMAT ARROW;
SELECT s.id, c.label FROM s CROSS JOIN LATERAL m(s.x) WITH (max_batch = 4, max_delay_ms = 2) AS c(label, score) WHERE s.id > 3;
`)
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalog.Catalog{}
	var plan *logical.Plan
	for _, st := range script.Statements {
		if ok, err := bind.Apply(cat, st); ok {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if plan, err = bind.New(cat).Bind(st); err != nil {
			t.Fatal(err)
		}
	}
	var found *logical.LateralModel
	logical.Walk(rewrite.Apply(plan).Root, func(n logical.Node) bool {
		if lm, ok := n.(*logical.LateralModel); ok {
			found = lm
		}
		return true
	})
	if found == nil || found.Batch.MaxBatch != 4 || found.Batch.MaxDelay.Milliseconds() != 2 {
		t.Fatalf("model call after rewrite: %+v", found)
	}
}
