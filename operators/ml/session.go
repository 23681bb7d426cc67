package ml

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DType is a tensor element type. The operator moves float32 tensors; int64 is
// there for models with integer side inputs (a sample rate, a token id).
type DType int

const (
	Float32 DType = iota + 1
	Int64
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Int64:
		return "int64"
	default:
		return "dtype(" + strconv.Itoa(int(d)) + ")"
	}
}

// TensorInfo describes one model input or output. A negative dimension is dynamic
// (the batch dimension, usually).
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
}

func (t TensorInfo) String() string {
	return fmt.Sprintf("%s %s%s", t.Name, t.DType, FormatShape(t.Shape))
}

// Tensor is a dense row-major tensor. Exactly one of F32 and I64 holds the data,
// as DType says. The slices may alias Arrow buffers or scratch memory owned by the
// caller: a Session must not keep them after Run returns.
type Tensor struct {
	DType DType
	Shape []int64
	F32   []float32
	I64   []int64
}

// Elements is the product of the shape.
func (t Tensor) Elements() int {
	return int(product(t.Shape))
}

// Session runs one model variant on one device. Implementations (runtime/onnx)
// must allow concurrent Run calls.
//
// Run takes one tensor per input, in Inputs() order, and fills outputs, one per
// Outputs() entry. When an output's data slice is non-nil the session writes into
// it (its Shape must be the output's concrete shape); when it is nil the session
// allocates the data and sets Shape.
type Session interface {
	Inputs() []TensorInfo
	Outputs() []TensorInfo
	Run(inputs, outputs []Tensor) error
}

// Forker is implemented by sessions that can give each Model a view of its
// own. Bind runs the model through the fork, which need not be safe for
// concurrent use (a Model is used by one goroutine at a time) and can so keep
// per-caller state, such as the runtime values of the last call's buffers,
// without locks. A fork frees what it holds once it is unreachable.
type Forker interface {
	Fork() Session
}

// Sentinel error kinds of the package.
var (
	// ErrSchema: a column, tensor shape or model signature does not match.
	ErrSchema = errors.New("ml: schema mismatch")
	// ErrConfig: an operator or batcher setting is invalid.
	ErrConfig = errors.New("ml: invalid configuration")
	// ErrClosed: the batcher no longer accepts rows.
	ErrClosed = errors.New("ml: closed")
)

// FormatShape prints a shape as [N,1,28,28], with N for dynamic dimensions.
func FormatShape(s []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		if d < 0 {
			b.WriteByte('N')
		} else {
			b.WriteString(strconv.FormatInt(d, 10))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func product(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}
