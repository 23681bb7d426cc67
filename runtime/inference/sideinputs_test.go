package inference

import (
	"errors"
	"slices"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
)

// stateful is a fake model with Silero VAD's signature: it checks the side
// inputs it is given and writes input[0] + sr/1000 + sum(state) per row.
type stateful struct{ t *testing.T }

func (s stateful) Inputs() []ml.TensorInfo {
	return []ml.TensorInfo{
		{Name: "input", DType: ml.Float32, Shape: []int64{-1, -1}},
		{Name: "state", DType: ml.Float32, Shape: []int64{2, -1, 3}},
		{Name: "sr", DType: ml.Int64, Shape: []int64{}},
	}
}

func (s stateful) Outputs() []ml.TensorInfo {
	return []ml.TensorInfo{
		{Name: "output", DType: ml.Float32, Shape: []int64{-1, 1}},
		{Name: "stateN", DType: ml.Float32, Shape: []int64{-1, -1, -1}},
	}
}

func (s stateful) Run(in, out []ml.Tensor) error {
	n := in[0].Shape[0]
	if !slices.Equal(in[1].Shape, []int64{2, n, 3}) || len(in[1].F32) != int(2*n*3) {
		s.t.Errorf("state shape %v, %d values", in[1].Shape, len(in[1].F32))
	}
	if len(in[2].Shape) != 0 || len(in[2].I64) != 1 {
		s.t.Errorf("sr shape %v", in[2].Shape)
	}
	if out[1].F32 != nil {
		s.t.Errorf("the hidden state output came with a buffer")
	}
	var st float32
	for _, x := range in[1].F32 {
		st += x
	}
	row := int(in[0].Shape[1])
	if out[0].F32 == nil {
		out[0].F32, out[0].Shape = make([]float32, n), []int64{n, 1}
	}
	for i := range int(n) {
		out[0].F32[i] = in[0].F32[i*row] + float32(in[2].I64[0])/1000 + st
	}
	out[1].Shape, out[1].F32 = []int64{2, n, 3}, make([]float32, 2*n*3)
	return nil
}

func TestSideInputs(t *testing.T) {
	w, err := withSideInputs(stateful{t}, "audio", []int64{16000})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Inputs(); len(got) != 1 || got[0].Name != "input" {
		t.Fatalf("inputs %v", got)
	}
	if got := w.Outputs(); len(got) != 1 || got[0].Name != "output" {
		t.Fatalf("outputs %v", got)
	}
	out := []ml.Tensor{{DType: ml.Float32}}
	if err := w.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{2, 4}, F32: []float32{1, 0, 0, 0, 2, 0, 0, 0}}}, out); err != nil {
		t.Fatal(err)
	}
	// Zero state, sr = 16000.
	if !slices.Equal(out[0].F32, []float32{17, 18}) {
		t.Errorf("outputs %v, want [17 18]", out[0].F32)
	}

	for _, c := range []struct {
		name   string
		consts []int64
	}{{"missing sr", nil}, {"extra constant", []int64{16000, 1}}} {
		if _, err := withSideInputs(stateful{t}, "audio", c.consts); !errors.Is(err, ErrModel) {
			t.Errorf("%s: err %v, want ErrModel", c.name, err)
		}
	}
}
