package rewrite_test

import (
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// bindTwoCameras binds a query over the UNION ALL of two camera streams
// with a size-adaptive zoo (sized) or not.
func bindTwoCameras(t *testing.T, sized bool, with string) *logical.Plan {
	t.Helper()
	script, err := lang.Parse("q.sql", `
CREATE MODEL m OUTPUTS (label VARCHAR, score FLOAT) VARIANTS (small FROM 'small.onnx', large FROM 'large.onnx');
CREATE STREAM a (id BIGINT, image TENSOR(FLOAT, 1, 28, 28)) FROM FILE 'a.arrow' FORMAT ARROW;
CREATE STREAM b (id BIGINT, image TENSOR(FLOAT, 1, 28, 28)) FROM FILE 'b.arrow' FORMAT ARROW;
SELECT u.id, c.label FROM (SELECT id, image FROM a UNION ALL SELECT id, image FROM b) AS u
CROSS JOIN LATERAL m(u.image) AS c(label, score) `+with+`;`)
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
	if sized {
		m := cat.Model("m")
		m.Variant("small").InputSize, m.Variant("large").InputSize = []int{14, 14}, []int{28, 28}
	}
	return plan
}

func calls(root logical.Node) []string {
	var out []string
	logical.Walk(root, func(n logical.Node) bool {
		if lm, ok := n.(*logical.LateralModel); ok {
			out = append(out, lm.Name)
		}
		return true
	})
	return out
}

// A latency-bound query over two sources with a size-adaptive zoo gets a
// call per source, each under the projection that drops its image, so
// that each can be adapted before its own link; the result's schema is the
// same. Without LATENCY, or with a zoo of one size, it keeps one call.
func TestSplitCallsBySource(t *testing.T) {
	plan := bindTwoCameras(t, true, "WITH (LATENCY <= 100 MS)")
	root := rewrite.Apply(plan).Root
	if got := calls(root); len(got) != 2 || got[0] != "m#1" || got[1] != "m#2" {
		t.Fatalf("calls %v, want m#1 and m#2:\n%s", got, logical.Format(root, nil))
	}
	if !root.Schema().Equal(plan.Root.Schema()) {
		t.Errorf("schema %s, want %s", root.Schema(), plan.Root.Schema())
	}
	adapted := rewrite.AdaptInputs(root, map[string]string{"m#1": "small", "m#2": "large"}, "")
	n := 0
	logical.Walk(adapted, func(x logical.Node) bool {
		if a, ok := x.(*logical.Adapt); ok {
			n++
			if a.For != "m#1 small" {
				t.Errorf("adaptation %s, want m#1's alone", a.Describe())
			}
		}
		return true
	})
	if n != 1 {
		t.Errorf("%d adaptations, want 1 (m#1's):\n%s", n, logical.Format(adapted, nil))
	}
	if got := calls(rewrite.Apply(bindTwoCameras(t, true, "")).Root); len(got) != 1 {
		t.Errorf("no LATENCY: calls %v, want one", got)
	}
	if got := calls(rewrite.Apply(bindTwoCameras(t, false, "WITH (LATENCY <= 100 MS)")).Root); len(got) != 1 {
		t.Errorf("one input size: calls %v, want one", got)
	}
}
