package fashion

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// runScript runs a checked-in script the way `tierflow run` does and returns
// each query's rows (decoded JSON lines) and the runtime's model choices.
func runScript(t *testing.T, script string, cat *catalog.Catalog) ([][]map[string]any, []inference.Choice) {
	t.Helper()
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rt := inference.New(inference.Config{})
	var outs []*bytes.Buffer
	err = exec.RunScript(context.Background(), script, string(src), exec.ScriptOptions{
		Options: exec.Options{Allocator: mem, BaseDir: filepath.Dir(script), Lateral: rt.Lateral, BatchSize: 256},
		Catalog: cat,
		NewOutput: func() (sinks.Writer, error) {
			outs = append(outs, &bytes.Buffer{})
			return sinks.New("json", outs[len(outs)-1])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]map[string]any, len(outs))
	for i, b := range outs {
		dec := json.NewDecoder(b)
		for dec.More() {
			var row map[string]any
			if err := dec.Decode(&row); err != nil {
				t.Fatal(err)
			}
			res[i] = append(res[i], row)
		}
	}
	return res, rt.Choices()
}

// predict is the independent evaluation: the Go interpreter of the ONNX graph.
func predict(t *testing.T, file string, sub *Subset, k int) []int {
	t.Helper()
	g, err := modelzoo.ReadGraph(filepath.Join("models", file))
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

// TestClassifyQueryMatchesEvaluation runs classify.sql (CROSS JOIN LATERAL over
// the labelled stream file) and checks every row's prediction against the
// graph interpreted in Go on the same image, and the accuracy against the one
// the generator recorded for the subset.
func TestClassifyQueryMatchesEvaluation(t *testing.T) {
	res, choices := runScript(t, "classify.sql", nil)
	if len(res) != 1 || len(choices) != 1 || choices[0].Variant != "cnn" {
		t.Fatalf("%d results, choices %+v", len(res), choices)
	}
	sub, err := LoadSubset(".")
	if err != nil {
		t.Fatal(err)
	}
	rows := res[0]
	if len(rows) != len(sub.Labels) {
		t.Fatalf("%d rows, want %d", len(rows), len(sub.Labels))
	}
	want := predict(t, "cnn.onnx", sub, len(Labels))
	differ, correct := 0, 0
	for i, r := range rows {
		if id := int(r["id"].(float64)); id != i {
			t.Fatalf("row %d has id %d: order not kept", i, id)
		}
		if r["true_label"] != Labels[sub.Labels[i]] {
			t.Fatalf("row %d: true label %v, want %s", i, r["true_label"], Labels[sub.Labels[i]])
		}
		if r["label"] != Labels[want[i]] {
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
	vs, err := Variants(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == "cnn" && math.Abs(float64(correct)/float64(len(rows))-v.SubsetAccuracy) > 1e-9 {
			t.Errorf("query accuracy %d/%d, generator %.4f", correct, len(rows), v.SubsetAccuracy)
		}
	}
}

// TestCascadeQueryMatchesEvaluation runs cascade.sql (garment -> WHERE tops ->
// classify -> windowed and overall accuracy) with the example's catalog and
// checks the accuracy it prints against EvaluateCascade, which runs the same
// two models with the Go interpreter and compares with the true labels.
func TestCascadeQueryMatchesEvaluation(t *testing.T) {
	cat, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, choices := runScript(t, "cascade.sql", cat)
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
	sub, err := LoadSubset(".")
	if err != nil {
		t.Fatal(err)
	}
	want, err := EvaluateCascade(".", sub, filepath.Base(coarse), filepath.Base(fine), CascadeGroup)
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
