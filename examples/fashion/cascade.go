package fashion

import (
	"fmt"
	"path/filepath"

	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// CascadeGroup is the garment group the cascade example keeps between its two
// models (cascade.sql: WHERE g.label = 'tops').
const CascadeGroup = "tops"

// CascadeResult is the outcome of the cascade on the subset.
type CascadeResult struct {
	Kept    int // rows the coarse model put in the group
	Correct int // of those, rows the fine model labelled with the true class
}

// Accuracy is Correct/Kept (0 when nothing was kept).
func (r CascadeResult) Accuracy() float64 {
	if r.Kept == 0 {
		return 0
	}
	return float64(r.Correct) / float64(r.Kept)
}

// EvaluateCascade runs the cascade of cascade.sql on the subset with the Go
// interpreter of the ONNX graphs (modelzoo.Evaluate: no ONNX Runtime, no
// engine): coarse model file, keep the rows of group, fine model file, compare
// with the true labels. It is the independent evaluation the query's measured
// accuracy is checked against.
func EvaluateCascade(dir string, sub *Subset, coarseFile, fineFile, group string) (CascadeResult, error) {
	n := len(sub.Labels)
	pred := func(file string, k int) ([]int, error) {
		g, err := modelzoo.ReadGraph(filepath.Join(dir, "models", file))
		if err != nil {
			return nil, err
		}
		probs, _, err := modelzoo.Evaluate(g, sub.Images, n, "probs")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(probs) != n*k {
			return nil, fmt.Errorf("%s: %d outputs for %d rows of %d classes", file, len(probs), n, k)
		}
		out := make([]int, n)
		for i := range out {
			out[i] = modelzoo.Argmax(probs[i*k : (i+1)*k])
		}
		return out, nil
	}
	gi := -1
	for i, g := range Groups {
		if g == group {
			gi = i
		}
	}
	if gi < 0 {
		return CascadeResult{}, fmt.Errorf("unknown garment group %q (have %v)", group, Groups)
	}
	coarse, err := pred(coarseFile, len(Groups))
	if err != nil {
		return CascadeResult{}, err
	}
	fine, err := pred(fineFile, len(Labels))
	if err != nil {
		return CascadeResult{}, err
	}
	var r CascadeResult
	for i := range coarse {
		if coarse[i] != gi {
			continue
		}
		r.Kept++
		if fine[i] == int(sub.Labels[i]) {
			r.Correct++
		}
	}
	return r, nil
}
