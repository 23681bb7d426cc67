package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// fashionDir is examples/fashion from the test's directory. The example's
// tests are here, in a test binary that links the engine anyway, not in one
// of their own (each test binary is a link of most of the engine: make
// test's CPU).
const fashionDir = "../../examples/fashion"

// The planner's catalog for this example must describe the checked-in models:
// same variants, files that exist, accuracies as the generator measured them.
func TestFashionCatalogMatchesModels(t *testing.T) {
	c, err := catalog.LoadFile(filepath.Join(fashionDir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := fashion.Variants(fashionDir)
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
		if _, err := os.Stat(filepath.Join(fashionDir, cv.File)); err != nil {
			t.Errorf("variant %s: %v", cv.Name, err)
		}
	}
}

// TestFashionAccuracyMatchesIndependentEvaluation runs every checked-in variant through
// the ML operator (Arrow records, dynamic batching, ONNX Runtime) and checks the
// predictions row by row against modelzoo.Evaluate, a plain Go interpreter of the
// graph read back from the same ONNX file (no code shared with training or with
// ONNX Runtime), and the accuracy against the one the generator recorded.
func TestFashionAccuracyMatchesIndependentEvaluation(t *testing.T) {
	// In-process over the example's own files, no bound on time: beside
	// the drills, not in this package's serial part.
	t.Parallel()
	vs, err := fashion.Variants(fashionDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 3 {
		t.Fatalf("want at least 3 variants, got %d", len(vs))
	}
	sub, err := fashion.LoadSubset(fashionDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Labels) != 2000 {
		t.Fatalf("subset has %d rows", len(sub.Labels))
	}
	prev := 0.0
	for _, v := range vs {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rep, err := fashion.Classify(mem, fashion.Options{Dir: fashionDir, Variant: v.Name, Batch: ml.BatchConfig{MaxBatch: 32, MaxDelay: time.Millisecond, Adaptive: true}})
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		mem.AssertSize(t, 0)
		g, err := modelzoo.ReadGraph(filepath.Join(fashionDir, "models", v.File))
		if err != nil {
			t.Fatal(err)
		}
		probs, _, err := modelzoo.Evaluate(g, sub.Images, len(sub.Labels), "probs")
		if err != nil {
			t.Fatal(err)
		}
		agree, correct := 0, 0
		for i := range sub.Labels {
			p := probs[i*10 : (i+1)*10]
			k := modelzoo.Argmax(p)
			if fashion.Labels[k] == rep.Predicted[i] {
				agree++
			}
			if k == int(sub.Labels[i]) {
				correct++
			}
			if math.Abs(float64(p[k]-rep.Scores[i])) > 1e-4 && fashion.Labels[k] == rep.Predicted[i] {
				t.Errorf("%s row %d: score %v, Go reference %v", v.Name, i, rep.Scores[i], p[k])
			}
		}
		goAcc := float64(correct) / float64(len(sub.Labels))
		t.Logf("%s: ORT via operator %.4f, Go reference %.4f, generator %.4f (10k test %.4f), %d batches, provider %s",
			v.Name, rep.Accuracy, goAcc, v.SubsetAccuracy, v.TestAccuracy, rep.Stats.Batches, rep.Provider)
		// Float rounding may flip a near-tie; more than 2 rows would be a bug.
		if agree < len(sub.Labels)-2 {
			t.Errorf("%s: operator and Go reference agree on %d of %d rows", v.Name, agree, len(sub.Labels))
		}
		if math.Abs(rep.Accuracy-goAcc) > 1.0/1000 || math.Abs(rep.Accuracy-v.SubsetAccuracy) > 1.0/1000 {
			t.Errorf("%s: accuracy %.4f, Go %.4f, recorded %.4f", v.Name, rep.Accuracy, goAcc, v.SubsetAccuracy)
		}
		if rep.Failed != 0 || rep.Rows != 2000 {
			t.Errorf("%s: %d rows, %d failed", v.Name, rep.Rows, rep.Failed)
		}
		if v.TestAccuracy <= prev {
			t.Errorf("%s: test accuracy %.4f does not improve on the smaller variant's %.4f", v.Name, v.TestAccuracy, prev)
		}
		prev = v.TestAccuracy
	}
}

// fashionPredict is the independent evaluation: the Go interpreter of the ONNX graph.
func fashionPredict(t *testing.T, file string, sub *fashion.Subset, k int) []int {
	t.Helper()
	g, err := modelzoo.ReadGraph(filepath.Join(fashionDir, "models", file))
	if err != nil {
		t.Fatal(err)
	}
	probs, _, err := modelzoo.Evaluate(g, sub.Images, len(sub.Labels), "probs")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(sub.Labels))
	for i := range out {
		out[i] = modelzoo.Argmax(probs[i*k : (i+1)*k])
	}
	return out
}

// TestFashionClassifyQueryMatchesEvaluation runs classify.sql (CROSS JOIN LATERAL over
// the labelled stream file) and checks every row's prediction against the
// graph interpreted in Go on the same image, and the accuracy against the one
// the generator recorded for the subset.
func TestFashionClassifyQueryMatchesEvaluation(t *testing.T) {
	t.Parallel()
	res, choices := runExampleScript(t, filepath.Join(fashionDir, "classify.sql"), nil, inference.Config{})
	if len(res) != 1 || len(choices) != 1 || choices[0].Variant != "cnn" {
		t.Fatalf("%d results, choices %+v", len(res), choices)
	}
	sub, err := fashion.LoadSubset(fashionDir)
	if err != nil {
		t.Fatal(err)
	}
	rows := res[0]
	if len(rows) != len(sub.Labels) {
		t.Fatalf("%d rows, want %d", len(rows), len(sub.Labels))
	}
	want := fashionPredict(t, "cnn.onnx", sub, len(fashion.Labels))
	differ, correct := 0, 0
	for i, r := range rows {
		if id := int(r["id"].(float64)); id != i {
			t.Fatalf("row %d has id %d: order not kept", i, id)
		}
		if r["true_label"] != fashion.Labels[sub.Labels[i]] {
			t.Fatalf("row %d: true label %v, want %s", i, r["true_label"], fashion.Labels[sub.Labels[i]])
		}
		if r["label"] != fashion.Labels[want[i]] {
			differ++
		}
		if r["label"] == r["true_label"] {
			correct++
		}
	}
	// Float summation order differs between ONNX Runtime and the interpreter,
	// so an exact near-tie may flip; more than that is a real difference.
	if differ > 2 {
		t.Errorf("%d of %d rows differ from the independent evaluation", differ, len(rows))
	}
	vs, err := fashion.Variants(fashionDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == "cnn" && math.Abs(float64(correct)/float64(len(rows))-v.SubsetAccuracy) > 1e-9 {
			t.Errorf("query accuracy %d/%d, generator %.4f", correct, len(rows), v.SubsetAccuracy)
		}
	}
}

// TestFashionCascadeQueryMatchesEvaluation runs cascade.sql (garment -> WHERE tops ->
// classify -> windowed and overall accuracy) with the example's catalog and
// checks the accuracy it prints against fashion.EvaluateCascade, which runs the same
// two models with the Go interpreter and compares with the true labels.
func TestFashionCascadeQueryMatchesEvaluation(t *testing.T) {
	t.Parallel()
	cat, err := catalog.LoadFile(filepath.Join(fashionDir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, choices := runExampleScript(t, filepath.Join(fashionDir, "cascade.sql"), cat, inference.Config{})
	if len(res) != 3 {
		t.Fatalf("%d query results, want 3", len(res))
	}
	var coarse, fine string
	for _, c := range choices {
		switch c.Model {
		case "garment":
			coarse = c.File
		case "classify":
			fine = c.File
		}
	}
	sub, err := fashion.LoadSubset(fashionDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fashion.EvaluateCascade(fashionDir, sub, filepath.Base(coarse), filepath.Base(fine), fashion.CascadeGroup)
	if err != nil {
		t.Fatal(err)
	}
	if want.Kept < 500 {
		t.Fatalf("independent evaluation kept only %d tops", want.Kept)
	}
	num := func(r map[string]any, k string) float64 {
		v, ok := r[k].(float64)
		if !ok {
			t.Fatalf("row %v: no number %s", r, k)
		}
		return v
	}
	overall := res[2]
	if len(overall) != 1 {
		t.Fatalf("overall: %v", overall)
	}
	tops, correct, acc := num(overall[0], "tops"), num(overall[0], "correct"), num(overall[0], "accuracy")
	if math.Abs(acc-math.Round(correct/tops*1e4)/1e4) > 1e-9 {
		t.Errorf("printed accuracy %v, but %v/%v", acc, correct, tops)
	}
	if math.Abs(tops-float64(want.Kept)) > 2 || math.Abs(correct-float64(want.Correct)) > 2 {
		t.Errorf("query: %v tops, %v correct; independent: %d, %d", tops, correct, want.Kept, want.Correct)
	}
	if math.Abs(acc-want.Accuracy()) > 0.002 {
		t.Errorf("query accuracy %v, independent %.4f", acc, want.Accuracy())
	}
	// The windows partition the stream: their counts add up to the overall.
	var wt, wc, n float64
	for _, r := range res[1] {
		wt += num(r, "tops")
		wc += num(r, "correct")
	}
	for _, r := range res[0] {
		n += num(r, "n")
	}
	if len(res[1]) != 4 || wt != tops || wc != correct || n != tops {
		t.Errorf("%d windows with %v tops, %v correct; per label %v; overall %v, %v", len(res[1]), wt, wc, n, tops, correct)
	}
}
