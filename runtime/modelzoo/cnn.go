package modelzoo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// CNN is a small convolutional classifier: one convolution (Filters kernels of
// Kernel x Kernel, stride 1, no padding) with ReLU, 2x2 max pooling, then an MLP
// head on the flattened pooled maps (in ONNX's NCHW flatten order).
type CNN struct {
	Side, Filters, Kernel int
	W                     []float32 // Filters*Kernel*Kernel (one input channel)
	B                     []float32 // Filters
	Head                  *MLP
	Labels                []string
}

// NewCNN makes a CNN for side x side single-channel images with the given head
// widths after the pooled features (e.g. {64, 10}).
func NewCNN(side, filters, kernel int, head []int, labels []string, seed uint64) *CNN {
	c := &CNN{Side: side, Filters: filters, Kernel: kernel, Labels: labels}
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	c.W = make([]float32, filters*kernel*kernel)
	std := math.Sqrt(2 / float64(kernel*kernel))
	for i := range c.W {
		c.W[i] = float32(rng.NormFloat64() * std)
	}
	c.B = make([]float32, filters)
	c.Head = NewMLP(append([]int{c.features()}, head...), labels, seed+7)
	return c
}

func (c *CNN) conv() int     { return c.Side - c.Kernel + 1 }
func (c *CNN) pooled() int   { return c.conv() / 2 }
func (c *CNN) features() int { return c.Filters * c.pooled() * c.pooled() }

// Params counts weights and biases.
func (c *CNN) Params() int { return len(c.W) + len(c.B) + c.Head.Params() }

type cnnScratch struct {
	conv   []float32 // n*F*C*C after ReLU
	pool   []float32 // n*F*P*P
	argmax []int32   // index into conv of each pooled value
	gpool  []float32
	head   *scratch
}

func (c *CNN) newScratch(n int) *cnnScratch {
	C, P := c.conv(), c.pooled()
	return &cnnScratch{
		conv:   make([]float32, n*c.Filters*C*C),
		pool:   make([]float32, n*c.Filters*P*P),
		argmax: make([]int32, n*c.Filters*P*P),
		gpool:  make([]float32, n*c.Filters*P*P),
		head:   c.Head.newScratch(n),
	}
}

// forward runs n images (n*Side*Side) and returns the probabilities.
func (c *CNN) forward(x []float32, n int, s *cnnScratch) []float32 {
	S, K, C, P, F := c.Side, c.Kernel, c.conv(), c.pooled(), c.Filters
	for r := 0; r < n; r++ {
		img := x[r*S*S : (r+1)*S*S]
		for f := 0; f < F; f++ {
			w := c.W[f*K*K : (f+1)*K*K]
			out := s.conv[(r*F+f)*C*C : (r*F+f+1)*C*C]
			for y := 0; y < C; y++ {
				for xx := 0; xx < C; xx++ {
					v := c.B[f]
					for ky := 0; ky < K; ky++ {
						row := img[(y+ky)*S+xx : (y+ky)*S+xx+K]
						v += dot(w[ky*K:(ky+1)*K], row)
					}
					out[y*C+xx] = max(v, 0)
				}
			}
			pbase := (r*F + f) * P * P
			for py := 0; py < P; py++ {
				for px := 0; px < P; px++ {
					bi := (2*py)*C + 2*px
					best := bi
					for _, o := range [3]int{1, C, C + 1} {
						if out[bi+o] > out[best] {
							best = bi + o
						}
					}
					s.pool[pbase+py*P+px] = out[best]
					s.argmax[pbase+py*P+px] = int32((r*F+f)*C*C + best)
				}
			}
		}
	}
	return c.Head.forward(s.pool[:n*F*P*P], n, s.head)
}

// Predict returns the class probabilities of n images; it allocates.
func (c *CNN) Predict(x []float32, n int) []float32 {
	s := c.newScratch(n)
	return append([]float32(nil), c.forward(x, n, s)...)
}

// Accuracy is the fraction of rows whose argmax probability is the label.
func (c *CNN) Accuracy(x []float32, y []uint8) float64 {
	const chunk = 256
	in, k := c.Side*c.Side, c.Head.Classes()
	s := c.newScratch(chunk)
	right := 0
	for start := 0; start < len(y); start += chunk {
		n := min(chunk, len(y)-start)
		p := c.forward(x[start*in:(start+n)*in], n, s)
		for r := 0; r < n; r++ {
			if Argmax(p[r*k:(r+1)*k]) == int(y[start+r]) {
				right++
			}
		}
	}
	return float64(right) / float64(len(y))
}

// Train fits the CNN like MLP.Train (mini-batch Adam on cross-entropy).
func (c *CNN) Train(x []float32, y []uint8, cfg TrainConfig) error {
	n := len(y)
	in := c.Side * c.Side
	if len(x) != n*in {
		return fmt.Errorf("modelzoo: %d labels but %d input values (want %d)", n, len(x), n*in)
	}
	if cfg.Batch <= 0 || cfg.Epochs <= 0 {
		return fmt.Errorf("modelzoo: batch %d, epochs %d: both must be positive", cfg.Batch, cfg.Epochs)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+1))
	params := append([][]float32{c.W, c.B}, c.Head.params()...)
	opt := NewAdam(cfg.LR, params...)
	s := c.newScratch(cfg.Batch)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
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
			c.forward(xb[:bn*in], bn, s)
			loss += c.backward(xb[:bn*in], yb[:bn], bn, s, opt.grads) * float64(bn)
			opt.step()
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

func (c *CNN) backward(x []float32, y []uint8, n int, s *cnnScratch, grads [][]float32) float64 {
	S, K, C, P, F := c.Side, c.Kernel, c.conv(), c.pooled(), c.Filters
	gp := s.gpool[:n*F*P*P]
	loss := c.Head.backward(y, n, s.head, grads[2:], gp)
	gw, gb := grads[0], grads[1]
	clear(gw)
	clear(gb)
	// Each pooled gradient flows to the one conv output that won the max, and
	// through its ReLU (a zero winner passed no gradient).
	for i, g := range gp {
		if g == 0 {
			continue
		}
		ci := int(s.argmax[i])
		if s.conv[ci] <= 0 {
			continue
		}
		rf := ci / (C * C)
		r, f := rf/F, rf%F
		pos := ci % (C * C)
		y0, x0 := pos/C, pos%C
		gb[f] += g
		img := x[r*S*S : (r+1)*S*S]
		w := gw[f*K*K : (f+1)*K*K]
		for ky := 0; ky < K; ky++ {
			axpy(g, img[(y0+ky)*S+x0:(y0+ky)*S+x0+K], w[ky*K:(ky+1)*K])
		}
	}
	return loss
}

// Graph returns the CNN as ONNX: input "image" [N,1,Side,Side], Conv, Relu,
// MaxPool, Flatten, then the head's Gemms, outputs "probs" and "embedding".
func (c *CNN) Graph(name string) *Graph {
	g := &Graph{Name: name, Metadata: map[string]string{
		MetaTask:   "image-classification",
		MetaLabels: strings.Join(c.Labels, ","),
	}}
	g.Inputs = []ValueInfo{{Name: "image", Shape: []Dim{{Param: "N"}, {Value: 1}, {Value: int64(c.Side)}, {Value: int64(c.Side)}}}}
	g.Initializers = append(g.Initializers,
		Initializer{Name: "conv.weight", Dims: []int64{int64(c.Filters), 1, int64(c.Kernel), int64(c.Kernel)}, Data: c.W},
		Initializer{Name: "conv.bias", Dims: []int64{int64(c.Filters)}, Data: c.B})
	k := int64(c.Kernel)
	g.Nodes = append(g.Nodes,
		Node{OpType: "Conv", Name: "conv", Inputs: []string{"image", "conv.weight", "conv.bias"}, Outputs: []string{"conv"},
			Attrs: []Attr{{Name: "kernel_shape", Ints: []int64{k, k}}}},
		Node{OpType: "Relu", Name: "conv_relu", Inputs: []string{"conv"}, Outputs: []string{"conv_relu"}},
		Node{OpType: "MaxPool", Name: "pool", Inputs: []string{"conv_relu"}, Outputs: []string{"pool"},
			Attrs: []Attr{{Name: "kernel_shape", Ints: []int64{2, 2}}, {Name: "strides", Ints: []int64{2, 2}}}},
		Node{OpType: "Flatten", Name: "flatten", Inputs: []string{"pool"}, Outputs: []string{"flat"}, Attrs: []Attr{IntAttr("axis", 1)}})
	c.Head.appendTo(g, "flat")
	return g
}
