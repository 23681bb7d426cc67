package rewrite_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// boundSized binds query over a stream of 28x28 images and a model whose
// variants take 14x14 (small) and 28x28 (full) images.
func boundSized(t *testing.T, query string) *logical.Plan {
	t.Helper()
	script, err := lang.Parse("q.sql", `
CREATE MODEL m OUTPUTS (label VARCHAR, score FLOAT) VARIANTS (small FROM 'small.onnx', large FROM 'large.onnx');
CREATE STREAM s (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28)) FROM FILE 's.arrow' FORMAT ARROW;
`+query)
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
	m := cat.Model("m")
	m.Variant("small").InputSize, m.Variant("large").InputSize = []int{14, 14}, []int{28, 28}
	return rewrite.Apply(plan)
}

func adaptOf(root logical.Node) (*logical.Adapt, *logical.LateralModel) {
	var a *logical.Adapt
	var lm *logical.LateralModel
	logical.Walk(root, func(n logical.Node) bool {
		switch x := n.(type) {
		case *logical.Adapt:
			a = x
		case *logical.LateralModel:
			lm = x
		}
		return true
	})
	return a, lm
}

// A call whose variant takes smaller images than the stream's gets an
// Adapt right under it, and its argument takes the adapted type; the
// result's schema is unchanged.
func TestAdaptInputsResizesForTheVariant(t *testing.T) {
	plan := boundSized(t, `SELECT s.id, c.label FROM s CROSS JOIN LATERAL m(s.image) AS c(label, score) WHERE s.id > 3;`)
	for _, c := range []struct {
		mode, enc, elem, shape string
	}{{"", "float32", "float32", "1,14,14"}, {"resize", "float32", "float32", "1,14,14"}, {"uint8", "uint8", "uint8", "1,14,14"}} {
		root := rewrite.AdaptInputs(plan.Root, map[string]string{"m": "small"}, c.mode)
		a, lm := adaptOf(root)
		if a == nil {
			t.Fatalf("mode %q: no adaptation in\n%s", c.mode, logical.Format(root, nil))
		}
		if lm.Input != a || a.From != 28 || a.To != 14 || a.Encoding != c.enc || a.For != "m small" {
			t.Errorf("mode %q: %s under %s", c.mode, a.Describe(), lm.Describe())
		}
		f := lm.Input.Schema().Field(a.Column)
		if s, _ := f.Metadata.GetValue(catalog.ShapeKey); s != c.shape || !strings.Contains(f.Type.String(), c.elem) {
			t.Errorf("mode %q: the call's input is %s %s", c.mode, f.Type, s)
		}
		if !root.Schema().Equal(plan.Root.Schema()) {
			t.Errorf("mode %q: result schema %s, want %s", c.mode, root.Schema(), plan.Root.Schema())
		}
		if _, isFilter := a.Input.(*logical.Filter); !isFilter {
			t.Errorf("mode %q: the adaptation should sit over the filter (fewer rows to resize): %s", c.mode, logical.Format(root, nil))
		}
	}
}

// No adaptation: with mode off; for the full-size variant (unless uint8
// packs it); when the query reads the image above the call.
func TestAdaptInputsLeavesAlone(t *testing.T) {
	plan := boundSized(t, `SELECT s.id, c.label FROM s CROSS JOIN LATERAL m(s.image) AS c(label, score);`)
	if a, _ := adaptOf(rewrite.AdaptInputs(plan.Root, map[string]string{"m": "small"}, rewrite.AdaptOff)); a != nil {
		t.Errorf("off: %s", a.Describe())
	}
	if a, _ := adaptOf(rewrite.AdaptInputs(plan.Root, map[string]string{"m": "large"}, "")); a != nil {
		t.Errorf("full-size variant: %s", a.Describe())
	}
	if a, _ := adaptOf(rewrite.AdaptInputs(plan.Root, map[string]string{"m": "large"}, rewrite.AdaptUint8)); a == nil || a.To != 28 || a.Encoding != "uint8" {
		t.Errorf("full-size variant, uint8: %v", a)
	}
	reads := boundSized(t, `SELECT s.id, s.image, c.label FROM s CROSS JOIN LATERAL m(s.image) AS c(label, score);`)
	if a, _ := adaptOf(rewrite.AdaptInputs(reads.Root, map[string]string{"m": "small"}, "")); a != nil {
		t.Errorf("the result holds the image, yet: %s", a.Describe())
	}
}

// Under a LATENCY bound the call's input may travel at any of the model's
// input sizes up to its variant's, chosen per batch by the link: the
// full-size variant gets an adaptation too, whose column is a
// variable-length list that keeps the variant's shape and lists the
// sides; the small variant has no smaller size below it and keeps its
// fixed one. Without a bound nothing changes.
func TestAdaptInputsSidesUnderLatency(t *testing.T) {
	plan := boundSized(t, `SELECT s.id, c.label FROM s CROSS JOIN LATERAL m(s.image) AS c(label, score);`)
	root := rewrite.AdaptInputsSLO(plan.Root, map[string]string{"m": "large"}, "", 100)
	a, lm := adaptOf(root)
	if a == nil || lm.Input != a || a.To != 28 || len(a.Sides) != 2 || a.Sides[0] != 28 || a.Sides[1] != 14 || a.SLOMs != 100 {
		t.Fatalf("adaptation %v under %s", a, logical.Format(root, nil))
	}
	f := lm.Input.Schema().Field(a.Column)
	if _, ok := f.Type.(*arrow.ListType); !ok {
		t.Errorf("the call's input is %s, want a list", f.Type)
	}
	if s, _ := f.Metadata.GetValue(catalog.ShapeKey); s != "1,28,28" {
		t.Errorf("shape %q", s)
	}
	if s, _ := f.Metadata.GetValue(catalog.SidesKey); s != "28,14" {
		t.Errorf("sides %q", s)
	}
	if !strings.Contains(a.Describe(), "per batch 28/14 by the link") {
		t.Errorf("describe %q", a.Describe())
	}
	if w := a.WithChildren(a.Input).(*logical.Adapt); len(w.Sides) != 2 || !w.Schema().Equal(a.Schema()) {
		t.Errorf("WithChildren lost the sides: %s", w.Describe())
	}
	if a, _ := adaptOf(rewrite.AdaptInputsSLO(plan.Root, map[string]string{"m": "small"}, "", 100)); a == nil || len(a.Sides) != 0 || a.To != 14 {
		t.Errorf("small variant: %v", a)
	}
	if a, _ := adaptOf(rewrite.AdaptInputsSLO(plan.Root, map[string]string{"m": "large"}, "", 0)); a != nil {
		t.Errorf("no bound: %s", a.Describe())
	}
}
