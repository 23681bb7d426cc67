package modelzoo

import (
	"fmt"
	"math"
)

// Evaluate runs graph g on n inputs x (the single graph input, batch first) with a
// plain Go interpreter of the operators the zoo writes (Flatten, Gemm with
// transB=1, Relu, Softmax on the last axis, Conv without padding or stride, MaxPool
// without padding) and returns the named output with its shape. It is the
// reference that ONNX Runtime's results are checked against, so it shares no code
// with the training forward passes.
func Evaluate(g *Graph, x []float32, n int, output string) ([]float32, []int, error) {
	if len(g.Inputs) != 1 {
		return nil, nil, fmt.Errorf("%w: %d graph inputs, want 1", ErrBadModel, len(g.Inputs))
	}
	type tensor struct {
		shape []int
		data  []float32
	}
	shape := []int{n}
	for _, d := range g.Inputs[0].Shape[1:] {
		shape = append(shape, int(d.Value))
	}
	vals := map[string]tensor{g.Inputs[0].Name: {shape, x}}
	for _, in := range g.Initializers {
		s := make([]int, len(in.Dims))
		for i, d := range in.Dims {
			s[i] = int(d)
		}
		vals[in.Name] = tensor{s, in.Data}
	}
	attr := func(nd Node, name string) (Attr, bool) {
		for _, a := range nd.Attrs {
			if a.Name == name {
				return a, true
			}
		}
		return Attr{}, false
	}
	for _, nd := range g.Nodes {
		ins := make([]tensor, len(nd.Inputs))
		for i, name := range nd.Inputs {
			t, ok := vals[name]
			if !ok {
				return nil, nil, fmt.Errorf("%w: node %s reads unknown value %q", ErrBadModel, nd.Name, name)
			}
			ins[i] = t
		}
		var out tensor
		switch nd.OpType {
		case "Flatten":
			rest := 1
			for _, d := range ins[0].shape[1:] {
				rest *= d
			}
			out = tensor{[]int{ins[0].shape[0], rest}, ins[0].data}
		case "Relu":
			d := make([]float32, len(ins[0].data))
			for i, v := range ins[0].data {
				d[i] = float32(math.Max(float64(v), 0))
			}
			out = tensor{ins[0].shape, d}
		case "Softmax":
			k := ins[0].shape[len(ins[0].shape)-1]
			d := make([]float32, len(ins[0].data))
			for r := 0; r*k < len(d); r++ {
				row := ins[0].data[r*k : (r+1)*k]
				m := math.Inf(-1)
				for _, v := range row {
					m = math.Max(m, float64(v))
				}
				var sum float64
				for _, v := range row {
					sum += math.Exp(float64(v) - m)
				}
				for i, v := range row {
					d[r*k+i] = float32(math.Exp(float64(v)-m) / sum)
				}
			}
			out = tensor{ins[0].shape, d}
		case "Gemm":
			if a, ok := attr(nd, "transB"); !ok || a.Int == nil || *a.Int != 1 {
				return nil, nil, fmt.Errorf("%w: Gemm %s without transB=1", ErrBadModel, nd.Name)
			}
			a, w, b := ins[0], ins[1], ins[2]
			rows, in, o := a.shape[0], a.shape[1], w.shape[0]
			if w.shape[1] != in {
				return nil, nil, fmt.Errorf("%w: Gemm %s: %v x %v", ErrBadModel, nd.Name, a.shape, w.shape)
			}
			d := make([]float32, rows*o)
			for r := 0; r < rows; r++ {
				ar := a.data[r*in : (r+1)*in]
				for j := 0; j < o; j++ {
					wr := w.data[j*in : (j+1)*in]
					wr = wr[:len(ar)]
					s := float64(b.data[j])
					for i, av := range ar {
						s += float64(av) * float64(wr[i])
					}
					d[r*o+j] = float32(s)
				}
			}
			out = tensor{[]int{rows, o}, d}
		case "Conv":
			a, w, b := ins[0], ins[1], ins[2]
			N, Cin, H, W := a.shape[0], a.shape[1], a.shape[2], a.shape[3]
			F, K := w.shape[0], w.shape[2]
			Ho, Wo := H-K+1, W-K+1
			d := make([]float32, N*F*Ho*Wo)
			for r := 0; r < N; r++ {
				for f := 0; f < F; f++ {
					for y := 0; y < Ho; y++ {
						for xx := 0; xx < Wo; xx++ {
							s := float64(b.data[f])
							for c := 0; c < Cin; c++ {
								for ky := 0; ky < K; ky++ {
									ar := a.data[((r*Cin+c)*H+y+ky)*W+xx:][:K]
									wr := w.data[((f*Cin+c)*K+ky)*K:][:K]
									for kx, av := range ar {
										s += float64(av) * float64(wr[kx])
									}
								}
							}
							d[((r*F+f)*Ho+y)*Wo+xx] = float32(s)
						}
					}
				}
			}
			out = tensor{[]int{N, F, Ho, Wo}, d}
		case "MaxPool":
			ka, _ := attr(nd, "kernel_shape")
			sa, _ := attr(nd, "strides")
			if len(ka.Ints) != 2 || len(sa.Ints) != 2 {
				return nil, nil, fmt.Errorf("%w: MaxPool %s needs kernel_shape and strides", ErrBadModel, nd.Name)
			}
			k, st := int(ka.Ints[0]), int(sa.Ints[0])
			a := ins[0]
			N, C, H, W := a.shape[0], a.shape[1], a.shape[2], a.shape[3]
			Ho, Wo := (H-k)/st+1, (W-k)/st+1
			d := make([]float32, N*C*Ho*Wo)
			for rc := 0; rc < N*C; rc++ {
				for y := 0; y < Ho; y++ {
					for xx := 0; xx < Wo; xx++ {
						m := float32(math.Inf(-1))
						for ky := 0; ky < k; ky++ {
							for kx := 0; kx < k; kx++ {
								m = max(m, a.data[(rc*H+y*st+ky)*W+xx*st+kx])
							}
						}
						d[(rc*Ho+y)*Wo+xx] = m
					}
				}
			}
			out = tensor{[]int{N, C, Ho, Wo}, d}
		default:
			return nil, nil, fmt.Errorf("%w: operator %s is not supported by the reference evaluator", ErrBadModel, nd.OpType)
		}
		vals[nd.Outputs[0]] = out
	}
	t, ok := vals[output]
	if !ok {
		return nil, nil, fmt.Errorf("%w: no value %q", ErrBadModel, output)
	}
	return t.data, t.shape, nil
}
