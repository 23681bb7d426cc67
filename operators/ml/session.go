package ml

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DType is a tensor element type. The operator moves float32 tensors; int64 is
// there for models with integer side inputs (a sample rate, a token id). The
// other types are models' inputs and outputs that a typed call
// (runtime/inference) maps to SQL columns: their tensors hold their elements'
// little-endian bytes in Tensor.Raw.
type DType int

const (
	Float32 DType = iota + 1
	Int64
	Int32
	Int16
	Int8
	Uint8
	Uint16
	Bool
	Float16
	Float64
	String
)

var dtypeNames = map[DType]string{Float32: "float32", Int64: "int64", Int32: "int32", Int16: "int16", Int8: "int8",
	Uint8: "uint8", Uint16: "uint16", Bool: "bool", Float16: "float16", Float64: "float64", String: "string"}

func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// Size is the bytes of one element (0 for String, whose elements vary).
func (d DType) Size() int {
	switch d {
	case Int8, Uint8, Bool:
		return 1
	case Int16, Uint16, Float16:
		return 2
	case Float32, Int32:
		return 4
	case Int64, Float64:
		return 8
	}
	return 0
}

// IsRaw reports a type whose tensors hold their data in Tensor.Raw.
func (d DType) IsRaw() bool { return d != Float32 && d != Int64 && d.Size() > 0 }

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

// Tensor is a dense row-major tensor. Exactly one of F32, I64 and Raw holds
// the data, as DType says (Raw: the elements' little-endian bytes, a bool
// one byte of 0 or 1, a float16 its IEEE half bits). The slices may alias Arrow buffers or scratch memory owned by the
// caller: a Session must not keep them after Run returns.
type Tensor struct {
	DType DType
	Shape []int64
	F32   []float32
	I64   []int64
	Raw   []byte
}

// HasData reports whether the tensor carries data (else a session allocates
// it, as an output).
func (t Tensor) HasData() bool { return t.F32 != nil || t.I64 != nil || t.Raw != nil }

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
