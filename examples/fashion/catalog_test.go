package fashion

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/planner/catalog"
)

// The planner's catalog for this example must describe the checked-in models:
// same variants, files that exist, accuracies as the generator measured them.
func TestCatalogMatchesModels(t *testing.T) {
	c, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Variants(".")
	if err != nil {
		t.Fatal(err)
	}
	var m *catalog.Model
	for _, x := range c.Models {
		if x.Name == "classify" {
			m = x
		}
	}
	if m == nil || len(m.Variants) != len(vs) {
		t.Fatalf("catalog model classify: %+v", m)
	}
	for i, v := range vs {
		cv := m.Variants[i]
		if cv.Name != v.Name || math.Abs(cv.Accuracy-100*v.TestAccuracy) > 0.006 {
			t.Errorf("variant %d: catalog %s %.2f, generator %s %.4f", i, cv.Name, cv.Accuracy, v.Name, v.TestAccuracy)
		}
		if _, err := os.Stat(filepath.Join(".", cv.File)); err != nil {
			t.Errorf("variant %s: %v", cv.Name, err)
		}
	}
}
