package jellybean

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// refDir holds a verbatim copy of the prototype's published inputs
// (shared/reference/jellybean-vqa-medium), stray comma included.
func refDir(testing.TB) string { return filepath.Join("testdata", "jellybean-vqa-medium") }

// PublishedPlan is the plan the prototype's optimizer prints on the reference
// inputs (README), workers in fill order.
var publishedPlan = optimize.Assignment{
	{Operator: "ExtractImageFeature", Variant: "resnet18", Workers: []string{"workflow-compute-cpu-1", "workflow-compute-cpu-2", "workflow-compute-cpu-5"}},
	{Operator: "SpeechRecognition", Variant: "wav2vec2-large-960h-lv60-self", Workers: []string{"workflow-compute-gpu-1", "workflow-compute-cpu-3"}},
	{Operator: "VQA", Variant: "default", Workers: []string{"workflow-compute-cpu-6"}},
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestPublishedPlanCost(t *testing.T) {
	pr, err := Load(refDir(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pr.Problem("p75")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := optimize.Evaluate(p, publishedPlan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Feasible {
		t.Fatalf("published plan infeasible: %v", pl.Violations)
	}
	if !near(pl.ComputeCost, 6.242, 1e-9) || !near(pl.NetworkCost, 1.2667783, 1e-6) ||
		!near(pl.TotalCost, 7.5088, 5e-5) || !near(pl.Accuracy, 56.59, 1e-9) {
		t.Fatalf("published plan: compute %v network %v total %v accuracy %v; want 6.242 1.2667783 7.5088 56.59",
			pl.ComputeCost, pl.NetworkCost, pl.TotalCost, pl.Accuracy)
	}
}

func TestStrayCommaNoted(t *testing.T) {
	pr, err := Load(refDir(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range pr.Notes {
		if strings.Contains(n, "execution_profile_p75.csv:5:") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no note for the stray comma on line 5 of the P75 profile: %v", pr.Notes)
	}
	for _, pc := range []string{"p50", "p75", "p90", ""} {
		if _, err := pr.Problem(pc); err != nil {
			t.Errorf("%q: %v", pc, err)
		}
	}
	if _, err := pr.Problem("p99"); !errors.Is(err, ErrPercentile) {
		t.Errorf("p99: got %v, want ErrPercentile", err)
	}
}
