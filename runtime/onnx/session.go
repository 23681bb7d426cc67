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
	// arena is what the session's weights hold of the bounded arena
	// (useArena; 0 without a bound).
	arena int64

	// vals caches the ONNX Runtime values wrapping caller buffers, keyed by
	// address, length and shape. Operators write outputs into the same scratch
	// buffers batch after batch, and feed inputs that often sit at an address
	// seen before (a record run again, a pooled buffer). Making a value costs a
	// cgo call and ONNX Runtime allocations, and ONNX Runtime runs measurably
	// slower with freshly made values (5-10% of a small model's call) than with
	// reused ones. A cached value reads the memory at its address when a Run
	// uses it, and a Run uses it only for a tensor with the same address and
	// shape, so the cache is right even after the caller's buffer was freed and
	// the address reused. A value over a Go slice keeps the slice alive, which
	// bounds the inputs kept (maxCachedInputs). A value in use by a Run is marked
	// busy, so concurrent Runs never share one.
	mu     sync.Mutex
	vals   map[valueKey]*cachedValue
	nCache [2]int // cached values: [0] inputs, [1] outputs
	tick   uint64
}

type cachedValue struct {
	v      ort.Value
	busy   bool
	output bool
	used   uint64 // tick of the last Run that used it, for eviction
}

type valueKey struct {
	ptr    unsafe.Pointer
	n      int
	dtype  ml.DType
	shape  [6]int64
	rank   int
	output bool
}

// Inputs are bounded tighter than outputs: an input value over a Go slice keeps
// a record's column alive, while outputs are the operator's own scratch buffers.
const (
	maxCachedInputs  = 8
	maxCachedOutputs = 32
)

// keyOf is the cache key of t; false when t cannot be cached (a rank-0 value
// is a copy of its one element, not a view of the caller's memory).
func keyOf(t ml.Tensor, output bool) (valueKey, bool) {
	k := valueKey{n: t.Elements(), dtype: t.DType, rank: len(t.Shape), output: output}
	if len(t.Shape) == 0 || len(t.Shape) > len(k.shape) {
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

// slot is one tensor of a Run: its key, and its value once found or made.
type slot struct {
	k         valueKey
	cacheable bool
	v         ort.Value
	c         *cachedValue // non-nil when v came from the cache
}

// take looks every cacheable slot up under one lock and marks the hits busy.
func (s *Session) take(slots []slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range slots {
		sl := &slots[i]
		if !sl.cacheable {
			continue
		}
		if c, ok := s.vals[sl.k]; ok && !c.busy {
			c.busy = true
			sl.v, sl.c = c.v, c
		}
	}
}

// put returns the slots' values after a Run: cached ones are marked free, new
// ones are cached (evicting the least recently used free value of their kind
// when the cache is full) or destroyed.
func (s *Session) put(slots []slot) {
	var drop [4]ort.Value
	dead := drop[:0]
	s.mu.Lock()
	s.tick++
	for i := range slots {
		sl := &slots[i]
		switch {
		case sl.v == nil:
		case sl.c != nil:
			sl.c.busy = false
			sl.c.used = s.tick
		case !sl.cacheable:
			dead = append(dead, sl.v)
		default:
			if v := s.insert(sl.k, sl.v); v != nil {
				dead = append(dead, v)
			}
		}
		sl.v, sl.c = nil, nil
	}
	s.mu.Unlock()
	for _, v := range dead {
		v.Destroy()
	}
}

// insert caches v under k and returns the value to destroy, if any (v itself
// when the key is taken or every cached value of its kind is busy).
func (s *Session) insert(k valueKey, v ort.Value) ort.Value {
	if s.vals == nil {
		s.vals = map[valueKey]*cachedValue{}
	}
	if _, dup := s.vals[k]; dup {
		return v
	}
	kind, limit := 0, maxCachedInputs
	if k.output {
		kind, limit = 1, maxCachedOutputs
	}
	var evicted ort.Value
	if s.nCache[kind] >= limit {
		var oldK valueKey
		var old *cachedValue
		for ck, c := range s.vals {
			if c.output == k.output && !c.busy && (old == nil || c.used < old.used) {
				oldK, old = ck, c
			}
		}
		if old == nil {
			return v
		}
		delete(s.vals, oldK)
		evicted = old.v
		s.nCache[kind]--
	}
	s.vals[k] = &cachedValue{v: v, output: k.output, used: s.tick}
	s.nCache[kind]++
	return evicted
}

func (s *Session) destroy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.vals {
		c.v.Destroy()
		delete(s.vals, k)
	}
	s.nCache = [2]int{}
	s.s.Destroy()
	releaseArena(s.arena)
	s.arena = 0
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
	for i, t := range inputs {
		if err := checkTensor(s.in[i], t, true); err != nil {
			return fmt.Errorf("%s: input %w", s.path, err)
		}
	}
	for i, t := range outputs {
		if !t.HasData() {
			continue
		}
		if err := checkTensor(s.out[i], t, false); err != nil {
			return fmt.Errorf("%s: output %w", s.path, err)
		}
	}
	// Fixed arrays keep the common call (a few tensors) free of allocations.
	var sarr [8]slot
	var varr [8]ort.Value
	slots, vals := sarr[:0], varr[:0]
	if n := len(inputs) + len(outputs); n > len(sarr) {
		slots, vals = make([]slot, 0, n), make([]ort.Value, 0, n)
	}
	for _, t := range inputs {
		k, ok := keyOf(t, false)
		slots = append(slots, slot{k: k, cacheable: ok})
	}
	for _, t := range outputs {
		if !t.HasData() {
			slots = append(slots, slot{})
			continue
		}
		k, ok := keyOf(t, true)
		slots = append(slots, slot{k: k, cacheable: ok})
	}
	s.take(slots)
	defer s.put(slots)
	for i := range slots {
		sl := &slots[i]
		if sl.v != nil {
			continue
		}
		if i >= len(inputs) && !outputs[i-len(inputs)].HasData() {
			continue // ONNX Runtime allocates it
		}
		t, what, name := outputs, "output", ""
		j := i - len(inputs)
		if i < len(inputs) {
			t, what, j = inputs, "input", i
			name = s.in[j].Name
		} else {
			name = s.out[j].Name
		}
		v, err := newValue(t[j])
		if err != nil {
			return fmt.Errorf("%s: %s %q: %w", s.path, what, name, err)
		}
		sl.v = v
	}
	for i := range slots {
		vals = append(vals, slots[i].v)
	}
	ins, outs := vals[:len(inputs)], vals[len(inputs):]
	if err := s.s.Run(ins, outs); err != nil {
		return s.memoryError(err)
	}
	for i := range outputs {
		if outputs[i].HasData() {
			continue
		}
		// The value ONNX Runtime made is destroyed by put with the others.
		slots[len(inputs)+i].v = outs[i]
		var err error
		if outputs[i], err = fromValue(outs[i]); err != nil {
			return fmt.Errorf("%w: %s: output %q: %w", ml.ErrSchema, s.path, s.out[i].Name, err)
		}
	}
	return nil
}

// fromValue copies a value ONNX Runtime allocated into a tensor.
func fromValue(v ort.Value) (ml.Tensor, error) {
	switch v := v.(type) {
	case *ort.Tensor[float32]:
		return ml.Tensor{DType: ml.Float32, Shape: v.GetShape().Clone(), F32: append([]float32(nil), v.GetData()...)}, nil
	case *ort.Tensor[int64]:
		return ml.Tensor{DType: ml.Int64, Shape: v.GetShape().Clone(), I64: append([]int64(nil), v.GetData()...)}, nil
	case *ort.Tensor[int32]:
		return rawOf(ml.Int32, v.GetShape(), v.GetData()), nil
	case *ort.Tensor[int16]:
		return rawOf(ml.Int16, v.GetShape(), v.GetData()), nil
	case *ort.Tensor[int8]:
		return rawOf(ml.Int8, v.GetShape(), v.GetData()), nil
	case *ort.Tensor[uint8]:
		return rawOf(ml.Uint8, v.GetShape(), v.GetData()), nil
	case *ort.Tensor[uint16]:
		return rawOf(ml.Uint16, v.GetShape(), v.GetData()), nil
	case *ort.Tensor[bool]:
		return rawOf(ml.Bool, v.GetShape(), v.GetData()), nil
	case *ort.Tensor[float64]:
		return rawOf(ml.Float64, v.GetShape(), v.GetData()), nil
	}
	// A float16 output comes back as a CustomDataTensor whose copy the
	// binding (v1.27) sizes at one byte an element: a caller that wants one
	// passes its buffer (Tensor.Raw), as the typed calls do for outputs of
	// fixed row shape.
	return ml.Tensor{}, fmt.Errorf("came back as %T: pass an output buffer for this element type", v)
}

// rawOf copies the elements of an ONNX Runtime tensor as bytes.
func rawOf[T any](d ml.DType, shape ort.Shape, data []T) ml.Tensor {
	var raw []byte
	if len(data) > 0 {
		raw = append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*d.Size())...)
	} else {
		raw = []byte{}
	}
	return ml.Tensor{DType: d, Shape: shape.Clone(), Raw: raw}
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
	if e, ok := elementTypes[t.DType]; ok && t.DType.IsRaw() {
		// Any other element type, over the caller's bytes in place.
		return ort.NewCustomDataTensor(ort.Shape(t.Shape), t.Raw, e)
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
	switch {
	case t.DType == ml.Int64:
		got = len(t.I64)
	case t.DType.IsRaw():
		got = len(t.Raw) / t.DType.Size()
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
