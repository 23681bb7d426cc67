package inference

import (
	"fmt"
	"slices"
	"sync"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// sideSession lets the operator, which feeds one tensor column, run a model
// that has more inputs than that (Silero VAD: input, state, sr). The column
// feeds the main input; every other input is a constant per call:
//   - a float32 input s is a recurrent state when the model has a float32
//     output named s+"N" (Silero: state -> stateN): rows then run one at a
//     time, each with the state the previous row left, starting from zeros
//     (see sideSession.fresh for whose rows share a state);
//   - any other float32 input is zeros, its dynamic dimensions taking the
//     batch size;
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
	// rec maps a recurrent state input to the output that gives its next
	// value; state holds the current values (none: zeros).
	rec   map[int]int
	mu    sync.Mutex
	state map[int]ml.Tensor
}

// fresh is a copy with its own recurrent state. Each operator instance binds
// its own copy, so the state runs along that instance's rows, in their order:
// a stream partition is one recording.
func (w *sideSession) fresh() *sideSession {
	return &sideSession{Session: w.Session, main: w.main, ins: w.ins, i64: w.i64, outs: w.outs, shown: w.shown, nout: w.nout, rec: w.rec}
}

// freshSession gives an operator instance its own recurrent state.
func freshSession(s ml.Session) ml.Session {
	if w, ok := s.(*sideSession); ok && len(w.rec) > 0 {
		return w.fresh()
	}
	return s
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
	w.rec = map[int]int{}
	for i, in := range ins {
		if i == w.main || in.DType != ml.Float32 {
			continue
		}
		for j, o := range all {
			if o.Name == in.Name+"N" && o.DType == ml.Float32 && !slices.Contains(w.shown, j) {
				w.rec[i] = j
			}
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
// tensors are made per call (a few KiB) so that concurrent calls share
// nothing but a recurrent state, which a mutex orders.
func (w *sideSession) Run(inputs, outputs []ml.Tensor) error {
	if len(inputs) != 1 || len(inputs[0].Shape) == 0 {
		return fmt.Errorf("%w: want one batched input, got %d", ErrModel, len(inputs))
	}
	if len(w.rec) > 0 {
		return w.runRecurrent(inputs[0], outputs)
	}
	full := w.sideTensors(inputs[0].Shape[0])
	full[w.main] = inputs[0]
	return w.runAll(full, outputs)
}

// sideTensors are the constant inputs for a batch of n rows.
func (w *sideSession) sideTensors(n int64) []ml.Tensor {
	full := make([]ml.Tensor, len(w.ins))
	for i, in := range w.ins {
		if i == w.main {
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
	return full
}

// runAll runs one call with every input given and maps the shown outputs.
func (w *sideSession) runAll(full, outputs []ml.Tensor) error {
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

// runRecurrent runs the rows one call each, threading the recurrent state from
// row to row and across calls. A batch is N calls of one row: the price of
// the state, small for a model as light as Silero (about 0.1 ms a frame).
func (w *sideSession) runRecurrent(in ml.Tensor, outputs []ml.Tensor) error {
	if len(outputs) != len(w.shown) {
		return fmt.Errorf("%w: want %d outputs, got %d", ErrModel, len(w.shown), len(outputs))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := int(in.Shape[0])
	row := in.Elements() / max(n, 1)
	rowShape := slices.Clone(in.Shape)
	rowShape[0] = 1
	infos := w.Session.Outputs()
	for r := range n {
		full := w.sideTensors(1)
		full[w.main] = ml.Tensor{DType: ml.Float32, Shape: rowShape, F32: in.F32[r*row : (r+1)*row]}
		for i := range w.rec {
			if st, ok := w.state[i]; ok {
				full[i] = st
			}
		}
		all := make([]ml.Tensor, w.nout)
		for i, o := range infos {
			all[i] = ml.Tensor{DType: o.DType}
		}
		if err := w.Session.Run(full, all); err != nil {
			return err
		}
		for j, i := range w.shown {
			got := all[i]
			per := got.Elements()
			if outputs[j].F32 == nil {
				shape := slices.Clone(got.Shape)
				shape[0] = int64(n)
				outputs[j] = ml.Tensor{DType: got.DType, Shape: shape, F32: make([]float32, n*per)}
			}
			copy(outputs[j].F32[r*per:(r+1)*per], got.F32)
		}
		if w.state == nil {
			w.state = map[int]ml.Tensor{}
		}
		for i, j := range w.rec {
			w.state[i] = ml.Tensor{DType: ml.Float32, Shape: all[j].Shape, F32: all[j].F32}
		}
	}
	return nil
}
