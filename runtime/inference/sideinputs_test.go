package inference

import (
	"cmp"
	"errors"
	"slices"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
)

// stateful is a fake model with Silero VAD's signature: it checks the side
// inputs it is given, writes input[0] + sr/1000 + sum(state) per row, and
// returns that value as the first element of the next state. With next set,
// the state output is named so that it is not recognised as recurrent.
type stateful struct {
	t    *testing.T
	next string
}

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
		{Name: cmp.Or(s.next, "stateN"), DType: ml.Float32, Shape: []int64{-1, -1, -1}},
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
	out[1].F32[0] = out[0].F32[0]
	return nil
}

// TestSideInputs: the state is threaded row to row and across calls, each
// fresh copy starts from zeros, and a float input without a matching output is
// zeros per batch.
func TestSideInputs(t *testing.T) {
	w, err := withSideInputs(stateful{t: t}, "audio", []int64{16000})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Inputs(); len(got) != 1 || got[0].Name != "input" {
		t.Fatalf("inputs %v", got)
	}
	if got := w.Outputs(); len(got) != 1 || got[0].Name != "output" {
		t.Fatalf("outputs %v", got)
	}
	run := func(s ml.Session, x ...float32) []float32 {
		t.Helper()
		in := make([]float32, 4*len(x))
		for i, v := range x {
			in[4*i] = v
		}
		out := []ml.Tensor{{DType: ml.Float32}}
		if err := s.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(len(x)), 4}, F32: in}}, out); err != nil {
			t.Fatal(err)
		}
		return out[0].F32
	}
	// sr = 16000; the state carries the previous row's output.
	if got := run(w, 1, 2); !slices.Equal(got, []float32{17, 35}) {
		t.Errorf("first call %v, want [17 35]", got)
	}
	if got := run(w, 3); !slices.Equal(got, []float32{54}) {
		t.Errorf("second call %v, want [54]", got)
	}
	if got := run(freshSession(w), 1, 2); !slices.Equal(got, []float32{17, 35}) {
		t.Errorf("fresh copy %v, want [17 35]", got)
	}
	z, err := withSideInputs(stateful{t: t, next: "hidden"}, "audio", []int64{16000})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(z, 1, 2); !slices.Equal(got, []float32{17, 18}) {
		t.Errorf("zero state %v, want [17 18]", got)
	}

	for _, c := range []struct {
		name   string
		consts []int64
	}{{"missing sr", nil}, {"extra constant", []int64{16000, 1}}} {
		if _, err := withSideInputs(stateful{t: t}, "audio", c.consts); !errors.Is(err, ErrModel) {
			t.Errorf("%s: err %v, want ErrModel", c.name, err)
		}
	}
}
