package jellybean

import (
	"errors"
	"math"
	"os"
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

// copyRef copies the reference inputs into a temporary directory, replacing
// the named files' contents.
func copyRef(t *testing.T, replace map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(refDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(refDir(t), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := replace[e.Name()]; ok {
			data = []byte(r)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestErrorsNamePositions(t *testing.T) {
	dir := copyRef(t, map[string]string{
		"workers_specs.csv":         "workflow-compute-cpu-1,0.096\nworkflow-compute-cpu-2, zero\n",
		"accuracy_requirement.json": "{\n  \"sink\": \"VQA\",\n  \"threshold\": 56.0,,\n}",
		"logical_graph.csv":         "ReadImage,ExtractImageFeature,extra\n",
	})
	_, err := Load(dir)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
	for _, want := range []string{
		"workers_specs.csv:2:25: jellybean format: \"zero\" is not a number",
		"accuracy_requirement.json:3:22:",
		"logical_graph.csv:1:1: jellybean format: 3 fields, want 2",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
