package modelzoo

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// blobs makes k Gaussian clusters in d dimensions, n points each.
func blobs(k, d, n int, seed uint64) ([]float32, []uint8) {
	rng := rand.New(rand.NewPCG(seed, 3))
	centers := make([]float32, k*d)
	for i := range centers {
		centers[i] = float32(rng.NormFloat64() * 2)
	}
	var x []float32
	var y []uint8
	for i := 0; i < n*k; i++ {
		c := i % k
		for j := 0; j < d; j++ {
			x = append(x, centers[c*d+j]+float32(rng.NormFloat64()*0.5))
		}
		y = append(y, uint8(c))
	}
	return x, y
}

func TestTrainLearnsAndIsDeterministic(t *testing.T) {
	x, y := blobs(4, 8, 100, 1)
	train := func() (*MLP, []float64) {
		m := NewMLP([]int{8, 16, 4}, nil, 42)
		var losses []float64
		if err := m.Train(x, y, TrainConfig{Epochs: 5, Batch: 16, LR: 1e-2, Seed: 9, Progress: func(_ int, l float64) {
			losses = append(losses, l)
		}}); err != nil {
			t.Fatal(err)
		}
		return m, losses
	}
	m, losses := train()
	if acc := m.Accuracy(x, y); acc < 0.95 {
		t.Errorf("training accuracy %.3f on separable blobs", acc)
	}
	if losses[len(losses)-1] >= losses[0] {
		t.Errorf("loss did not fall: %v", losses)
	}
	m2, _ := train()
	if !bytes.Equal(m.Graph("a", 0).Marshal(), m2.Graph("a", 0).Marshal()) {
		t.Error("same seeds must give the same model bytes")
	}
}

func TestTrainRejectsBadInput(t *testing.T) {
	m := NewMLP([]int{4, 2}, nil, 1)
	if err := m.Train(make([]float32, 7), make([]uint8, 2), TrainConfig{Epochs: 1, Batch: 1}); err == nil {
		t.Error("mismatched rows must fail")
	}
	if err := m.Train(make([]float32, 8), make([]uint8, 2), TrainConfig{}); err == nil {
		t.Error("zero batch must fail")
	}
}

func TestGraphRoundTrip(t *testing.T) {
	m := NewMLP([]int{784, 5, 3}, []string{"x", "y", "z"}, 2)
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := m.Graph("m", 28).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || g.Inputs[0].Name != "image" || len(g.Inputs[0].Shape) != 4 || g.Inputs[0].Shape[0].Param != "N" || g.Inputs[0].Shape[2].Value != 28 {
		t.Errorf("inputs %+v", g.Inputs)
	}
	if len(g.Outputs) != 2 || g.Outputs[0].Name != "probs" || g.Outputs[1].Name != "embedding" {
		t.Errorf("outputs %+v", g.Outputs)
	}
	ops := ""
	for _, n := range g.Nodes {
		ops += n.OpType + " "
	}
	if ops != "Flatten Gemm Relu Gemm Softmax " {
		t.Errorf("ops %q", ops)
	}
	m2, err := MLPFromGraph(g)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := blobs(3, 784, 2, 5)
	p1, p2 := m.Predict(x, 6), m2.Predict(x, 6)
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("prediction %d differs after round trip: %v vs %v", i, p1[i], p2[i])
		}
	}
	if len(m2.Labels) != 3 || m2.Labels[2] != "z" {
		t.Errorf("labels %v", m2.Labels)
	}
}

func TestUnmarshalGarbage(t *testing.T) {
	if _, err := UnmarshalGraph([]byte{0x3a, 0xff}); !errors.Is(err, ErrBadModel) {
		t.Errorf("want ErrBadModel, got %v", err)
	}
	g := &Graph{Nodes: []Node{{OpType: "Conv"}}}
	if _, err := MLPFromGraph(g); !errors.Is(err, ErrBadModel) {
		t.Errorf("want ErrBadModel, got %v", err)
	}
}

func TestIDXRoundTrip(t *testing.T) {
	x := &IDX{Dims: []int{3, 2, 2}, Data: []uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}}
	for _, name := range []string{"a.idx", "a.idx.gz"} {
		path := filepath.Join(t.TempDir(), name)
		if err := WriteIDXFile(path, x.Head(2)); err != nil {
			t.Fatal(err)
		}
		got, err := ReadIDXFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got.Items() != 2 || got.ItemSize() != 4 || !bytes.Equal(got.Data, x.Data[:8]) {
			t.Errorf("%s: got %+v", name, got)
		}
	}
	if f := x.Floats(); f[11] != 1 || f[0] != 0 {
		t.Errorf("floats %v", f)
	}
	if _, err := ReadIDX(bytes.NewReader([]byte{0, 0, 9, 1})); !errors.Is(err, ErrBadIDX) {
		t.Errorf("want ErrBadIDX, got %v", err)
	}
	if _, err := ReadIDX(bytes.NewReader([]byte{0, 0, 8, 1, 0, 0, 0, 5, 1})); !errors.Is(err, ErrBadIDX) {
		t.Errorf("short data: want ErrBadIDX, got %v", err)
	}
}

func TestCNNLearnsAndEvaluatorAgrees(t *testing.T) {
	// Two classes of 8x8 images: a bright vertical or horizontal bar.
	rng := rand.New(rand.NewPCG(4, 4))
	const side, n = 8, 200
	x := make([]float32, n*side*side)
	y := make([]uint8, n)
	for i := 0; i < n; i++ {
		y[i] = uint8(i % 2)
		pos := 1 + rng.IntN(side-2)
		for j := 0; j < side; j++ {
			at := pos*side + j // horizontal
			if y[i] == 1 {
				at = j*side + pos // vertical
			}
			x[i*side*side+at] = 1
		}
		for j := 0; j < side*side; j++ {
			x[i*side*side+j] += float32(rng.NormFloat64() * 0.1)
		}
	}
	c := NewCNN(side, 4, 3, []int{8, 2}, []string{"h", "v"}, 1)
	if err := c.Train(x, y, TrainConfig{Epochs: 8, Batch: 16, LR: 1e-2, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	if acc := c.Accuracy(x, y); acc < 0.95 {
		t.Errorf("CNN accuracy %.3f on bars", acc)
	}
	path := filepath.Join(t.TempDir(), "cnn.onnx")
	if err := c.Graph("cnn").WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	ref, shape, err := Evaluate(g, x[:10*side*side], 10, "probs")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Predict(x[:10*side*side], 10)
	if len(shape) != 2 || shape[0] != 10 || shape[1] != 2 {
		t.Fatalf("shape %v", shape)
	}
	for i := range got {
		if math.Abs(float64(got[i]-ref[i])) > 1e-4 {
			t.Fatalf("prob %d: training forward %v, evaluator %v", i, got[i], ref[i])
		}
	}
	// The evaluator agrees with the MLP forward pass too.
	m := NewMLP([]int{6, 5, 3}, nil, 3)
	g2, _ := UnmarshalGraph(m.Graph("m", 0).Marshal())
	xin := make([]float32, 12)
	for i := range xin {
		xin[i] = float32(i) / 7
	}
	ref2, _, err := Evaluate(g2, xin, 2, "probs")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range m.Predict(xin, 2) {
		if math.Abs(float64(v-ref2[i])) > 1e-5 {
			t.Fatalf("mlp prob %d: %v vs %v", i, v, ref2[i])
		}
	}
}

// TestCNNGradients compares the backward pass with finite differences of the loss
// for a few conv and head weights.
func TestCNNGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const side, n = 6, 4
	x := make([]float32, n*side*side)
	for i := range x {
		x[i] = rng.Float32()
	}
	y := []uint8{0, 1, 2, 1}
	c := NewCNN(side, 3, 3, []int{5, 3}, nil, 5)
	for i := range c.B {
		c.B[i] = 0.05 // keep ReLUs away from their kink
	}
	params := append([][]float32{c.W, c.B}, c.Head.params()...)
	grads := make([][]float32, len(params))
	for i, p := range params {
		grads[i] = make([]float32, len(p))
	}
	s := c.newScratch(n)
	c.forward(x, n, s)
	c.backward(x, y, n, s, grads)
	loss := func() float64 {
		s := c.newScratch(n)
		p := c.forward(x, n, s)
		var l float64
		for r := 0; r < n; r++ {
			l -= math.Log(float64(p[r*3+int(y[r])]))
		}
		return l / n
	}
	for pi, idx := range [][2]int{{0, 0}, {0, 4}, {0, 13}, {1, 1}, {2, 7}, {3, 2}, {4, 5}} {
		p := params[idx[0]]
		old := p[idx[1]]
		const eps = 1e-3
		p[idx[1]] = old + eps
		up := loss()
		p[idx[1]] = old - eps
		down := loss()
		p[idx[1]] = old
		num := (up - down) / (2 * eps)
		ana := float64(grads[idx[0]][idx[1]])
		if math.Abs(num-ana) > 1e-3+0.05*math.Abs(num) {
			t.Errorf("param %d %v: numeric %.5f analytic %.5f", pi, idx, num, ana)
		}
	}
}
