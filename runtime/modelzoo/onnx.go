package modelzoo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// The ONNX messages below are encoded by hand with protowire: the zoo writes a
// handful of message kinds, and generated code for all of onnx.proto would be far
// larger than the few field numbers used here (onnx/onnx.proto, IR version 8).
const (
	irVersion = 8
	opset     = 13

	tensorFloat = 1 // TensorProto.DataType FLOAT
	tensorInt64 = 7 // TensorProto.DataType INT64

	attrFloat = 1 // AttributeProto.AttributeType
	attrInt   = 2
	attrInts  = 7
)

// ElemType is an ONNX TensorProto.DataType: the element type of a graph
// input or output, or of an initializer given as raw bytes (zero: float32).
type ElemType int

// The element types the zoo writes besides float32.
const (
	Float   ElemType = 1
	Uint8   ElemType = 2
	Int8    ElemType = 3
	Uint16  ElemType = 4
	Int16   ElemType = 5
	Int32   ElemType = 6
	Int64   ElemType = 7
	String  ElemType = 8
	Bool    ElemType = 9
	Float16 ElemType = 10
	Double  ElemType = 11
)

// ErrBadModel is wrapped by every error about an ONNX file the zoo cannot read.
var ErrBadModel = errors.New("modelzoo: bad ONNX model")

// Dim is one dimension of a graph input or output: a fixed size, or a symbolic
// name such as "N" for the batch dimension.
type Dim struct {
	Value int64
	Param string
}

// ValueInfo names a graph input or output, its shape and its element type
// (Elem zero: float32).
type ValueInfo struct {
	Name  string
	Shape []Dim
	Elem  ElemType
}

// Initializer is a constant tensor of the graph (a weight): float32 Data,
// or, when Elem is set, Raw little-endian elements of that type (an index
// list, a lookup table of bytes).
type Initializer struct {
	Name string
	Dims []int64
	Data []float32
	Elem ElemType
	Raw  []byte
}

// Attr is a node attribute; exactly one of the value fields is meant.
type Attr struct {
	Name  string
	Int   *int64
	Float *float32
	Ints  []int64
}

// Node is one operator of the graph.
type Node struct {
	OpType  string
	Name    string
	Inputs  []string
	Outputs []string
	Attrs   []Attr
}

// Graph is the subset of an ONNX model the zoo writes and reads back.
type Graph struct {
	Name         string
	Inputs       []ValueInfo
	Outputs      []ValueInfo
	Initializers []Initializer
	Nodes        []Node
	// Metadata becomes ModelProto.metadata_props (for example the label list).
	Metadata map[string]string
}

// IntAttr and FloatAttr build attributes.
func IntAttr(name string, v int64) Attr     { return Attr{Name: name, Int: &v} }
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Float: &v} }

// Marshal encodes g as an ONNX ModelProto (IR 8, default-domain opset 13).
func (g *Graph) Marshal() []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.VarintType) // ir_version
	m = protowire.AppendVarint(m, irVersion)
	m = appendString(m, 2, "tierflow-modelzoo") // producer_name
	m = appendString(m, 3, "1")                 // producer_version
	m = protowire.AppendTag(m, 7, protowire.BytesType)
	m = protowire.AppendBytes(m, g.marshalGraph())
	var op []byte
	op = appendString(op, 1, "")
	op = protowire.AppendTag(op, 2, protowire.VarintType)
	op = protowire.AppendVarint(op, opset)
	m = protowire.AppendTag(m, 8, protowire.BytesType) // opset_import
	m = protowire.AppendBytes(m, op)
	for _, k := range sortedKeys(g.Metadata) {
		var e []byte
		e = appendString(e, 1, k)
		e = appendString(e, 2, g.Metadata[k])
		m = protowire.AppendTag(m, 14, protowire.BytesType) // metadata_props
		m = protowire.AppendBytes(m, e)
	}
	return m
}

// WriteFile writes g to path as an ONNX model.
func (g *Graph) WriteFile(path string) error {
	return os.WriteFile(path, g.Marshal(), 0o644)
}

func (g *Graph) marshalGraph() []byte {
	var b []byte
	for _, n := range g.Nodes {
		b = appendMsg(b, 1, marshalNode(n))
	}
	b = appendString(b, 2, g.Name)
	for _, in := range g.Initializers {
		b = appendMsg(b, 5, marshalTensor(in))
	}
	for _, v := range g.Inputs {
		b = appendMsg(b, 11, marshalValueInfo(v))
	}
	for _, v := range g.Outputs {
		b = appendMsg(b, 12, marshalValueInfo(v))
	}
	return b
}

func marshalNode(n Node) []byte {
	var b []byte
	for _, s := range n.Inputs {
		b = appendString(b, 1, s)
	}
	for _, s := range n.Outputs {
		b = appendString(b, 2, s)
	}
	b = appendString(b, 3, n.Name)
	b = appendString(b, 4, n.OpType)
	for _, a := range n.Attrs {
		var ab []byte
		ab = appendString(ab, 1, a.Name)
		switch {
		case a.Float != nil:
			ab = protowire.AppendTag(ab, 2, protowire.Fixed32Type)
			ab = protowire.AppendFixed32(ab, math.Float32bits(*a.Float))
			ab = appendVarintField(ab, 20, attrFloat)
		case a.Int != nil:
			ab = appendVarintField(ab, 3, uint64(*a.Int))
			ab = appendVarintField(ab, 20, attrInt)
		default:
			for _, v := range a.Ints {
				ab = appendVarintField(ab, 8, uint64(v))
			}
			ab = appendVarintField(ab, 20, attrInts)
		}
		b = appendMsg(b, 5, ab)
	}
	return b
}

func marshalTensor(t Initializer) []byte {
	var b []byte
	for _, d := range t.Dims {
		b = appendVarintField(b, 1, uint64(d))
	}
	elem, raw := tensorFloat, t.Raw
	if t.Elem != 0 {
		elem = int(t.Elem)
	} else {
		raw = make([]byte, 4*len(t.Data))
		for i, v := range t.Data {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	}
	b = appendVarintField(b, 2, uint64(elem))
	b = appendString(b, 8, t.Name)
	b = protowire.AppendTag(b, 9, protowire.BytesType) // raw_data, little endian
	b = protowire.AppendBytes(b, raw)
	return b
}

func marshalValueInfo(v ValueInfo) []byte {
	var shape []byte
	for _, d := range v.Shape {
		var db []byte
		if d.Param != "" {
			db = appendString(db, 2, d.Param)
		} else {
			db = appendVarintField(db, 1, uint64(d.Value))
		}
		shape = appendMsg(shape, 1, db)
	}
	elem := uint64(tensorFloat)
	if v.Elem != 0 {
		elem = uint64(v.Elem)
	}
	var tt []byte
	tt = appendVarintField(tt, 1, elem)
	tt = appendMsg(tt, 2, shape)
	var typ []byte
	typ = appendMsg(typ, 1, tt)
	var b []byte
	b = appendString(b, 1, v.Name)
	b = appendMsg(b, 2, typ)
	return b
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMsg(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// ReadGraph parses the parts of an ONNX model the zoo writes: nodes, float32
// initializers (raw_data or float_data), inputs, outputs and metadata. It exists so
// tests can evaluate a model file with the zoo's own forward pass, independently of
// ONNX Runtime.
func ReadGraph(path string) (*Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := UnmarshalGraph(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// UnmarshalGraph is ReadGraph on bytes.
func UnmarshalGraph(data []byte) (*Graph, error) {
	g := &Graph{Metadata: map[string]string{}}
	err := eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == 7 && typ == protowire.BytesType:
			return g.unmarshalGraph(v)
		case num == 14 && typ == protowire.BytesType:
			var k, val string
			if err := eachField(v, func(n protowire.Number, _ protowire.Type, s []byte, _ uint64) error {
				if n == 1 {
					k = string(s)
				} else if n == 2 {
					val = string(s)
				}
				return nil
			}); err != nil {
				return err
			}
			g.Metadata[k] = val
		}
		return nil
	})
	return g, err
}

func (g *Graph) unmarshalGraph(data []byte) error {
	return eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			n, err := unmarshalNode(v)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, n)
		case 2:
			g.Name = string(v)
		case 5:
			t, err := unmarshalTensor(v)
			if err != nil {
				return err
			}
			g.Initializers = append(g.Initializers, t)
		case 11, 12:
			vi, err := unmarshalValueInfo(v)
			if err != nil {
				return err
			}
			if num == 11 {
				g.Inputs = append(g.Inputs, vi)
			} else {
				g.Outputs = append(g.Outputs, vi)
			}
		}
		return nil
	})
}

func unmarshalNode(data []byte) (Node, error) {
	var n Node
	err := eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			n.Inputs = append(n.Inputs, string(v))
		case 2:
			n.Outputs = append(n.Outputs, string(v))
		case 3:
			n.Name = string(v)
		case 4:
			n.OpType = string(v)
		case 5:
			var a Attr
			err := eachField(v, func(an protowire.Number, at protowire.Type, av []byte, x uint64) error {
				switch {
				case an == 1:
					a.Name = string(av)
				case an == 2 && at == protowire.Fixed32Type:
					f := math.Float32frombits(uint32(x))
					a.Float = &f
				case an == 3 && at == protowire.VarintType:
					i := int64(x)
					a.Int = &i
				case an == 8 && at == protowire.VarintType:
					a.Ints = append(a.Ints, int64(x))
				}
				return nil
			})
			if err != nil {
				return err
			}
			n.Attrs = append(n.Attrs, a)
		}
		return nil
	})
	return n, err
}

func unmarshalTensor(data []byte) (Initializer, error) {
	var t Initializer
	var raw []byte
	dtype := uint64(0)
	err := eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			t.Dims = append(t.Dims, int64(x))
		case num == 1 && typ == protowire.BytesType: // packed dims
			return eachPackedVarint(v, func(d uint64) { t.Dims = append(t.Dims, int64(d)) })
		case num == 2:
			dtype = x
		case num == 4 && typ == protowire.BytesType: // packed float_data
			for i := 0; i+4 <= len(v); i += 4 {
				t.Data = append(t.Data, math.Float32frombits(binary.LittleEndian.Uint32(v[i:])))
			}
		case num == 4 && typ == protowire.Fixed32Type:
			t.Data = append(t.Data, math.Float32frombits(uint32(x)))
		case num == 8:
			t.Name = string(v)
		case num == 9:
			raw = v
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	if dtype != tensorFloat {
		return t, fmt.Errorf("%w: initializer %q has data type %d, want FLOAT", ErrBadModel, t.Name, dtype)
	}
	if raw != nil {
		if len(raw)%4 != 0 {
			return t, fmt.Errorf("%w: initializer %q raw_data of %d bytes", ErrBadModel, t.Name, len(raw))
		}
		t.Data = make([]float32, len(raw)/4)
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	want := int64(1)
	for _, d := range t.Dims {
		want *= d
	}
	if want != int64(len(t.Data)) {
		return t, fmt.Errorf("%w: initializer %q has %d values for dims %v", ErrBadModel, t.Name, len(t.Data), t.Dims)
	}
	return t, nil
}

func unmarshalValueInfo(data []byte) (ValueInfo, error) {
	var vi ValueInfo
	err := eachField(data, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			vi.Name = string(v)
		case 2: // TypeProto
			return eachField(v, func(n protowire.Number, _ protowire.Type, tt []byte, _ uint64) error {
				if n != 1 { // tensor_type
					return nil
				}
				return eachField(tt, func(n protowire.Number, _ protowire.Type, sh []byte, _ uint64) error {
					if n != 2 { // shape
						return nil
					}
					return eachField(sh, func(n protowire.Number, _ protowire.Type, dim []byte, _ uint64) error {
						var d Dim
						err := eachField(dim, func(n protowire.Number, _ protowire.Type, dv []byte, x uint64) error {
							if n == 1 {
								d.Value = int64(x)
							} else if n == 2 {
								d.Param = string(dv)
							}
							return nil
						})
						vi.Shape = append(vi.Shape, d)
						return err
					})
				})
			})
		}
		return nil
	})
	return vi, err
}

// eachField calls fn for every field of a message; for varint and fixed fields v is
// nil and x the value, for bytes fields v is the payload.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrBadModel, protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrBadModel, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

func eachPackedVarint(b []byte, fn func(uint64)) error {
	for len(b) > 0 {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return fmt.Errorf("%w: packed varint: %v", ErrBadModel, protowire.ParseError(n))
		}
		fn(x)
		b = b[n:]
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
