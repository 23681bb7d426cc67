package inference

import (
	"fmt"
	"slices"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// sideSession lets the operator, which feeds one tensor column, run a model
// that has more inputs than that (Silero VAD: input, state, sr). The column
// feeds the main input; every other input is a constant per call:
//   - a float32 input (a recurrent state) is zeros, its dynamic dimensions
//     taking the batch size, so every row starts from a fresh state;
//   - an int64 input takes the integer literals after the column in the
//     call, in the model's input order: vad(f.audio, 16000) feeds sr = 16000.
//
// Outputs with a dynamic dimension after the batch one (Silero's next state,
// [N,N,N] as the model declares it) cannot become columns: they are hidden
// from the operator, allocated by the session and dropped.
type sideSession struct {
	ml.Session
	main  int
	ins   []ml.TensorInfo
	i64   map[int]int64
	outs  []ml.TensorInfo
	shown []int // indexes of outs in the session's outputs
	nout  int
}

// withSideInputs wraps s when it has more than one input; the main input is
// the first float32 input whose batch dimension is dynamic or 1. consts are
// the call's arguments after the column; each must be used.
func withSideInputs(s ml.Session, col string, consts []int64) (ml.Session, error) {
	ins := s.Inputs()
	if len(ins) <= 1 {
		if len(consts) > 0 {
			return nil, fmt.Errorf("%w: the model has one input %v: the call takes only the column %q", ErrModel, ins, col)
		}
		return s, nil
	}
	w := &sideSession{Session: s, main: -1, ins: ins, i64: map[int]int64{}}
	all := s.Outputs()
	w.nout = len(all)
	for i, o := range all {
		if len(o.Shape) >= 1 && !slices.ContainsFunc(o.Shape[1:], func(d int64) bool { return d < 0 }) {
			w.outs = append(w.outs, o)
			w.shown = append(w.shown, i)
		}
	}
	for i, in := range ins {
		if w.main < 0 && in.DType == ml.Float32 && len(in.Shape) >= 2 && (in.Shape[0] < 0 || in.Shape[0] == 1) {
			w.main = i
			continue
		}
		switch in.DType {
		case ml.Float32:
		case ml.Int64:
			for _, d := range in.Shape {
				if d < 0 {
					return nil, fmt.Errorf("%w: side input %s: an int64 side input must have a fixed shape", ErrModel, in)
				}
			}
			k := len(w.i64)
			if k >= len(consts) {
				return nil, fmt.Errorf("%w: model input %s has no value: pass it as integer argument %d after the column %q (model inputs %v)",
					ErrModel, in, k+1, col, ins)
			}
			w.i64[i] = consts[k]
		default:
			return nil, fmt.Errorf("%w: side input %s: unsupported type", ErrModel, in)
		}
	}
	if len(consts) > len(w.i64) {
		return nil, fmt.Errorf("%w: %d integer arguments after the column %q, the model has %d int64 inputs (%v)", ErrModel, len(consts), col, len(w.i64), ins)
	}
	if w.main < 0 {
		return nil, fmt.Errorf("%w: none of the model inputs %v is a float32 batch input for column %q", ErrModel, ins, col)
	}
	return w, nil
}

// Inputs is the main input only: the one the operator binds to the column.
func (w *sideSession) Inputs() []ml.TensorInfo { return w.ins[w.main : w.main+1] }

// Outputs are the outputs the operator can map.
func (w *sideSession) Outputs() []ml.TensorInfo { return w.outs }

// Metadata forwards model metadata (class labels) when the session has it.
func (w *sideSession) Metadata(key string) (string, bool) {
	if ms, ok := w.Session.(ml.MetadataSession); ok {
		return ms.Metadata(key)
	}
	return "", false
}

// Run completes the inputs with the constants for this batch size. The side
// tensors are made per call (a few KiB) so that concurrent calls share nothing.
func (w *sideSession) Run(inputs, outputs []ml.Tensor) error {
	if len(inputs) != 1 || len(inputs[0].Shape) == 0 {
		return fmt.Errorf("%w: want one batched input, got %d", ErrModel, len(inputs))
	}
	n := inputs[0].Shape[0]
	full := make([]ml.Tensor, len(w.ins))
	for i, in := range w.ins {
		if i == w.main {
			full[i] = inputs[0]
			continue
		}
		shape := make([]int64, len(in.Shape))
		size := int64(1)
		for j, d := range in.Shape {
			if d < 0 {
				d = n
			}
			shape[j] = d
			size *= d
		}
		if in.DType == ml.Int64 {
			v := make([]int64, size)
			for j := range v {
				v[j] = w.i64[i]
			}
			full[i] = ml.Tensor{DType: ml.Int64, Shape: shape, I64: v}
			continue
		}
		full[i] = ml.Tensor{DType: ml.Float32, Shape: shape, F32: make([]float32, size)}
	}
	if len(outputs) != len(w.shown) {
		return fmt.Errorf("%w: want %d outputs, got %d", ErrModel, len(w.shown), len(outputs))
	}
	allOut := make([]ml.Tensor, w.nout)
	for i, o := range w.Session.Outputs() {
		allOut[i] = ml.Tensor{DType: o.DType}
	}
	for j, i := range w.shown {
		allOut[i] = outputs[j]
	}
	if err := w.Session.Run(full, allOut); err != nil {
		return err
	}
	for j, i := range w.shown {
		outputs[j] = allOut[i]
	}
	return nil
}

// sideArgs are the integer literal arguments after a model call's column.
func sideArgs(n *logical.LateralModel) ([]int64, error) {
	var out []int64
	for i, a := range n.Args[1:] {
		l, ok := a.(*expr.Literal)
		v, isInt := int64(0), false
		if ok {
			v, isInt = l.Value.(int64)
		}
		if !isInt {
			return nil, fmt.Errorf("%w: %s argument %d (%s): only the first argument is a column; the others must be integer constants", ErrModel, n.Name, i+2, a)
		}
		out = append(out, v)
	}
	return out, nil
}
