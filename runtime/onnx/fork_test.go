package onnx

import (
	"errors"
	"math"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// TestForkRunsLikeTheSession: a fork computes what the model computes, keeps
// one value per slot while the buffers stay, makes a new one when a buffer or
// shape changes (so it never reads a stale address), checks what it has not
// seen, and hands calls it cannot serve to the shared path.
func TestForkRunsLikeTheSession(t *testing.T) {
	e := testEnv(t)
	m, path := tinyModel(t)
	s, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := s.Fork().(*fork)
	check := func(x []float32, n int, probs, emb []float32) {
		t.Helper()
		err := f.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(n), 6}, F32: x}},
			[]ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(n), 3}, F32: probs}, {DType: ml.Float32, Shape: []int64{int64(n), 4}, F32: emb}})
		if err != nil {
			t.Fatal(err)
		}
		want := m.Predict(x, n)
		for i := range want {
			if math.Abs(float64(want[i]-probs[i])) > 1e-5 {
				t.Fatalf("n=%d probs[%d] = %v, Go forward pass says %v", n, i, probs[i], want[i])
			}
		}
	}
	x := make([]float32, 4*6)
	for i := range x {
		x[i] = float32(math.Cos(float64(i)))
	}
	probs, emb := make([]float32, 4*3), make([]float32, 4*4)
	check(x, 4, probs, emb)
	first := f.h.vals[0]
	for i := range x { // same buffer, new contents: the value reads them
		x[i] = float32(math.Sin(float64(3 * i)))
	}
	check(x, 4, probs, emb)
	if f.h.vals[0] != first {
		t.Error("the same input buffer should keep its value")
	}
	check(x[:2*6], 2, probs[:2*3], emb[:2*4]) // a new shape: a new value
	if f.h.vals[0] == first {
		t.Error("a new shape must make a new value")
	}
	y := append([]float32(nil), x...) // a new address
	check(y, 4, probs, emb)

	err = f.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{4, 5}, F32: make([]float32, 20)}},
		[]ml.Tensor{{DType: ml.Float32, Shape: []int64{4, 3}, F32: probs}, {DType: ml.Float32, Shape: []int64{4, 4}, F32: emb}})
	if !errors.Is(err, ml.ErrSchema) {
		t.Errorf("wrong input shape: %v", err)
	}
	outs := []ml.Tensor{{DType: ml.Float32, Shape: []int64{4, 3}, F32: probs}, {DType: ml.Float32}}
	if err := f.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{4, 6}, F32: y}}, outs); err != nil || len(outs[1].F32) != 16 {
		t.Errorf("an output for ONNX Runtime to allocate: %v %v", err, outs[1].Shape)
	}
	if err := f.Run(nil, outs); !errors.Is(err, ml.ErrSchema) {
		t.Errorf("no inputs: %v", err)
	}
	if v, ok := f.Metadata(modelzoo.MetaLabels); !ok || v != "a,b,c" {
		t.Errorf("metadata through the fork: %q %v", v, ok)
	}
}
