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
	For string
	// Sides, for a query WITH (LATENCY <= SLOMs), are the sides a batch
	// may cross the link at, largest (To) first: the input sizes of the
	// call's variants up to To. The adapt step picks one per batch from
	// its link's live bandwidth so that the batch reaches the model in
	// time (Jellyfish 7.3's client-side adaptation), and the column
	// becomes a variable-length list (AdaptedField); the model call
	// resizes each row back to To. ComputeMs is the variant's profiled
	// time of a call, taken off the SLO. Nil Sides: every batch at To.
	Sides     []int
	SLOMs     float64
	ComputeMs float64
	// Percentile is the query's LATENCY ... PERCENTILE (0: none named):
	// the share of batches the side must be in time for.
	Percentile float64
	schema     *arrow.Schema
	Pos        Pos
}

// NewAdapt adapts column col of in (square images of side from, in the last
// two dimensions of its shape) to side to under encoding.
func NewAdapt(in Node, col, from, to int, encoding, forCall string, pos Pos) *Adapt {
	fs := append([]arrow.Field(nil), in.Schema().Fields()...)
	fs[col] = AdaptedField(fs[col], to, encoding)
	return &Adapt{Input: in, Column: col, From: from, To: to, Encoding: encoding, For: forCall, schema: arrow.NewSchema(fs, nil), Pos: pos}
}

// WithSides is a copy of a that picks each batch's side from sides (To
// first, descending) to meet a latency SLO of sloMs, the model taking
// computeMs a call; with one side or none it is a.
func (a *Adapt) WithSides(sides []int, sloMs, computeMs, percentile float64) *Adapt {
	if len(sides) < 2 {
		return a
	}
	b := *a
	b.Sides, b.SLOMs, b.ComputeMs, b.Percentile = append([]int(nil), sides...), sloMs, computeMs, percentile
	fs := append([]arrow.Field(nil), a.Input.Schema().Fields()...)
	fs[a.Column] = VariableField(fs[a.Column], a.To, a.Encoding, sides)
	b.schema = arrow.NewSchema(fs, nil)
	return &b
}

// VariableField is AdaptedField for rows that travel at any of sides: a
// variable-length list of the encoding's elements whose metadata keeps the
// shape at side (what the model takes) and lists the sides (SidesKey).
func VariableField(f arrow.Field, side int, encoding string, sides []int) arrow.Field {
	fixed := AdaptedField(f, side, encoding)
	lt := fixed.Type.(*arrow.FixedSizeListType)
	ss := make([]string, len(sides))
	for i, s := range sides {
		ss[i] = strconv.Itoa(s)
	}
	keys := append(fixed.Metadata.Keys(), catalog.SidesKey)
	vals := append(fixed.Metadata.Values(), strings.Join(ss, ","))
	return arrow.Field{Name: f.Name, Type: arrow.ListOf(lt.Elem()), Nullable: f.Nullable, Metadata: arrow.NewMetadata(keys, vals)}
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
	return NewAdapt(ch[0], a.Column, a.From, a.To, a.Encoding, a.For, a.Pos).WithSides(a.Sides, a.SLOMs, a.ComputeMs, a.Percentile)
}
func (a *Adapt) Position() Pos { return a.Pos }
func (a *Adapt) Describe() string {
	d := fmt.Sprintf("Adapt %s %dx%d -> %dx%d %s for %s", a.Input.Schema().Field(a.Column).Name, a.From, a.From, a.To, a.To, a.Encoding, a.For)
	if len(a.Sides) > 1 {
		ss := make([]string, len(a.Sides))
		for i, s := range a.Sides {
			ss[i] = strconv.Itoa(s)
		}
		d += fmt.Sprintf(", per batch %s by the link (LATENCY <= %g ms)", strings.Join(ss, "/"), a.SLOMs)
	}
	return d
}
