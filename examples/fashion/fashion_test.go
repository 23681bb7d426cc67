package fashion

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// TestAccuracyMatchesIndependentEvaluation runs every checked-in variant through
// the ML operator (Arrow records, dynamic batching, ONNX Runtime) and checks the
// predictions row by row against modelzoo.Evaluate, a plain Go interpreter of the
// graph read back from the same ONNX file (no code shared with training or with
// ONNX Runtime), and the accuracy against the one the generator recorded.
func TestAccuracyMatchesIndependentEvaluation(t *testing.T) {
	vs, err := Variants(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 3 {
		t.Fatalf("want at least 3 variants, got %d", len(vs))
	}
	sub, err := LoadSubset(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Labels) != 2000 {
		t.Fatalf("subset has %d rows", len(sub.Labels))
	}
	prev := 0.0
	for _, v := range vs {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rep, err := Classify(mem, Options{Dir: ".", Variant: v.Name, Batch: ml.BatchConfig{MaxBatch: 32, MaxDelay: time.Millisecond, Adaptive: true}})
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		mem.AssertSize(t, 0)
		g, err := modelzoo.ReadGraph(filepath.Join("models", v.File))
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
			if Labels[k] == rep.Predicted[i] {
				agree++
			}
			if k == int(sub.Labels[i]) {
				correct++
			}
			if math.Abs(float64(p[k]-rep.Scores[i])) > 1e-4 && Labels[k] == rep.Predicted[i] {
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
