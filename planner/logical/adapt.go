package logical

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/planner/catalog"
)

// Encodings of an adapted tensor column on the wire.
const (
	// EncodeFloat32 keeps the pixels as float32 (4 bytes each).
	EncodeFloat32 = "float32"
	// EncodeUint8 sends a pixel in [0, 1] as one byte (a quarter of the
	// bytes, to within 1/510); the model call decodes it.
	EncodeUint8 = "uint8"
)

// Adapt is Jellyfish's data adaptation (7.3) before a link: it resizes the
// square images of one tensor column (by area averaging) to the input size
// of the variant the model call above runs, and may encode them compactly,
// so that the rows cross the link at the size the model takes rather than
// at the stream's. It sits right under the model call it feeds and runs
// where that call's input is produced (on the source's worker), never with
// the model.
type Adapt struct {
	Input Node
	// Column is the tensor column adapted (an input index).
	Column int
	// From and To are the square sides before and after.
	From, To int
	// Encoding is EncodeFloat32 or EncodeUint8.
	Encoding string
	// For names the model call and variant it adapts for (EXPLAIN).
	For    string
	schema *arrow.Schema
	Pos    Pos
}

// NewAdapt adapts column col of in (square images of side from, in the last
// two dimensions of its shape) to side to under encoding.
func NewAdapt(in Node, col, from, to int, encoding, forCall string, pos Pos) *Adapt {
	fs := append([]arrow.Field(nil), in.Schema().Fields()...)
	fs[col] = AdaptedField(fs[col], to, encoding)
	return &Adapt{Input: in, Column: col, From: from, To: to, Encoding: encoding, For: forCall, schema: arrow.NewSchema(fs, nil), Pos: pos}
}

// AdaptedField is tensor field f with its last two dimensions resized to
// side and its elements as encoding gives them: float32, or uint8 marked
// with catalog.EncodingKey so the consumer decodes them.
func AdaptedField(f arrow.Field, side int, encoding string) arrow.Field {
	shape := TensorDims(f)
	if n := len(shape); n >= 2 {
		shape[n-2], shape[n-1] = side, side
	}
	size := 1
	parts := make([]string, len(shape))
	for i, d := range shape {
		size *= d
		parts[i] = strconv.Itoa(d)
	}
	keys, vals := []string{catalog.ShapeKey}, []string{strings.Join(parts, ",")}
	elem := arrow.DataType(arrow.PrimitiveTypes.Float32)
	if encoding == EncodeUint8 {
		elem = arrow.PrimitiveTypes.Uint8
		keys, vals = append(keys, catalog.EncodingKey), append(vals, EncodeUint8)
	}
	return arrow.Field{Name: f.Name, Type: arrow.FixedSizeListOf(int32(size), elem), Nullable: f.Nullable, Metadata: arrow.NewMetadata(keys, vals)}
}

// TensorDims is a tensor field's per-row shape: its metadata's, else the
// list's length as a vector; nil for a field that is not a tensor.
func TensorDims(f arrow.Field) []int {
	lt, ok := f.Type.(*arrow.FixedSizeListType)
	if !ok {
		return nil
	}
	if s, ok := f.Metadata.GetValue(catalog.ShapeKey); ok && s != "" {
		var dims []int
		prod := 1
		for _, p := range strings.Split(s, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || d <= 0 {
				return []int{int(lt.Len())}
			}
			dims = append(dims, d)
			prod *= d
		}
		if prod == int(lt.Len()) {
			return dims
		}
	}
	return []int{int(lt.Len())}
}

func (a *Adapt) Schema() *arrow.Schema { return a.schema }
func (a *Adapt) Children() []Node      { return []Node{a.Input} }
func (a *Adapt) WithChildren(ch ...Node) Node {
	mustLen("Adapt", len(ch), 1)
	return NewAdapt(ch[0], a.Column, a.From, a.To, a.Encoding, a.For, a.Pos)
}
func (a *Adapt) Position() Pos { return a.Pos }
func (a *Adapt) Describe() string {
	return fmt.Sprintf("Adapt %s %dx%d -> %dx%d %s for %s", a.Input.Schema().Field(a.Column).Name, a.From, a.From, a.To, a.To, a.Encoding, a.For)
}
