package onnx

import (
	"fmt"
	"runtime"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/tierflow/tierflow/operators/ml"
)

// fork is one Model's view of a Session (ml.Forker): it keeps the ONNX
// Runtime value of each input and output slot's last buffer and reuses it
// while the next call's tensor has the same address, length and shape, which
// an operator's scratch outputs always do and its inputs often do (a pooled
// or repeated buffer). The shared cache does the same under a mutex with a
// map lookup per tensor; for a model that runs in a few microseconds that
// bookkeeping, and the cache lines it touches, cost several percent of the
// call. A fork is used by one goroutine at a time.
type fork struct {
	s *Session
	h *held
}

// held are a fork's values, apart from the fork so that a cleanup can
// destroy them once the fork is unreachable.
type held struct {
	keys []valueKey
	vals []ort.Value
}

func (h *held) destroy() {
	for i, v := range h.vals {
		if v != nil {
			v.Destroy()
			h.vals[i] = nil
		}
	}
}

var _ ml.Forker = (*Session)(nil)

// Fork implements ml.Forker.
func (s *Session) Fork() ml.Session {
	n := len(s.in) + len(s.out)
	f := &fork{s: s, h: &held{keys: make([]valueKey, n), vals: make([]ort.Value, n)}}
	runtime.AddCleanup(f, (*held).destroy, f.h)
	return f
}

func (f *fork) Inputs() []ml.TensorInfo  { return f.s.in }
func (f *fork) Outputs() []ml.TensorInfo { return f.s.out }

// Metadata forwards the model's metadata (class labels).
func (f *fork) Metadata(key string) (string, bool) { return f.s.Metadata(key) }

// Run implements ml.Session. A call the fork cannot serve from its own slots
// (an output for ONNX Runtime to allocate, a rank-0 tensor, a count that does
// not match the model, which the shared path reports) goes to Session.Run.
func (f *fork) Run(inputs, outputs []ml.Tensor) error {
	s, h := f.s, f.h
	if len(inputs) != len(s.in) || len(outputs) != len(s.out) || len(h.vals) > 8 {
		return s.Run(inputs, outputs)
	}
	var varr [8]ort.Value
	vals := varr[:len(h.vals)]
	for i := range vals {
		t, output, info := ml.Tensor{}, i >= len(inputs), ml.TensorInfo{}
		if output {
			t, info = outputs[i-len(inputs)], s.out[i-len(inputs)]
		} else {
			t, info = inputs[i], s.in[i]
		}
		k, ok := keyOf(t, output)
		if !ok {
			return s.Run(inputs, outputs)
		}
		if h.vals[i] == nil || h.keys[i] != k {
			// A new buffer or shape: checked once here, and the slot's
			// value replaced.
			if err := checkTensor(info, t, !output); err != nil {
				what := "input"
				if output {
					what = "output"
				}
				return fmt.Errorf("%s: %s %w", s.path, what, err)
			}
			v, err := newValue(t)
			if err != nil {
				return fmt.Errorf("%s: %q: %w", s.path, info.Name, err)
			}
			if h.vals[i] != nil {
				h.vals[i].Destroy()
			}
			h.keys[i], h.vals[i] = k, v
		}
		vals[i] = h.vals[i]
	}
	if err := s.s.Run(vals[:len(inputs)], vals[len(inputs):]); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}
