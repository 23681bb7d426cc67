package ml

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
)

// LabelsKey is the model metadata entry that lists class names in index order,
// comma-separated (the model zoo writes it).
const LabelsKey = "tierflow.labels"

// MetadataSession is implemented by sessions that can read model metadata
// (runtime/onnx.Session does).
type MetadataSession interface {
	Metadata(key string) (string, bool)
}

// PlanHeads maps the output columns a query asks of a model (`AS m(cols)`, with
// the types the binder gave them) onto the model's outputs:
//
//   - a pair (label INT64 or UTF8, score FLOAT32) is a Classify head on the next
//     unused output [N,K] with K > 1, and so is a label column alone (a VQA
//     answer: the score is left out); UTF8 labels come from the model's
//     LabelsKey metadata;
//   - a tensor column is an Embed head on the next unused output whose row has
//     the same number of values (an output of the same name is preferred);
//   - a FLOAT32 column is a Scalar head on the next unused output [N] or [N,1].
//
// Output names that equal a column name are taken first. Every mismatch is an
// ErrSchema naming the column and the model's outputs.
func PlanHeads(s Session, cols []arrow.Field) ([]Head, error) {
	outs := s.Outputs()
	used := make([]bool, len(outs))
	rowSize := func(o TensorInfo) int64 {
		if len(o.Shape) == 0 {
			return -1
		}
		return product(o.Shape[1:])
	}
	pick := func(name string, ok func(TensorInfo) bool) int {
		for i, o := range outs {
			if !used[i] && o.Name == name && ok(o) {
				return i
			}
		}
		for i, o := range outs {
			if !used[i] && ok(o) {
				return i
			}
		}
		return -1
	}
	var heads []Head
	for i := 0; i < len(cols); i++ {
		c := cols[i]
		switch {
		case c.Type.ID() == arrow.INT64 || c.Type.ID() == arrow.STRING:
			withScore := i+1 < len(cols) && cols[i+1].Type.ID() == arrow.FLOAT32
			o := pick(c.Name, func(o TensorInfo) bool {
				return o.DType == Float32 && len(o.Shape) == 2 && o.Shape[1] > 1
			})
			h := Head{Kind: Classify, Columns: []string{c.Name}}
			if withScore {
				h.Columns = append(h.Columns, cols[i+1].Name)
			}
			if o < 0 {
				return nil, fmt.Errorf("%w: columns %s want a class output [N,K]; model outputs %v", ErrSchema, strings.Join(h.Columns, ", "), outs)
			}
			h.Output = outs[o].Name
			if c.Type.ID() == arrow.STRING {
				ms, ok := s.(MetadataSession)
				var v string
				if ok {
					v, ok = ms.Metadata(LabelsKey)
				}
				if !ok || v == "" {
					return nil, fmt.Errorf("%w: column %s is a string label but the model has no %s metadata (declare it INT for class indexes)", ErrSchema, c.Name, LabelsKey)
				}
				h.Labels = strings.Split(v, ",")
			}
			used[o] = true
			heads = append(heads, h)
			if withScore {
				i++
			}
		case c.Type.ID() == arrow.FIXED_SIZE_LIST:
			shape, err := FieldShape(c)
			if err != nil {
				return nil, err
			}
			o := pick(c.Name, func(o TensorInfo) bool { return o.DType == Float32 && rowSize(o) == product(shape) })
			if o < 0 {
				return nil, fmt.Errorf("%w: tensor column %s [%s] matches no model output %v", ErrSchema, c.Name, FormatDims(shape), outs)
			}
			used[o] = true
			heads = append(heads, Head{Kind: Embed, Output: outs[o].Name, Columns: []string{c.Name}})
		case c.Type.ID() == arrow.FLOAT32:
			o := pick(c.Name, func(o TensorInfo) bool { return o.DType == Float32 && rowSize(o) == 1 })
			if o < 0 {
				return nil, fmt.Errorf("%w: column %s wants an output [N] or [N,1]; model outputs %v", ErrSchema, c.Name, outs)
			}
			used[o] = true
			heads = append(heads, Head{Kind: Scalar, Output: outs[o].Name, Columns: []string{c.Name}})
		default:
			return nil, fmt.Errorf("%w: column %s of type %s cannot come from a model output (want label/score, a tensor, or FLOAT)", ErrSchema, c.Name, c.Type)
		}
	}
	return heads, nil
}
