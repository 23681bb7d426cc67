package ml_test

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
)

// sumModel stands in for an ONNX session: "probs" [N,2] is (x0+x1, x2+x3).
type sumModel struct{}

func (sumModel) Inputs() []ml.TensorInfo {
	return []ml.TensorInfo{{Name: "x", DType: ml.Float32, Shape: []int64{-1, 2, 2}}}
}
func (sumModel) Outputs() []ml.TensorInfo {
	return []ml.TensorInfo{{Name: "probs", DType: ml.Float32, Shape: []int64{-1, 2}}}
}
func (sumModel) Run(in, out []ml.Tensor) error {
	x, p := in[0].F32, out[0].F32
	for r := 0; r < int(in[0].Shape[0]); r++ {
		p[2*r], p[2*r+1] = x[4*r]+x[4*r+1], x[4*r+2]+x[4*r+3]
	}
	return nil
}

// A tensor column goes in, label and score columns (and a null error column) come
// out, one batch of rows per session call.
func ExampleBind() {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{ml.TensorField("img", []int64{2, 2})}, nil)
	col, _ := ml.NewTensorColumn(mem, []int64{2, 2}, []float32{
		1, 1, 0, 0, // row 0: class "top"
		0, 0, 0.5, 1, // row 1: class "bottom"
	})
	rec := array.NewRecord(schema, []arrow.Array{col}, 2)
	col.Release()
	defer rec.Release()

	m, err := ml.Bind(sumModel{}, schema, ml.Config{
		Input: "img",
		Heads: []ml.Head{{Kind: ml.Classify, Output: "probs", Labels: []string{"top", "bottom"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Infer(mem, rec)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out.Release()
	fmt.Println(m.OutputSchema().Field(1).Name, m.OutputSchema().Field(2).Name, m.OutputSchema().Field(3).Name)
	for r := 0; r < int(out.NumRows()); r++ {
		fmt.Println(out.Column(1).(*array.String).Value(r), out.Column(2).(*array.Float32).Value(r), out.Column(3).IsNull(r))
	}
	// Output:
	// label score error
	// top 2 true
	// bottom 1.5 true
}
