package coordinator

import (
	"testing"

	"github.com/tierflow/tierflow/planner/physical"
)

func TestVariantsMoved(t *testing.T) {
	old := &physical.Plan{Operators: []physical.Operator{{Name: "classify", Variant: "mlp-small"}, {Name: "filter"}}}
	same := &physical.Plan{Operators: []physical.Operator{{Name: "classify", Variant: "mlp-small"}, {Name: "filter"}}}
	cnn := &physical.Plan{Operators: []physical.Operator{{Name: "classify", Variant: "cnn"}, {Name: "filter"}}}
	if got := variantsMoved(old, same); got != "" {
		t.Errorf("same variants: %q", got)
	}
	if got := variantsMoved(old, cnn); got != "classify: mlp-small -> cnn" {
		t.Errorf("moved: %q", got)
	}
	if got := variantsMoved(nil, cnn); got != "" {
		t.Errorf("no old plan: %q", got)
	}
}
