package inference

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// sideVariant is a variant of the call's model that runs the rows sent
// at its input size (ml.SideVariant), with its session's scheduler key.
type sideVariant struct {
	ml.SideVariant
	key string
}

// sideVariants are, for a call whose column f carries rows at several
// sides (ml.VariableField: under a LATENCY bound the source sends each
// batch at the largest side its link carries in time), the variants of m
// other than v whose input size is one of the smaller sides: a row sent
// at 14x14 runs on the variant trained on 14x14 frames rather than on v
// with the row resized up (Jellyfish 2.3, misaligned adaptation: fit-28
// gets 84.6% of 14x14 Fashion-MNIST frames right so, fit-14 85.9%). The
// sessions come from the process's cache (the call's neighbours are
// preloaded); a variant whose session does not open, or does not take
// the rows and give v's outputs, is left out, and its side's rows are
// resized as before. For each side, the most accurate variant of it.
func (r *Runtime) sideVariants(env *onnx.Env, m *catalog.Model, v *catalog.Variant, f arrow.Field, main ml.Session, opts onnx.Options) []sideVariant {
	shape, _, ok := ml.VariableShape(f)
	if !ok || m == nil || len(main.Inputs()) != 1 {
		return nil
	}
	side := int(shape[len(shape)-1])
	var out []sideVariant
	for _, s := range fieldSides(f) {
		if s >= side {
			continue
		}
		var best *catalog.Variant
		for _, x := range m.Variants {
			if x != v && x.File != "" && slices.Equal(x.InputSize, []int{s, s}) && (best == nil || x.Accuracy > best.Accuracy) {
				best = x
			}
		}
		if best == nil {
			continue
		}
		path, err := ModelFile(best, r.cfg.BaseDir)
		if err != nil {
			continue
		}
		key := sched.Key(path, fmt.Sprintf("%s/%d", opts.Device, opts.IntraOpThreads))
		open := func() (ml.Session, error) { return env.Session(path, opts) }
		var sess ml.Session
		if sc := r.cfg.Scheduler; sc != nil {
			sess, err = sc.Session(key, r.cfg.Tenant.Query, open)
		} else {
			sess, err = open()
		}
		if err != nil || len(sess.Inputs()) != 1 || !sameOutputs(sess.Outputs(), main.Outputs()) {
			continue
		}
		out = append(out, sideVariant{SideVariant: ml.SideVariant{Name: best.Name, Side: s, Session: sess, SoloMs: soloMs(best)}, key: key})
	}
	return out
}

// fieldSides are the sides a variable-side field's rows may have
// (ml.SidesKey).
func fieldSides(f arrow.Field) []int {
	v, ok := f.Metadata.GetValue(ml.SidesKey)
	if !ok {
		return nil
	}
	var out []int
	for _, p := range strings.Split(v, ",") {
		if s, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && s > 0 {
			out = append(out, s)
		}
	}
	return out
}

// sameOutputs: the variant gives the same tensors, in the same order.
func sameOutputs(a, b []ml.TensorInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].DType != b[i].DType || !slices.Equal(a[i].Shape[1:], b[i].Shape[1:]) {
			return false
		}
	}
	return true
}
