package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// TestProfileFashion profiles the fashion catalog with a small batch list and
// checks what it writes against independent numbers: each classify variant's
// accuracy against the generator's (its own Go forward pass), and one cascade
// combination against fashion.EvaluateCascade (the Go graph interpreter).
func TestProfileFashion(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "fashion")
	subset, err := fashion.LoadSubset(dir)
	if err != nil {
		t.Fatal(err)
	}
	subsetCounts := make([]int, len(fashion.Labels))
	for _, y := range subset.Labels {
		subsetCounts[y]++
	}
	out := filepath.Join(t.TempDir(), "profiled.yaml")
	var stdout, errb bytes.Buffer
	code := run([]string{"profile", "--catalog", filepath.Join(dir, "catalog.yaml"), "--data", filepath.Join(dir, "data", "shelf.arrow"),
		"--truth", "garment=true_group", "--keep", "garment=tops", "--batch", "1,4", "--at-batch", "4",
		"--iterations", "3", "--warmup", "1", "--worker-type", "probe", "--out", out}, nil, &stdout, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "profiling") || !strings.Contains(errb.String(), "wrote "+out) {
		t.Errorf("no progress or write line: %s", errb.String())
	}
	for _, s := range []string{"garment-mlp", "cnn", "Workflow accuracy by variants", "garment-logreg -> mlp-small"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, stdout.String())
		}
	}
	cat, err := catalog.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := fashion.Variants(dir)
	if err != nil {
		t.Fatal(err)
	}
	classify := cat.Model("classify")
	for _, v := range vs {
		cv := classify.Variant(v.Name)
		if cv == nil {
			t.Fatalf("no variant %s", v.Name)
		}
		// At most 2 of 2,000 rows may flip on a near-tie between runtimes.
		if math.Abs(cv.Accuracy-100*v.SubsetAccuracy) > 0.11 {
			t.Errorf("%s: profiled accuracy %.2f, generator %.2f", v.Name, cv.Accuracy, 100*v.SubsetAccuracy)
		}
		l, ok := cv.Latency["probe"]
		if !ok || l.P50 <= 0 || l.P75 < l.P50 || l.P90 < l.P75 {
			t.Errorf("%s: latency %+v", v.Name, cv.Latency)
		}
		// Every --batch size is kept, per call: batch 4's call is the
		// per-item latency (recorded at --at-batch 4) times 4.
		if b1, b4 := l.ByBatch[1], l.ByBatch[4]; len(l.ByBatch) != 2 || b1.P50 <= 0 || math.Abs(b4.P50-4*l.P50) > 1e-5 {
			t.Errorf("%s: by_batch %+v (per item %v)", v.Name, l.ByBatch, l.P50)
		}
		if cv.OutputKB <= 0 || cv.OutputKB > 0.1 {
			t.Errorf("%s: output %.3f KB for a label and a score", v.Name, cv.OutputKB)
		}
		if len(cv.Profile) != 3 {
			t.Errorf("%s: profile rows %+v, want one per garment variant", v.Name, cv.Profile)
		}
		// Per-class recall: one row per Fashion-MNIST class, supports as the
		// subset's label counts, and weighted by those supports they give
		// back the variant's accuracy (SneakPeek eq. 8).
		if len(cv.Classes) != len(fashion.Labels) {
			t.Fatalf("%s: %d classes profiled, want %d: %+v", v.Name, len(cv.Classes), len(fashion.Labels), cv.Classes)
		}
		var sum float64
		for _, c := range cv.Classes {
			idx := slices.Index(fashion.Labels, c.Class)
			if idx < 0 || c.Support != subsetCounts[idx] {
				t.Errorf("%s: class %q support %d, subset has %v", v.Name, c.Class, c.Support, subsetCounts)
			}
			sum += float64(c.Support) * c.Recall
		}
		if math.Abs(sum/2000-cv.Accuracy) > 0.02 {
			t.Errorf("%s: support-weighted recall %.3f, accuracy %.2f", v.Name, sum/2000, cv.Accuracy)
		}
		freq := map[string]float64{}
		for _, c := range cv.Classes {
			freq[c.Class] = float64(c.Support)
		}
		if math.Abs(cv.ExpectedAccuracy(freq)-cv.Accuracy) > 0.02 {
			t.Errorf("%s: expected accuracy at the subset's own mix %.3f, accuracy %.2f", v.Name, cv.ExpectedAccuracy(freq), cv.Accuracy)
		}
	}
	if rs := classify.Variant("cnn").Classes; len(rs) > 0 {
		lo, hi := 100.0, 0.0
		for _, c := range rs {
			lo, hi = min(lo, c.Recall), max(hi, c.Recall)
		}
		// Fashion-MNIST's shirts are far harder than its trousers.
		if hi-lo < 20 {
			t.Errorf("cnn recall spans %.1f..%.1f: not per class", lo, hi)
		}
	}
	e2e := classify.EndToEnd
	if e2e == nil || len(e2e.Rows) != 12 || strings.Join(e2e.Models, ",") != "garment,classify" {
		t.Fatalf("end_to_end %+v", e2e)
	}
	sub, err := fashion.LoadSubset(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fashion.EvaluateCascade(dir, sub, "garment-logreg.onnx", "mlp-small.onnx", "tops")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e2e.Rows {
		if r.Variants[0] == "garment-logreg" && r.Variants[1] == "mlp-small" && math.Abs(r.Accuracy-100*want.Accuracy()) > 0.25 {
			t.Errorf("end_to_end %v: %.2f, independent %.2f", r.Variants, r.Accuracy, 100*want.Accuracy())
		}
	}
}

func TestProfileJSONAndBadInput(t *testing.T) {
	t.Parallel() // an in-process CLI, no bound on time
	dir := filepath.Join("..", "..", "examples", "fashion")
	var stdout, errb bytes.Buffer
	code := run([]string{"profile", "--catalog", filepath.Join(dir, "catalog.yaml"), "--data", filepath.Join(dir, "data", "shelf.arrow"),
		"--model", "garment", "--truth", "garment=true_group", "--batch", "2", "--iterations", "2", "--format", "json"}, nil, &stdout, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(rows) != 3 || rows[0]["model"] != "garment" || rows[0]["batch"] != float64(2) {
		t.Fatalf("rows %v", rows)
	}
	for _, args := range [][]string{
		{"profile", "--catalog", filepath.Join(dir, "catalog.yaml"), "--iterations", "0"},
		{"profile", "--catalog", filepath.Join(dir, "catalog.yaml"), "--data", filepath.Join(dir, "data", "shelf.arrow"), "--model", "nope"},
		{"profile", "--catalog", filepath.Join(dir, "catalog.yaml"), "--data", filepath.Join(dir, "data", "shelf.arrow"), "--batch", "0"},
		{"profile", "--catalog", filepath.Join(dir, "catalog.yaml"), "--data", filepath.Join(dir, "catalog.yaml")},
	} {
		if code := run(args, nil, &stdout, &errb); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", args, code, exitBadInput)
		}
	}
}

// TestProfileTwoInputModelWithoutData profiles a model with two tensor inputs
// (written here with the zoo's ONNX writer) without a validation set: the
// inputs are made up from the catalog's shapes, latency and output size land
// in the catalog, accuracy is not measured.
func TestProfileTwoInputModelWithoutData(t *testing.T) {
	t.Parallel() // an in-process CLI over its own files, no bound on time
	dir := t.TempDir()
	n := modelzoo.Dim{Param: "N"}
	g := &modelzoo.Graph{
		Name: "vqa",
		Inputs: []modelzoo.ValueInfo{
			{Name: "feature", Shape: []modelzoo.Dim{n, {Value: 4}}},
			{Name: "speech", Shape: []modelzoo.Dim{n, {Value: 2}}},
		},
		Outputs:      []modelzoo.ValueInfo{{Name: "probs", Shape: []modelzoo.Dim{n, {Value: 2}}}},
		Initializers: []modelzoo.Initializer{{Name: "w", Dims: []int64{2, 6}, Data: []float32{1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}}, {Name: "b", Dims: []int64{2}, Data: []float32{0, 0}}},
		Nodes: []modelzoo.Node{
			{OpType: "Concat", Name: "concat", Inputs: []string{"feature", "speech"}, Outputs: []string{"x"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}},
			{OpType: "Gemm", Name: "fc", Inputs: []string{"x", "w", "b"}, Outputs: []string{"logits"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("transB", 1)}},
			{OpType: "Softmax", Name: "softmax", Inputs: []string{"logits"}, Outputs: []string{"probs"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}},
		},
		Metadata: map[string]string{"tierflow.labels": "yes,no"},
	}
	if err := g.WriteFile(filepath.Join(dir, "vqa.onnx")); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(cat, []byte(`models:
  - name: VQA
    inputs:
      - {name: feature, type: "TENSOR(FLOAT, 4)"}
      - {name: speech, type: "TENSOR(FLOAT, 2)"}
    outputs:
      - {name: answer, type: VARCHAR}
    variants:
      - {name: tiny, file: vqa.onnx, accuracy: 50, output_kb: 1, latency_ms: {probe: {p50: 1, p75: 1, p90: 1}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "profiled.yaml")
	var stdout, errb bytes.Buffer
	code := run([]string{"profile", "--catalog", cat, "--model", "VQA", "--batch", "1,8", "--iterations", "3", "--warmup", "1",
		"--worker-type", "probe", "--out", out}, nil, &stdout, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(stdout.String(), "tiny") {
		t.Errorf("summary: %s", stdout.String())
	}
	c, err := catalog.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Model("VQA").Variant("tiny")
	if l, ok := v.Latency["probe"]; !ok || l.P50 <= 0 || v.OutputKB <= 0 || v.Accuracy != 50 {
		t.Errorf("variant %+v: want latency and output size measured, accuracy kept", v)
	}
}

// A model whose end_to_end table is the prototype's (upstream models only)
// profiles without --data, its table left as it is; with --data the table
// must end in the model, refused before anything is measured.
func TestProfileLeavesForeignEndToEnd(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("ONNX Runtime library not set up (scripts/setup.sh): %v", err)
	}
	cat := filepath.Join("..", "..", "examples", "vqa-live", "catalog.yaml")
	code, out, errs := runCLI(t, "", "--catalog", cat, "profile", "--model", "VQA", "--batch", "1", "--iterations", "5")
	if code != exitOK || !strings.Contains(out, "vqa-mlp64") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	data := filepath.Join("..", "..", "examples", "vqa-live", "data", "images.arrow")
	code, _, errs = runCLI(t, "", "--catalog", cat, "profile", "--model", "VQA", "--data", data, "--batch", "1")
	if code != exitBadInput || !strings.Contains(errs, "end_to_end models [ExtractImageFeature SpeechRecognition] must end in VQA") || strings.Contains(errs, "profiling") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
