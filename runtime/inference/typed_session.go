package inference

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/float16"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
)

// typedSession is a typed call's session as the model operator sees it:
// every input and output a float32 carrier [N, words] (typed.go), unpacked
// into the model's own element types around the wrapped session's Run.
type typedSession struct {
	inner ml.Session
	call  *typedCall
}

func (s *typedSession) Inputs() []ml.TensorInfo {
	var ti []ml.TensorInfo
	for _, a := range s.call.args {
		ti = append(ti, ml.TensorInfo{Name: a.in.Name, DType: ml.Float32, Shape: []int64{-1, int64(a.words)}})
	}
	return ti
}

// Outputs are the carriers of the outputs the query reads, then the others
// as the model declares them (the operator leaves those alone).
func (s *typedSession) Outputs() []ml.TensorInfo {
	outs := slices.Clone(s.inner.Outputs())
	for _, o := range s.call.outs {
		outs[o.model] = ml.TensorInfo{Name: o.out.Name, DType: ml.Float32, Shape: []int64{-1, int64(o.words)}}
	}
	return outs
}

// Fork keeps the wrapped session's per-caller view.
func (s *typedSession) Fork() ml.Session {
	if f, ok := s.inner.(ml.Forker); ok {
		return &typedSession{inner: f.Fork(), call: s.call}
	}
	return s
}

// Provider says where the wrapped session runs.
func (s *typedSession) Provider() string {
	if p, ok := s.inner.(interface{ Provider() string }); ok {
		return p.Provider()
	}
	return ""
}

func (s *typedSession) Run(inputs, outputs []ml.Tensor) error {
	if len(inputs) != len(s.call.args) || len(inputs) == 0 {
		return fmt.Errorf("%w: typed call: %d carriers for %d inputs", ml.ErrSchema, len(inputs), len(s.call.args))
	}
	n := int(inputs[0].Shape[0])
	ins := make([]ml.Tensor, len(inputs))
	for k, a := range s.call.args {
		ins[k] = unpack(a.in.DType, append([]int64{int64(n)}, a.row...), inputs[k].F32, a.elems*n)
	}
	info := s.inner.Outputs()
	outs := make([]ml.Tensor, len(info))
	for i, o := range info {
		outs[i] = ml.Tensor{DType: o.DType}
		row, err := rowShape(o)
		if err != nil {
			continue // not read: the session allocates it
		}
		shape := append([]int64{int64(n)}, row...)
		elems := n * int(prod(row))
		switch {
		case o.DType == ml.Float32:
			outs[i].F32 = make([]float32, elems)
		case o.DType == ml.Int64:
			outs[i].I64 = make([]int64, elems)
		case o.DType.IsRaw():
			outs[i].Raw = make([]byte, elems*o.DType.Size())
		default:
			continue
		}
		outs[i].Shape = shape
	}
	if err := s.inner.Run(ins, outs); err != nil {
		return err
	}
	for _, o := range s.call.outs {
		dst := outputs[o.model].F32
		if dst == nil {
			continue
		}
		if err := pack(dst, outs[o.model], n*o.elems); err != nil {
			return fmt.Errorf("%w: output %s: %w", ml.ErrSchema, o.out, err)
		}
		outputs[o.model].Shape = []int64{int64(n), int64(o.words)}
	}
	return nil
}

// unpack turns carrier words into a tensor of elems elements of type d.
func unpack(d ml.DType, shape []int64, words []float32, elems int) ml.Tensor {
	t := ml.Tensor{DType: d, Shape: shape}
	switch {
	case d == ml.Float32:
		t.F32 = words[:elems]
	case d == ml.Int64:
		t.I64 = make([]int64, elems)
		for e := range t.I64 {
			t.I64[e] = int64(uint64(math.Float32bits(words[2*e])) | uint64(math.Float32bits(words[2*e+1]))<<32)
		}
	default:
		size, per := d.Size(), wordsPer(d)
		t.Raw = make([]byte, elems*size)
		for e := range elems {
			w := math.Float32bits(words[e*per])
			switch size {
			case 1:
				t.Raw[e] = byte(w)
			case 2:
				binary.LittleEndian.PutUint16(t.Raw[2*e:], uint16(w))
			case 4:
				binary.LittleEndian.PutUint32(t.Raw[4*e:], w)
			case 8:
				binary.LittleEndian.PutUint32(t.Raw[8*e:], w)
				binary.LittleEndian.PutUint32(t.Raw[8*e+4:], math.Float32bits(words[e*per+1]))
			}
		}
	}
	return t
}

// pack writes a model tensor's elems elements into carrier words.
func pack(dst []float32, t ml.Tensor, elems int) error {
	per := wordsPer(t.DType)
	if len(dst) < elems*per {
		return fmt.Errorf("a carrier of %d words for %d elements", len(dst), elems)
	}
	switch {
	case t.DType == ml.Float32:
		if len(t.F32) < elems {
			return fmt.Errorf("%d values, want %d", len(t.F32), elems)
		}
		copy(dst, t.F32[:elems])
	case t.DType == ml.Int64:
		if len(t.I64) < elems {
			return fmt.Errorf("%d values, want %d", len(t.I64), elems)
		}
		for e, v := range t.I64[:elems] {
			dst[2*e] = math.Float32frombits(uint32(v))
			dst[2*e+1] = math.Float32frombits(uint32(uint64(v) >> 32))
		}
	default:
		size := t.DType.Size()
		if size == 0 || len(t.Raw) < elems*size {
			return fmt.Errorf("%d bytes, want %d", len(t.Raw), elems*size)
		}
		for e := range elems {
			b := t.Raw[e*size:]
			switch size {
			case 1:
				dst[e] = math.Float32frombits(uint32(b[0]))
			case 2:
				dst[e] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)))
			case 4:
				dst[e] = math.Float32frombits(binary.LittleEndian.Uint32(b))
			case 8:
				dst[2*e] = math.Float32frombits(binary.LittleEndian.Uint32(b))
				dst[2*e+1] = math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
			}
		}
	}
	return nil
}

// typedPost is the Post step: it keeps the call's input columns and turns
// each output carrier into the query's column.
type typedPost struct {
	c   *typedCall
	out *arrow.Schema
}

// post makes the Post step over the bound model's output schema: the
// call's input, its carriers, then one output carrier per query column.
func (c *typedCall) post(bound *arrow.Schema) (*typedPost, error) {
	if bound.NumFields() != c.inCols+len(c.args)+len(c.outs) {
		return nil, fmt.Errorf("%w: typed call: bound schema of %d columns, want %d", ml.ErrSchema, bound.NumFields(), c.inCols+len(c.args)+len(c.outs))
	}
	fs := slices.Clone(bound.Fields()[:c.inCols])
	for _, o := range c.outs {
		fs = append(fs, o.field)
	}
	md := bound.Metadata()
	return &typedPost{c: c, out: arrow.NewSchema(fs, &md)}, nil
}

func (p *typedPost) Schema() *arrow.Schema { return p.out }

func (p *typedPost) Apply(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	c := p.c
	n := int(rec.NumRows())
	cols := slices.Clone(rec.Columns()[:c.inCols])
	base := c.inCols + len(c.args)
	for j, o := range c.outs {
		col, err := o.column(mem, rec.Column(base+j), n)
		if err != nil {
			return nil, err
		}
		defer col.Release()
		cols = append(cols, col)
	}
	return array.NewRecord(p.out, cols, int64(n)), nil
}

// column turns a carrier column into the query's column.
func (o *typedOut) column(mem memory.Allocator, carrier arrow.Array, n int) (arrow.Array, error) {
	words, _, err := ml.TensorValues(carrier)
	if err != nil {
		return nil, err
	}
	d := o.out.DType
	per := wordsPer(d)
	b := array.NewBuilder(mem, o.field.Type)
	defer b.Release()
	for r := range n {
		if carrier.IsNull(r) {
			b.AppendNull()
			continue
		}
		row := words[r*o.words : (r+1)*o.words]
		switch o.target {
		case outInt:
			v := intElem(row, d)
			if !appendInt(b, v) {
				b.AppendNull() // out of the column's range
			}
		case outFloat:
			v := floatElem(row, d)
			switch fb := b.(type) {
			case *array.Float32Builder:
				fb.Append(float32(v))
			case *array.Float64Builder:
				fb.Append(v)
			}
		case outBool:
			b.(*array.BooleanBuilder).Append(math.Float32bits(row[0]) != 0)
		case outBytes, outText:
			raw := unpack(d, []int64{int64(o.elems)}, row, o.elems)
			bs := rawBytes(raw)
			if o.target == outText {
				for len(bs) > 0 && bs[len(bs)-1] == 0 {
					bs = bs[:len(bs)-1]
				}
				if !utf8.Valid(bs) {
					b.AppendNull()
					continue
				}
				b.(*array.StringBuilder).Append(string(bs))
				continue
			}
			b.(*array.BinaryBuilder).Append(bs)
		case outTensor:
			lb := b.(*array.FixedSizeListBuilder)
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Float32Builder)
			for e := range o.elems {
				vb.Append(float32(floatElem(row[e*per:], d)))
			}
		}
	}
	return b.NewArray(), nil
}

// rawBytes is a tensor's elements as little-endian bytes.
func rawBytes(t ml.Tensor) []byte {
	switch t.DType {
	case ml.Float32:
		out := make([]byte, 4*len(t.F32))
		for i, v := range t.F32 {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out
	case ml.Int64:
		out := make([]byte, 8*len(t.I64))
		for i, v := range t.I64 {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
		}
		return out
	}
	return t.Raw
}

// intElem reads an integer element of type d from its words.
func intElem(w []float32, d ml.DType) int64 {
	x := math.Float32bits(w[0])
	switch d {
	case ml.Int8:
		return int64(int8(x))
	case ml.Int16:
		return int64(int16(x))
	case ml.Int32:
		return int64(int32(x))
	case ml.Int64:
		return int64(uint64(x) | uint64(math.Float32bits(w[1]))<<32)
	case ml.Bool:
		return int64(x & 1)
	}
	return int64(x) // uint8, uint16
}

// floatElem reads a number element of type d from its words.
func floatElem(w []float32, d ml.DType) float64 {
	switch d {
	case ml.Float32:
		return float64(w[0])
	case ml.Float16:
		return float64(float16.FromBits(uint16(math.Float32bits(w[0]))).Float32())
	case ml.Float64:
		return math.Float64frombits(uint64(math.Float32bits(w[0])) | uint64(math.Float32bits(w[1]))<<32)
	}
	return float64(intElem(w, d))
}

// appendInt appends v to an integer (or TIMESTAMP) builder; false when the
// column's type cannot hold it.
func appendInt(b array.Builder, v int64) bool {
	in := func(lo, hi int64) bool { return v >= lo && v <= hi }
	switch ib := b.(type) {
	case *array.Int8Builder:
		if in(math.MinInt8, math.MaxInt8) {
			ib.Append(int8(v))
			return true
		}
	case *array.Int16Builder:
		if in(math.MinInt16, math.MaxInt16) {
			ib.Append(int16(v))
			return true
		}
	case *array.Int32Builder:
		if in(math.MinInt32, math.MaxInt32) {
			ib.Append(int32(v))
			return true
		}
	case *array.Int64Builder:
		ib.Append(v)
		return true
	case *array.Uint8Builder:
		if in(0, math.MaxUint8) {
			ib.Append(uint8(v))
			return true
		}
	case *array.Uint16Builder:
		if in(0, math.MaxUint16) {
			ib.Append(uint16(v))
			return true
		}
	case *array.Uint32Builder:
		if in(0, math.MaxUint32) {
			ib.Append(uint32(v))
			return true
		}
	case *array.TimestampBuilder:
		ib.Append(arrow.Timestamp(v))
		return true
	}
	return false
}
