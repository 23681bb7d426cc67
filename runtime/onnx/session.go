package onnx

import (
	"fmt"
	"sync"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/tierflow/tierflow/operators/ml"
)

// Session is one model variant loaded on one device. Run may be called from many
// goroutines at once (ONNX Runtime sessions are thread-safe for Run).
type Session struct {
	path     string
	provider string
	threads  int
	s        *ort.DynamicAdvancedSession
	in, out  []ml.TensorInfo
	inNames  []string
	outNames []string
	meta     map[string]string

	// outVals caches the ONNX Runtime values wrapping caller output buffers, keyed
	// by address, length and shape. Operators write outputs into the same scratch
	// buffers batch after batch, and ONNX Runtime runs measurably slower with a
	// freshly made output value (about 5% of a 64-row MLP call) than with a reused
	// one. A cached value holds a reference to its Go slice, so the address cannot
	// be reused by another allocation while it is cached. Values are taken out while
	// a Run uses them, so concurrent Runs never share one.
	mu      sync.Mutex
	outVals map[valueKey]ort.Value
}

type valueKey struct {
	ptr   unsafe.Pointer
	n     int
	dtype ml.DType
	shape [6]int64
	rank  int
}

const maxCachedValues = 32

func keyOf(t ml.Tensor) (valueKey, bool) {
	k := valueKey{n: t.Elements(), dtype: t.DType, rank: len(t.Shape)}
	if len(t.Shape) > len(k.shape) {
		return k, false
	}
	copy(k.shape[:], t.Shape)
	switch {
	case t.DType == ml.Float32 && len(t.F32) > 0:
		k.ptr = unsafe.Pointer(&t.F32[0])
	case t.DType == ml.Int64 && len(t.I64) > 0:
		k.ptr = unsafe.Pointer(&t.I64[0])
	default:
		return k, false
	}
	return k, true
}

// takeOutput returns a cached value for t, or a new one.
func (s *Session) takeOutput(t ml.Tensor) (ort.Value, valueKey, bool, error) {
	k, ok := keyOf(t)
	if ok {
		s.mu.Lock()
		v, hit := s.outVals[k]
		if hit {
			delete(s.outVals, k)
		}
		s.mu.Unlock()
		if hit {
			return v, k, true, nil
		}
	}
	v, err := newValue(t)
	return v, k, ok, err
}

// putOutput returns a value to the cache, or destroys it when the cache is full
// or already holds one for the key.
func (s *Session) putOutput(v ort.Value, k valueKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outVals == nil {
		s.outVals = map[valueKey]ort.Value{}
	}
	if _, dup := s.outVals[k]; dup || len(s.outVals) >= maxCachedValues {
		v.Destroy()
		return
	}
	s.outVals[k] = v
}

func (s *Session) destroy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.outVals {
		v.Destroy()
		delete(s.outVals, k)
	}
	s.s.Destroy()
}

var _ ml.Session = (*Session)(nil)

// Path is the model file.
func (s *Session) Path() string { return s.path }

// Provider is the execution provider in use: "cpu", "cuda:N", or "cpu (<why
// not CUDA>)" when CUDA was asked for and could not be used.
func (s *Session) Provider() string { return s.provider }

// IntraOpThreads is the configured thread count (0: ONNX Runtime's default).
func (s *Session) IntraOpThreads() int { return s.threads }

// Inputs are the model's inputs as the model declares them (-1 for dynamic dims).
func (s *Session) Inputs() []ml.TensorInfo { return s.in }

// Outputs are the model's outputs.
func (s *Session) Outputs() []ml.TensorInfo { return s.out }

// Metadata returns a custom metadata entry of the model (ModelProto.metadata_props).
func (s *Session) Metadata(key string) (string, bool) {
	v, ok := s.meta[key]
	return v, ok
}

// Run implements ml.Session. Input data and preallocated output data are passed to
// ONNX Runtime in place, without copies; outputs with nil data are allocated by ONNX
// Runtime and copied out once.
func (s *Session) Run(inputs, outputs []ml.Tensor) error {
	if len(inputs) != len(s.in) {
		return fmt.Errorf("%w: %s takes %d inputs, got %d", ml.ErrSchema, s.path, len(s.in), len(inputs))
	}
	if len(outputs) != len(s.out) {
		return fmt.Errorf("%w: %s has %d outputs, got %d", ml.ErrSchema, s.path, len(s.out), len(outputs))
	}
	var arr [8]ort.Value
	vals := arr[:0]
	if len(inputs)+len(outputs) > len(arr) {
		vals = make([]ort.Value, 0, len(inputs)+len(outputs))
	}
	// keys[i] is set for output i when its value goes back to the cache.
	var karr [4]*valueKey
	keys := karr[:0]
	if len(outputs) > len(karr) {
		keys = make([]*valueKey, 0, len(outputs))
	}
	defer func() {
		for i, v := range vals {
			switch {
			case v == nil:
			case i >= len(inputs) && keys[i-len(inputs)] != nil:
				s.putOutput(v, *keys[i-len(inputs)])
			default:
				v.Destroy()
			}
		}
	}()
	for i, t := range inputs {
		if err := checkTensor(s.in[i], t, true); err != nil {
			return fmt.Errorf("%s: input %w", s.path, err)
		}
		v, err := newValue(t)
		if err != nil {
			return fmt.Errorf("%s: input %q: %w", s.path, s.in[i].Name, err)
		}
		vals = append(vals, v)
	}
	for i, t := range outputs {
		if t.F32 == nil && t.I64 == nil {
			vals = append(vals, nil)
			keys = append(keys, nil)
			continue
		}
		if err := checkTensor(s.out[i], t, false); err != nil {
			return fmt.Errorf("%s: output %w", s.path, err)
		}
		v, k, cacheable, err := s.takeOutput(t)
		if err != nil {
			return fmt.Errorf("%s: output %q: %w", s.path, s.out[i].Name, err)
		}
		vals = append(vals, v)
		if cacheable {
			keys = append(keys, &k)
		} else {
			keys = append(keys, nil)
		}
	}
	ins, outs := vals[:len(inputs)], vals[len(inputs):]
	if err := s.s.Run(ins, outs); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	for i := range outputs {
		if outputs[i].F32 != nil || outputs[i].I64 != nil {
			continue
		}
		switch v := outs[i].(type) {
		case *ort.Tensor[float32]:
			outputs[i] = ml.Tensor{DType: ml.Float32, Shape: v.GetShape().Clone(), F32: append([]float32(nil), v.GetData()...)}
		case *ort.Tensor[int64]:
			outputs[i] = ml.Tensor{DType: ml.Int64, Shape: v.GetShape().Clone(), I64: append([]int64(nil), v.GetData()...)}
		default:
			return fmt.Errorf("%w: %s: output %q came back as %T", ml.ErrSchema, s.path, s.out[i].Name, outs[i])
		}
	}
	return nil
}

func newValue(t ml.Tensor) (ort.Value, error) {
	if len(t.Shape) == 0 { // a rank-0 tensor (a sample rate, a flag)
		switch {
		case t.DType == ml.Float32 && len(t.F32) == 1:
			return ort.NewScalar(t.F32[0])
		case t.DType == ml.Int64 && len(t.I64) == 1:
			return ort.NewScalar(t.I64[0])
		}
		return nil, fmt.Errorf("%w: scalar of %s needs exactly one value", ml.ErrSchema, t.DType)
	}
	switch t.DType {
	case ml.Float32:
		return ort.NewTensor(ort.Shape(t.Shape), t.F32)
	case ml.Int64:
		return ort.NewTensor(ort.Shape(t.Shape), t.I64)
	}
	return nil, fmt.Errorf("%w: dtype %s", ml.ErrSchema, t.DType)
}

// checkTensor compares a tensor against the model's declaration: element type,
// rank, fixed dimensions and data length. Dynamic dimensions accept any size.
func checkTensor(want ml.TensorInfo, t ml.Tensor, input bool) error {
	if t.DType != want.DType {
		return fmt.Errorf("%w: %q is %s, got %s", ml.ErrSchema, want.Name, want.DType, t.DType)
	}
	if len(t.Shape) != len(want.Shape) {
		return fmt.Errorf("%w: %q has shape %s, got %s", ml.ErrSchema, want.Name, ml.FormatShape(want.Shape), ml.FormatShape(t.Shape))
	}
	for i, d := range want.Shape {
		if t.Shape[i] < 0 || (d >= 0 && t.Shape[i] != d) {
			return fmt.Errorf("%w: %q has shape %s, got %s", ml.ErrSchema, want.Name, ml.FormatShape(want.Shape), ml.FormatShape(t.Shape))
		}
	}
	n := t.Elements()
	got := len(t.F32)
	if t.DType == ml.Int64 {
		got = len(t.I64)
	}
	if got != n {
		what := "input"
		if !input {
			what = "output buffer"
		}
		return fmt.Errorf("%w: %s %q of shape %s needs %d values, got %d", ml.ErrSchema, what, want.Name, ml.FormatShape(t.Shape), n, got)
	}
	return nil
}
