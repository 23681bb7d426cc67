package onnx

import (
	"math"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
)

// A value cached for a buffer reads the buffer at each Run: new contents at the
// same address give new results, and distinct buffers never share a value.
func TestCachedValuesReadCurrentData(t *testing.T) {
	e := testEnv(t)
	m, path := tinyModel(t)
	s, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	x := make([]float32, n*6)
	probs := make([]float32, n*3)
	emb := make([]float32, n*4)
	run := func(x []float32) {
		t.Helper()
		outs := []ml.Tensor{
			{DType: ml.Float32, Shape: []int64{n, 3}, F32: probs},
			{DType: ml.Float32, Shape: []int64{n, 4}, F32: emb},
		}
		if err := s.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{n, 6}, F32: x}}, outs); err != nil {
			t.Fatal(err)
		}
		want := m.Predict(x, n)
		for i := range want {
			if math.Abs(float64(want[i]-probs[i])) > 1e-5 {
				t.Fatalf("probs[%d] = %v, Go forward pass says %v", i, probs[i], want[i])
			}
		}
	}
	for round := 0; round < 3; round++ {
		for i := range x {
			x[i] = float32(math.Sin(float64(i + 7*round)))
		}
		run(x)
	}
	// More distinct input buffers than the cache keeps: each still runs on its
	// own data, and the cache stays bounded.
	for b := 0; b < 2*maxCachedInputs; b++ {
		y := make([]float32, n*6)
		for i := range y {
			y[i] = float32(math.Cos(float64(i * (b + 1))))
		}
		run(y)
	}
	s.mu.Lock()
	in, out := s.nCache[0], s.nCache[1]
	s.mu.Unlock()
	if in > maxCachedInputs || out != 2 {
		t.Fatalf("cached %d inputs (max %d), %d outputs (want 2)", in, maxCachedInputs, out)
	}
}

// Run on buffers seen before allocates nothing of its own: what is left is
// onnxruntime_go's Run (two value lists and a handle per value).
func TestRunOnCachedBuffersAllocates(t *testing.T) {
	e := testEnv(t)
	_, path := tinyModel(t)
	s, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	ins := []ml.Tensor{{DType: ml.Float32, Shape: []int64{n, 6}, F32: make([]float32, n*6)}}
	outs := []ml.Tensor{
		{DType: ml.Float32, Shape: []int64{n, 3}, F32: make([]float32, n*3)},
		{DType: ml.Float32, Shape: []int64{n, 4}, F32: make([]float32, n*4)},
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := s.Run(ins, outs); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 5 { // 2 lists + 3 handles inside onnxruntime_go
		t.Fatalf("Run allocates %v objects a call, want at most 5", allocs)
	}
}
