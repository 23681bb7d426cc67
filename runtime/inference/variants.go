package inference

import (
	"fmt"
	"slices"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// variantTenant is the query's tenant with every variant of model m that
// has a file as a candidate of the worker's data-aware policy (sched
// DataAware): each opened once on the scheduler (shared with other
// queries), with its accuracy and its per-class recall in the evidence's
// class order; chosen (the planned variant, on session sess under key)
// among them. Rows carry the evidence's votes when it reads the model's
// input.
func (r *Runtime) variantTenant(s *sched.Scheduler, env *onnx.Env, m *catalog.Model, chosen *catalog.Variant, key string, sess *onnx.Session, opts onnx.Options) (sched.Tenant, error) {
	t := r.cfg.Tenant
	ev := r.cfg.Evidence
	for _, v := range m.Variants {
		if v.File == "" {
			continue
		}
		vr := sched.Variant{Name: v.Name, Accuracy: v.Accuracy / 100}
		if ev != nil {
			vr.Recall = recalls(v, ev.Classes())
		}
		if v == chosen {
			vr.Key, vr.Session = key, sess
			t.Variants = append(t.Variants, vr)
			continue
		}
		path, err := ModelFile(v, r.cfg.BaseDir)
		if err != nil {
			return t, err
		}
		vr.Key = sched.Key(path, fmt.Sprintf("%s/%d", opts.Device, opts.IntraOpThreads))
		vs, err := s.Session(vr.Key, t.Query, func() (ml.Session, error) { return env.Session(path, opts) })
		if err != nil {
			return t, fmt.Errorf("model %s variant %s: %w", m.Name, v.Name, err)
		}
		if !sameInputs(vs.Inputs(), sess.Inputs()) {
			continue // not a drop-in for this call (another input size runs resized, by its own plan)
		}
		vr.Session = vs
		t.Variants = append(t.Variants, vr)
	}
	if ev != nil {
		t.Evidence = func(in []ml.Tensor, row int) []float64 {
			if len(in) == 0 || in[0].F32 == nil || in[0].Shape[0] <= 0 {
				return nil
			}
			per := len(in[0].F32) / int(in[0].Shape[0])
			if per != ev.Dim() {
				return nil
			}
			return ev.Votes(in[0].F32[row*per : (row+1)*per])
		}
	}
	return t, nil
}

// recalls is v's recall (0..1) on each of classes, nil when v lacks one
// of them (the policy then falls back on its accuracy).
func recalls(v *catalog.Variant, classes []string) []float64 {
	out := make([]float64, len(classes))
	for i, c := range classes {
		x, ok := v.Recall(c)
		if !ok {
			return nil
		}
		out[i] = x / 100
	}
	return out
}

// sameInputs: the variant takes the same tensors, row for row.
func sameInputs(a, b []ml.TensorInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].DType != b[i].DType || !slices.Equal(a[i].Shape[1:], b[i].Shape[1:]) {
			return false
		}
	}
	return true
}
