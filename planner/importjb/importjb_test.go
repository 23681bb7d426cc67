package importjb

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/jellybean"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/optimize"
)

const refDir = "../../../shared/reference/jellybean-vqa-medium"

func reference(t *testing.T) *jellybean.Prototype {
	t.Helper()
	dir := refDir
	if _, err := os.Stat(dir); err != nil {
		dir = "/work/shared/reference/jellybean-vqa-medium"
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("reference data not found at %s", refDir)
	}
	pr, err := jellybean.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// imported writes the converted files, reads them back and lowers the query.
func imported(t *testing.T, pr *jellybean.Prototype, pct int) *optimize.Problem {
	t.Helper()
	res, err := Convert(pr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cb, err := res.Catalog.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ib, err := res.Infra.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"catalog.yaml": cb, "infra.yaml": ib, "query.sql": []byte(res.Query)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.LoadFile(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := infra.LoadFile(filepath.Join(dir, "infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The prototype's missing pair means multiplier 0, and the file says so.
	if inf.DefaultLink == nil || inf.DefaultLink.CostPerGB != 0 {
		t.Fatalf("imported infrastructure without default_link {cost_per_gb: 0}:\n%s", ib)
	}
	script, err := lang.Parse("query.sql", res.Query)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Query)
	}
	plan, err := bind.New(cat).Bind(script.Statements[0])
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Query)
	}
	lo, err := lower.Lower(plan, cat, inf, lower.Options{Percentile: pct})
	if err != nil {
		t.Fatal(err)
	}
	return lo.Problem
}

// TestEquivalentTotals: planning the imported files gives the same totals as
// planning the prototype directly, for the published plan and for every
// strategy's own plan, at every percentile.
func TestEquivalentTotals(t *testing.T) {
	pr := reference(t)
	published := optimize.Assignment{
		{Operator: "ExtractImageFeature", Variant: "resnet18", Workers: []string{"workflow-compute-cpu-1", "workflow-compute-cpu-2", "workflow-compute-cpu-5"}},
		{Operator: "SpeechRecognition", Variant: "wav2vec2-large-960h-lv60-self", Workers: []string{"workflow-compute-gpu-1", "workflow-compute-cpu-3"}},
		{Operator: "VQA", Variant: "default", Workers: []string{"workflow-compute-cpu-6"}},
	}
	for _, pct := range []int{50, 75, 90} {
		direct, err := pr.Problem(map[int]string{50: "p50", 75: "p75", 90: "p90"}[pct])
		if err != nil {
			t.Fatal(err)
		}
		imp := imported(t, pr, pct)
		a, err := optimize.Evaluate(direct, published, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := optimize.Evaluate(imp, published, nil)
		if err != nil {
			t.Fatal(err)
		}
		same(t, pct, "published", a, b)
		if pct == 75 && math.Abs(a.TotalCost-7.5088) > 1e-3 {
			t.Errorf("published plan costs %v, want 7.5088", a.TotalCost)
		}
		for _, s := range []string{"auto", "jellybean", "best-fit", "first-fit", "most-accurate"} {
			pa, err := optimize.DefaultRegistry().Optimize(context.Background(), s, direct, optimize.Options{})
			if err != nil {
				t.Fatalf("%s on prototype: %v", s, err)
			}
			pb, err := optimize.DefaultRegistry().Optimize(context.Background(), s, imp, optimize.Options{})
			if err != nil {
				t.Fatalf("%s on import: %v", s, err)
			}
			same(t, pct, s, pa, pb)
		}
	}
}

func same(t *testing.T, pct int, what string, a, b *optimize.Plan) {
	t.Helper()
	if a.Feasible != b.Feasible || math.Abs(a.TotalCost-b.TotalCost) > 1e-9 || math.Abs(a.ComputeCost-b.ComputeCost) > 1e-9 ||
		math.Abs(a.NetworkCost-b.NetworkCost) > 1e-9 || math.Abs(a.Accuracy-b.Accuracy) > 1e-9 {
		t.Errorf("p%d %s: prototype %v/%v/%v acc %v feasible %v; imported %v/%v/%v acc %v feasible %v", pct, what,
			a.ComputeCost, a.NetworkCost, a.TotalCost, a.Accuracy, a.Feasible,
			b.ComputeCost, b.NetworkCost, b.TotalCost, b.Accuracy, b.Feasible)
	}
}

func TestColumnName(t *testing.T) {
	for in, want := range map[string]string{"ReadImage": "image", "ExtractImageFeature": "extract_image_feature", "VQA": "vqa", "SpeechRecognition": "speech_recognition"} {
		if got := columnName(in); got != want {
			t.Errorf("columnName(%s) = %s, want %s", in, got, want)
		}
	}
}
