package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestImportJellybean imports the reference inputs and plans the imported
// query: the same optimum as the committed examples/vqa, below the
// prototype's published 7.5088.
func TestImportJellybean(t *testing.T) {
	ref := "../../../shared/reference/jellybean-vqa-medium"
	if _, err := os.Stat(ref); err != nil {
		t.Skipf("reference inputs not found at %s", ref)
	}
	out := t.TempDir()
	if _, stderr, code := runTierflow(t, "import", "jellybean", ref, "--out", out); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"catalog.yaml", "infra.yaml", "query.sql"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	imp := explainJSON(t, "--strategy", "exhaustive", filepath.Join(out, "query.sql"))
	ex := explainJSON(t, "--strategy", "exhaustive", "../../examples/vqa/query.sql")
	if !imp.Feasible || math.Abs(imp.TotalCost-ex.TotalCost) > 1e-9 || imp.TotalCost >= 7.5088 {
		t.Fatalf("imported plan %v (feasible %v), examples/vqa %v", imp.TotalCost, imp.Feasible, ex.TotalCost)
	}
	if _, _, code := runTierflow(t, "import", "jellybean", t.TempDir(), "--out", out); code != exitBadInput {
		t.Fatalf("importing an empty directory: exit %d, want %d", code, exitBadInput)
	}
}
