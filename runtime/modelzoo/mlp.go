package modelzoo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Layer is a dense layer: y = W x + b with W stored [Out][In] row-major, which is
// what ONNX Gemm with transB=1 expects, so weights go into the model unchanged.
type Layer struct {
	In, Out int
	W       []float32 // Out*In
	B       []float32 // Out
}

// MLP is a multi-layer perceptron with ReLU between layers and softmax at the end.
// One layer is multinomial logistic regression.
type MLP struct {
	Layers []Layer
	Labels []string
}

// NewMLP makes an MLP with the given layer widths (sizes[0] inputs, last = classes),
// He-initialised from seed.
func NewMLP(sizes []int, labels []string, seed uint64) *MLP {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	m := &MLP{Labels: labels}
	for i := 0; i+1 < len(sizes); i++ {
		l := Layer{In: sizes[i], Out: sizes[i+1], W: make([]float32, sizes[i]*sizes[i+1]), B: make([]float32, sizes[i+1])}
		std := math.Sqrt(2 / float64(l.In))
		if i+2 == len(sizes) {
			std = math.Sqrt(1 / float64(l.In))
		}
		for j := range l.W {
			l.W[j] = float32(rng.NormFloat64() * std)
		}
		m.Layers = append(m.Layers, l)
	}
	return m
}

// Inputs is the width of the input vector.
func (m *MLP) Inputs() int { return m.Layers[0].In }

// Classes is the width of the output.
func (m *MLP) Classes() int { return m.Layers[len(m.Layers)-1].Out }

// Params counts weights and biases.
func (m *MLP) Params() int {
	n := 0
	for _, l := range m.Layers {
		n += len(l.W) + len(l.B)
	}
	return n
}

// scratch holds per-batch activations so training allocates once.
type scratch struct {
	acts  [][]float32 // acts[0] = input batch, acts[i+1] = output of layer i
	grads [][]float32 // gradient w.r.t. acts[i]
}

func (m *MLP) newScratch(batch int) *scratch {
	s := &scratch{acts: make([][]float32, len(m.Layers)+1), grads: make([][]float32, len(m.Layers)+1)}
	for i, l := range m.Layers {
		s.acts[i+1] = make([]float32, batch*l.Out)
		s.grads[i+1] = make([]float32, batch*l.Out)
	}
	return s
}

// forward fills s.acts for a batch of n rows in x (n*In) and returns the
// probabilities (n*Classes), which alias s.acts.
func (m *MLP) forward(x []float32, n int, s *scratch) []float32 {
	s.acts[0] = x
	for li, l := range m.Layers {
		in, out := s.acts[li], s.acts[li+1][:n*l.Out]
		last := li == len(m.Layers)-1
		for r := 0; r < n; r++ {
			xr := in[r*l.In : (r+1)*l.In]
			yr := out[r*l.Out : (r+1)*l.Out]
			for o := 0; o < l.Out; o++ {
				v := l.B[o] + dot(l.W[o*l.In:(o+1)*l.In], xr)
				if !last && v < 0 {
					v = 0
				}
				yr[o] = v
			}
			if last {
				softmax(yr)
			}
		}
	}
	return s.acts[len(m.Layers)][:n*m.Classes()]
}

// Predict returns the class probabilities of n rows of x; it allocates.
func (m *MLP) Predict(x []float32, n int) []float32 {
	s := m.newScratch(n)
	p := m.forward(x, n, s)
	return append([]float32(nil), p...)
}

// Adam holds the optimizer state for a list of parameter tensors; grads[i] is
// filled by the model's backward pass before each step.
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	t                     int
	params, grads, m, v   [][]float32
}

// NewAdam returns Adam with the usual defaults and the given learning rate over
// params.
func NewAdam(lr float64, params ...[]float32) *Adam {
	a := &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, params: params}
	for _, p := range params {
		a.grads = append(a.grads, make([]float32, len(p)))
		a.m = append(a.m, make([]float32, len(p)))
		a.v = append(a.v, make([]float32, len(p)))
	}
	return a
}

// step applies one update from the gradients.
func (a *Adam) step() {
	a.t++
	b1c := 1 - math.Pow(a.Beta1, float64(a.t))
	b2c := 1 - math.Pow(a.Beta2, float64(a.t))
	lr := float32(a.LR * math.Sqrt(b2c) / b1c)
	b1, b2, eps := float32(a.Beta1), float32(a.Beta2), float32(a.Eps)
	for i := range a.params {
		adamUpdate(a.params[i], a.grads[i], a.m[i], a.v[i], lr, b1, b2, eps)
	}
}

func (m *MLP) params() [][]float32 {
	var ps [][]float32
	for _, l := range m.Layers {
		ps = append(ps, l.W, l.B)
	}
	return ps
}

// TrainConfig says how to fit an MLP.
type TrainConfig struct {
	Epochs int
	Batch  int
	LR     float64
	// LRDecay multiplies the learning rate after each epoch (0 or 1: constant).
	LRDecay float64
	Seed    uint64
	// Progress, if set, is called after each epoch with the mean training loss.
	Progress func(epoch int, loss float64)
}

// Train fits m to (x, y) with mini-batch Adam on cross-entropy. x is n*Inputs
// floats, y the class index of each row. The shuffle order comes from cfg.Seed, so a
// run is reproducible.
func (m *MLP) Train(x []float32, y []uint8, cfg TrainConfig) error {
	n := len(y)
	if len(x) != n*m.Inputs() {
		return fmt.Errorf("modelzoo: %d rows of labels but %d input values (want %d)", n, len(x), n*m.Inputs())
	}
	if cfg.Batch <= 0 || cfg.Epochs <= 0 {
		return fmt.Errorf("modelzoo: batch %d, epochs %d: both must be positive", cfg.Batch, cfg.Epochs)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+1))
	opt := NewAdam(cfg.LR, m.params()...)
	s := m.newScratch(cfg.Batch)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	in := m.Inputs()
	xb := make([]float32, cfg.Batch*in)
	yb := make([]uint8, cfg.Batch)
	for ep := 0; ep < cfg.Epochs; ep++ {
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		var loss float64
		for start := 0; start < n; start += cfg.Batch {
			bn := min(cfg.Batch, n-start)
			for r := 0; r < bn; r++ {
				copy(xb[r*in:(r+1)*in], x[perm[start+r]*in:(perm[start+r]+1)*in])
				yb[r] = y[perm[start+r]]
			}
			loss += m.step(xb[:bn*in], yb[:bn], bn, s, opt) * float64(bn)
		}
		if cfg.Progress != nil {
			cfg.Progress(ep+1, loss/float64(n))
		}
		if cfg.LRDecay > 0 {
			opt.LR *= cfg.LRDecay
		}
	}
	return nil
}

// step runs forward, backward and one Adam update on a batch; returns mean loss.
func (m *MLP) step(x []float32, y []uint8, n int, s *scratch, opt *Adam) float64 {
	m.forward(x, n, s)
	loss := m.backward(y, n, s, opt.grads, nil)
	opt.step()
	return loss
}

// backward computes the cross-entropy gradients of the batch last run by forward
// into grads (W0, B0, W1, B1, ...) and returns the mean loss. With inGrad set it
// also writes the gradient with respect to the input (for a layer below).
func (m *MLP) backward(y []uint8, n int, s *scratch, grads [][]float32, inGrad []float32) float64 {
	k := m.Classes()
	L := len(m.Layers)
	p := s.acts[L][:n*k]
	g := s.grads[L][:n*k]
	var loss float64
	inv := 1 / float32(n)
	for r := 0; r < n; r++ {
		pr := p[r*k : (r+1)*k]
		loss -= math.Log(math.Max(float64(pr[y[r]]), 1e-12))
		for c := 0; c < k; c++ {
			g[r*k+c] = pr[c] * inv
		}
		g[r*k+int(y[r])] -= inv
	}
	for li := L - 1; li >= 0; li-- {
		l := m.Layers[li]
		gw, gb := grads[2*li], grads[2*li+1]
		clear(gw)
		clear(gb)
		gy := s.grads[li+1][:n*l.Out]
		xin := s.acts[li]
		var gx []float32
		if li > 0 {
			gx = s.grads[li][:n*l.In]
		} else if inGrad != nil {
			gx = inGrad[:n*l.In]
		}
		if gx != nil {
			clear(gx)
		}
		for r := 0; r < n; r++ {
			xr := xin[r*l.In : (r+1)*l.In]
			for o := 0; o < l.Out; o++ {
				d := gy[r*l.Out+o]
				if d == 0 {
					continue
				}
				gb[o] += d
				axpy(d, xr, gw[o*l.In:(o+1)*l.In])
				if gx != nil {
					axpy(d, l.W[o*l.In:(o+1)*l.In], gx[r*l.In:(r+1)*l.In])
				}
			}
		}
		if li > 0 { // through the ReLU that produced xin
			for i, v := range xin[:n*l.In] {
				if v <= 0 {
					gx[i] = 0
				}
			}
		}
	}
	return loss / float64(n)
}

func adamUpdate(w, g, mm, vv []float32, lr, b1, b2, eps float32) {
	for i := range w {
		mm[i] = b1*mm[i] + (1-b1)*g[i]
		vv[i] = b2*vv[i] + (1-b2)*g[i]*g[i]
		w[i] -= lr * mm[i] / (float32(math.Sqrt(float64(vv[i]))) + eps)
	}
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func softmax(v []float32) {
	mx := v[0]
	for _, x := range v {
		mx = max(mx, x)
	}
	var sum float32
	for i, x := range v {
		e := float32(math.Exp(float64(x - mx)))
		v[i] = e
		sum += e
	}
	for i := range v {
		v[i] /= sum
	}
}

// Argmax returns the index of the largest of v (the first on ties).
func Argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// Accuracy is the fraction of rows whose argmax probability is the label.
func (m *MLP) Accuracy(x []float32, y []uint8) float64 {
	const chunk = 256
	in, k := m.Inputs(), m.Classes()
	s := m.newScratch(chunk)
	right := 0
	for start := 0; start < len(y); start += chunk {
		n := min(chunk, len(y)-start)
		p := m.forward(x[start*in:(start+n)*in], n, s)
		for r := 0; r < n; r++ {
			if Argmax(p[r*k:(r+1)*k]) == int(y[start+r]) {
				right++
			}
		}
	}
	return float64(right) / float64(len(y))
}

// Graph metadata keys written into every zoo model.
const (
	MetaLabels = "tierflow.labels" // comma-separated class names, index order
	MetaTask   = "tierflow.task"   // "image-classification"
)

// Graph returns m as an ONNX graph. Input "image" is float32 [N, 1, side, side]
// (side*side = Inputs()) or, when side is 0, [N, Inputs()]; outputs are "probs"
// [N, Classes()] and, for models with a hidden layer, "embedding" (the last hidden
// layer's activations, [N, width]).
func (m *MLP) Graph(name string, side int) *Graph {
	g := &Graph{Name: name, Metadata: map[string]string{
		MetaTask:   "image-classification",
		MetaLabels: strings.Join(m.Labels, ","),
	}}
	in := ValueInfo{Name: "image", Shape: []Dim{{Param: "N"}, {Value: int64(m.Inputs())}}}
	cur := "image"
	if side > 0 {
		in.Shape = []Dim{{Param: "N"}, {Value: 1}, {Value: int64(side)}, {Value: int64(side)}}
		g.Nodes = append(g.Nodes, Node{OpType: "Flatten", Name: "flatten", Inputs: []string{"image"}, Outputs: []string{"flat"}, Attrs: []Attr{IntAttr("axis", 1)}})
		cur = "flat"
	}
	g.Inputs = []ValueInfo{in}
	m.appendTo(g, cur)
	return g
}

// appendTo adds the dense layers after the value cur: Gemm (+ Relu) per layer, the
// last hidden activation named "embedding", Softmax into "probs", and the outputs.
func (m *MLP) appendTo(g *Graph, cur string) {
	for i, l := range m.Layers {
		w, b := fmt.Sprintf("fc%d.weight", i), fmt.Sprintf("fc%d.bias", i)
		g.Initializers = append(g.Initializers,
			Initializer{Name: w, Dims: []int64{int64(l.Out), int64(l.In)}, Data: l.W},
			Initializer{Name: b, Dims: []int64{int64(l.Out)}, Data: l.B})
		out := fmt.Sprintf("fc%d", i)
		g.Nodes = append(g.Nodes, Node{OpType: "Gemm", Name: out, Inputs: []string{cur, w, b}, Outputs: []string{out},
			Attrs: []Attr{IntAttr("transB", 1)}})
		cur = out
		if i < len(m.Layers)-1 {
			act := "embedding"
			if i < len(m.Layers)-2 {
				act = fmt.Sprintf("relu%d", i)
			}
			g.Nodes = append(g.Nodes, Node{OpType: "Relu", Name: act, Inputs: []string{cur}, Outputs: []string{act}})
			cur = act
		}
	}
	g.Nodes = append(g.Nodes, Node{OpType: "Softmax", Name: "softmax", Inputs: []string{cur}, Outputs: []string{"probs"}, Attrs: []Attr{IntAttr("axis", 1)}})
	g.Outputs = []ValueInfo{{Name: "probs", Shape: []Dim{{Param: "N"}, {Value: int64(m.Classes())}}}}
	if len(m.Layers) > 1 {
		g.Outputs = append(g.Outputs, ValueInfo{Name: "embedding", Shape: []Dim{{Param: "N"}, {Value: int64(m.Layers[len(m.Layers)-1].In)}}})
	}
}

// MLPFromGraph rebuilds an MLP from a graph written by Graph: the Gemm nodes in
// order, with their weights. Other graphs are refused with ErrBadModel.
func MLPFromGraph(g *Graph) (*MLP, error) {
	inits := map[string]Initializer{}
	for _, in := range g.Initializers {
		inits[in.Name] = in
	}
	m := &MLP{}
	if s := g.Metadata[MetaLabels]; s != "" {
		m.Labels = strings.Split(s, ",")
	}
	for _, n := range g.Nodes {
		switch n.OpType {
		case "Flatten", "Relu", "Softmax":
		case "Gemm":
			if len(n.Inputs) != 3 {
				return nil, fmt.Errorf("%w: Gemm %q has %d inputs, want 3", ErrBadModel, n.Name, len(n.Inputs))
			}
			w, okw := inits[n.Inputs[1]]
			b, okb := inits[n.Inputs[2]]
			if !okw || !okb || len(w.Dims) != 2 {
				return nil, fmt.Errorf("%w: Gemm %q weights missing", ErrBadModel, n.Name)
			}
			m.Layers = append(m.Layers, Layer{In: int(w.Dims[1]), Out: int(w.Dims[0]), W: w.Data, B: b.Data})
		default:
			return nil, fmt.Errorf("%w: operator %s is not part of a zoo MLP", ErrBadModel, n.OpType)
		}
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("%w: no Gemm layer", ErrBadModel)
	}
	return m, nil
}
