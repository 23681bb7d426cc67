package inference

import (
	"testing"

	"github.com/tierflow/tierflow/planner/catalog"
)

// TestCombinations checks the cascade arithmetic on hand-made predictions:
// rows reach the last model only through the upstream keep set, every pair
// of variants is measured, and the rows land in the catalog.
func TestCombinations(t *testing.T) {
	truth := []string{"a", "b", "a", "b"}
	preds := map[string][]*VariantProfile{
		"up": {
			{Model: "up", Variant: "u1", Predicted: []string{"keep", "keep", "drop", "drop"}},
			{Model: "up", Variant: "u2", Predicted: []string{"keep", "keep", "keep", "keep"}},
		},
		"down": {
			{Model: "down", Variant: "d1", Predicted: []string{"a", "a", "a", "a"}},
		},
	}
	cs, err := Combinations([]string{"up", "down"}, preds, map[string][]string{"up": {"keep"}}, truth)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Rows != 2 || cs[0].Accuracy != 50 || cs[1].Rows != 4 || cs[1].Accuracy != 50 ||
		cs[0].Variants[0] != "u1" || cs[1].Variants[0] != "u2" {
		t.Fatalf("%+v", cs)
	}
	preds["down"][0].Predicted = []string{"a", "b", "b", "b"}
	cs, _ = Combinations([]string{"up", "down"}, preds, map[string][]string{"up": {"keep"}}, truth)
	if cs[0].Accuracy != 100 || cs[1].Accuracy != 75 {
		t.Fatalf("%+v", cs)
	}
	cat := &catalog.Catalog{Models: []*catalog.Model{
		{Name: "up", Variants: []*catalog.Variant{{Name: "u1", Accuracy: 90}, {Name: "u2", Accuracy: 95}}},
		{Name: "down", Variants: []*catalog.Variant{{Name: "d1"}}},
	}}
	if err := ApplyCombinations(cat, []string{"up", "down"}, cs); err != nil {
		t.Fatal(err)
	}
	d := cat.Model("down")
	if d.EndToEnd == nil || len(d.EndToEnd.Rows) != 2 || d.EndToEnd.Rows[1].Accuracy != 75 {
		t.Fatalf("end_to_end %+v", d.EndToEnd)
	}
	prof := d.Variants[0].Profile
	if len(prof) != 2 || prof[0].Inputs[0] != 90 || prof[0].Output != 100 || prof[1].Inputs[0] != 95 || prof[1].Output != 75 {
		t.Fatalf("profile %+v", prof)
	}
	if _, err := Combinations([]string{"up", "none"}, preds, nil, truth); err == nil {
		t.Error("unmeasured model: no error")
	}
}
