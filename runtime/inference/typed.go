package inference

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/float16"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/expr"
)

// A typed call is a model call whose arguments are SQL columns other than
// float32 tensors (INT, BIGINT, TIMESTAMP, BOOLEAN, DOUBLE, BLOB, VARCHAR),
// or whose model takes or gives tensors of other element types (int64,
// int32, int16, int8, uint8, uint16, bool, float16, double), mapped by one
// rule each way:
//
//   - a number or BOOLEAN column is one element of the input's row ([N] or
//     [N,1]); a TIMESTAMP is its count of the column's unit since the epoch;
//     integers feed integer and float inputs, floats feed float inputs,
//     booleans feed bool inputs; a value out of the input type's range is a
//     failed row (null out), never a wrapped one;
//   - a BLOB (or VARCHAR) is the row's elements in the input's element type,
//     little-endian (a uint8 input takes the bytes as they are): up to the
//     row's size in bytes, a shorter value zero-padded (a fixed-size
//     buffer), a longer one a failed row;
//   - a float32 tensor column feeds a float input of as many elements;
//   - outputs back the same way: an integer output gives an integer,
//     TIMESTAMP or float column, a float output a float column or a tensor,
//     a bool output a BOOLEAN, and any output a BLOB of its row's
//     little-endian bytes (a uint8 output its bytes; a VARCHAR takes a uint8
//     row as text, without the NUL padding of its fixed size).
//
// A column a model input cannot take is an error at bind time naming the
// model, the argument's column and type, and the input. The call runs on the
// model operator of every other call (ml.Model: batching, failed rows,
// scheduling): its Pre step packs each argument into a float32 "carrier"
// tensor column holding the elements' bits (an element of 4 bytes or fewer
// in one 32-bit word, zero-extended, one of 8 bytes in two), typedSession
// unpacks the carriers into the model's tensors and packs its outputs back,
// and the Post step turns the output carriers into the query's columns. The
// model operator only copies tensor values, so the bits pass through as they
// are.
type typedCall struct {
	args    []typedArg
	outs    []typedOut
	session *typedSession
	inCols  int // columns of the call's input, before the carriers
}

// typedArg is one argument feeding one model input.
type typedArg struct {
	col   int
	name  string
	typ   arrow.DataType
	in    ml.TensorInfo
	row   []int64 // the input's row shape
	elems int
	words int // carrier words per row
	conv  argConv
}

// typedOut is one query column from one model output.
type typedOut struct {
	field  arrow.Field
	out    ml.TensorInfo
	model  int // the output's index among the model's
	row    []int64
	elems  int
	words  int
	target outConv
}

type argConv int

const (
	argInt    argConv = iota // an integer (or TIMESTAMP) column
	argFloat                 // a float column
	argBool                  // a BOOLEAN column
	argBytes                 // a BLOB or VARCHAR: the row's elements as bytes
	argTensor                // a float32 tensor column
)

type outConv int

const (
	outInt outConv = iota
	outFloat
	outBool
	outBytes
	outText
	outTensor
)

// carrierCol names the Pre step's k-th carrier and the model's k-th output
// column; they never leave the operator.
func carrierCol(k int) string { return fmt.Sprintf("$arg%d", k+1) }
func outCol(k int) string     { return fmt.Sprintf("$out%d", k+1) }

// wordsPer is the carrier words of one element of d.
func wordsPer(d ml.DType) int { return max(1, d.Size()/4) }

// needsTyped reports whether the call of sess on the argument columns
// (cols of in) with the query's outputs out is a typed call: an argument
// that is not a float32 tensor, a model input that is not float32, or a
// model output the query reads that is not float32.
func needsTyped(sess ml.Session, in *arrow.Schema, colIdx []int, out []arrow.Field) bool {
	for _, c := range colIdx {
		if _, err := ml.FieldShape(in.Field(c)); err != nil {
			if _, _, ok := ml.VariableShape(in.Field(c)); !ok {
				if _, enc := ml.EncodedShape(in.Field(c)); !enc {
					return true
				}
			}
		}
	}
	for _, mi := range sess.Inputs() {
		if mi.DType != ml.Float32 {
			return true
		}
	}
	for i, o := range sess.Outputs() {
		if i < len(out) && o.DType != ml.Float32 {
			return true
		}
	}
	return false
}

// newTypedCall binds the call of model (its name, for errors) on columns
// colIdx of in to session sess, giving the query's columns out.
func newTypedCall(model string, sess ml.Session, in *arrow.Schema, colIdx []int, out []arrow.Field) (*typedCall, error) {
	ins, outs := sess.Inputs(), sess.Outputs()
	if len(ins) != len(colIdx) {
		return nil, fmt.Errorf("%w: %s takes %d inputs %v, the call passes %d columns: the arguments feed the inputs in order", ErrModel, model, len(ins), ins, len(colIdx))
	}
	if len(out) > len(outs) {
		return nil, fmt.Errorf("%w: %s gives %d outputs %v, the query reads %d columns: the columns take the outputs in order", ErrModel, model, len(outs), outs, len(out))
	}
	c := &typedCall{inCols: in.NumFields()}
	for k, col := range colIdx {
		f := in.Field(col)
		a := typedArg{col: col, name: f.Name, typ: f.Type, in: ins[k]}
		if err := a.bind(); err != nil {
			return nil, fmt.Errorf("%w: %s argument %d (column %s, %s) cannot feed model input %s: %s", ErrModel, model, k+1, f.Name, sqlType(f.Type), ins[k], err)
		}
		c.args = append(c.args, a)
	}
	for j, f := range out {
		o := typedOut{field: f, out: outs[j], model: j}
		if err := o.bind(); err != nil {
			return nil, fmt.Errorf("%w: %s output %s cannot give column %s (%s): %s", ErrModel, model, outs[j], f.Name, sqlType(f.Type), err)
		}
		c.outs = append(c.outs, o)
	}
	c.session = &typedSession{inner: sess, call: c}
	return c, nil
}

// rowShape is the fixed row shape of a model tensor [N, ...].
func rowShape(t ml.TensorInfo) ([]int64, error) {
	if len(t.Shape) < 1 {
		return nil, fmt.Errorf("a scalar, want a batch dimension first ([N, ...])")
	}
	if t.Shape[0] >= 0 && t.Shape[0] != 1 {
		return nil, fmt.Errorf("a fixed batch of %d", t.Shape[0])
	}
	row := slices.Clone(t.Shape[1:])
	for _, d := range row {
		if d < 0 {
			return nil, fmt.Errorf("only the batch dimension may be dynamic for a typed column")
		}
	}
	return row, nil
}

func (a *typedArg) bind() error {
	d := a.in.DType
	if d == ml.String {
		return fmt.Errorf("string tensors are not supported: pass the text as a BLOB or VARCHAR to a uint8 input")
	}
	row, err := rowShape(a.in)
	if err != nil {
		return err
	}
	a.row, a.elems, a.words = row, int(prod(row)), int(prod(row))*wordsPer(d)
	isInt, isFloat := isIntType(d), isFloatType(d)
	scalar := func() error { return oneElement(a.typ, a.elems, "input") }
	switch a.typ.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.TIMESTAMP, arrow.DATE32:
		a.conv = argInt
		if !isInt && !isFloat {
			return fmt.Errorf("an integer feeds an integer or float input")
		}
		return scalar()
	case arrow.FLOAT32, arrow.FLOAT64:
		a.conv = argFloat
		if !isFloat {
			return fmt.Errorf("a float feeds a float input (float16, float32, double), not %s: it would be truncated", d)
		}
		return scalar()
	case arrow.BOOL:
		a.conv = argBool
		if d != ml.Bool {
			return fmt.Errorf("a BOOLEAN feeds a bool input")
		}
		return scalar()
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING, arrow.LARGE_STRING:
		a.conv = argBytes
		return nil
	case arrow.FIXED_SIZE_LIST:
		lt := a.typ.(*arrow.FixedSizeListType)
		a.conv = argTensor
		if lt.Elem().ID() != arrow.FLOAT32 {
			break
		}
		if !isFloat {
			return fmt.Errorf("a float tensor feeds a float input (float16, float32, double), not %s: it would be truncated", d)
		}
		if int(lt.Len()) != a.elems {
			return fmt.Errorf("the tensor's rows have %d values, the input's row %d", lt.Len(), a.elems)
		}
		return nil
	}
	return fmt.Errorf("no rule maps a %s column to a model input", sqlType(a.typ))
}

func (o *typedOut) bind() error {
	d := o.out.DType
	if d == ml.String {
		return fmt.Errorf("string tensors are not supported: give the text as uint8 bytes")
	}
	row, err := rowShape(o.out)
	if err != nil {
		return err
	}
	o.row, o.elems, o.words = row, int(prod(row)), int(prod(row))*wordsPer(d)
	isInt, isFloat := isIntType(d), isFloatType(d)
	scalar := func() error { return oneElement(o.field.Type, o.elems, "output") }
	switch o.field.Type.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.TIMESTAMP:
		o.target = outInt
		if !isInt {
			return fmt.Errorf("an integer column takes an integer output")
		}
		return scalar()
	case arrow.FLOAT32, arrow.FLOAT64:
		o.target = outFloat
		if !isInt && !isFloat {
			return fmt.Errorf("a float column takes a number")
		}
		return scalar()
	case arrow.BOOL:
		o.target = outBool
		if d != ml.Bool {
			return fmt.Errorf("a BOOLEAN takes a bool output")
		}
		return scalar()
	case arrow.BINARY:
		o.target = outBytes
		return nil
	case arrow.STRING:
		o.target = outText
		if d != ml.Uint8 && d != ml.Int8 {
			return fmt.Errorf("a VARCHAR takes a uint8 output (the text's bytes)")
		}
		return nil
	case arrow.FIXED_SIZE_LIST:
		o.target = outTensor
		lt := o.field.Type.(*arrow.FixedSizeListType)
		if lt.Elem().ID() != arrow.FLOAT32 {
			break
		}
		if !isInt && !isFloat {
			return fmt.Errorf("a tensor column takes a number output")
		}
		if int(lt.Len()) != o.elems {
			return fmt.Errorf("the column's rows have %d values, the output's row %d", lt.Len(), o.elems)
		}
		return nil
	}
	return fmt.Errorf("no rule maps a model output to a %s column", sqlType(o.field.Type))
}

func isIntType(d ml.DType) bool {
	return d == ml.Int64 || d == ml.Int32 || d == ml.Int16 || d == ml.Int8 || d == ml.Uint8 || d == ml.Uint16
}

func isFloatType(d ml.DType) bool { return d == ml.Float32 || d == ml.Float16 || d == ml.Float64 }

// oneElement checks that a row of a tensor (what: input or output) of
// elems elements holds one value of column type t.
func oneElement(t arrow.DataType, elems int, what string) error {
	if elems != 1 {
		return fmt.Errorf("a %s value is one element, the %s's row has %d", sqlType(t), what, elems)
	}
	return nil
}

// sqlType names an Arrow type as the catalog and the queries do.
func sqlType(t arrow.DataType) string {
	if lt, ok := t.(*arrow.FixedSizeListType); ok && lt.Elem().ID() == arrow.FLOAT32 {
		return fmt.Sprintf("TENSOR(FLOAT, %d)", lt.Len())
	}
	return expr.TypeName(t)
}

func prod(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// bindIn is the model operator's input: the call's input and one carrier
// column per argument.
func (c *typedCall) bindIn(in *arrow.Schema) *arrow.Schema {
	fs := slices.Clone(in.Fields())
	for k, a := range c.args {
		fs = append(fs, ml.TensorField(carrierCol(k), []int64{int64(a.words)}))
	}
	md := in.Metadata()
	return arrow.NewSchema(fs, &md)
}

// inputs are the carrier columns the model operator feeds, by name and index.
func (c *typedCall) inputs() ([]string, []int) {
	var names []string
	var idx []int
	for k := range c.args {
		names = append(names, carrierCol(k))
		idx = append(idx, c.inCols+k)
	}
	return names, idx
}

// heads map each output the query reads to its carrier column.
func (c *typedCall) heads() []ml.Head {
	var hs []ml.Head
	for j, o := range c.outs {
		hs = append(hs, ml.Head{Kind: ml.Embed, Output: o.out.Name, Columns: []string{outCol(j)}})
	}
	return hs
}

// typedPre is the Pre step: it appends the carrier of each argument.
type typedPre struct {
	c   *typedCall
	out *arrow.Schema
	// Failed counts the rows an argument could not feed (out of range,
	// too long): their carriers are null, the model's output for them too.
	Failed int64
}

func (c *typedCall) pre(in *arrow.Schema) *typedPre {
	return &typedPre{c: c, out: c.bindIn(in)}
}

func (p *typedPre) Schema() *arrow.Schema { return p.out }

func (p *typedPre) Apply(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	n := int(rec.NumRows())
	cols := slices.Clone(rec.Columns())
	for _, a := range p.c.args {
		col, failed := a.carrier(mem, rec.Column(a.col), n)
		p.Failed += int64(failed)
		cols = append(cols, col)
		defer col.Release()
	}
	return array.NewRecord(p.out, cols, int64(n)), nil
}

// carrier packs column col's n rows into a carrier tensor column; a null
// row, or one that cannot feed the input, is null.
func (a *typedArg) carrier(mem memory.Allocator, col arrow.Array, n int) (arrow.Array, int) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * a.words * 4)
	words := arrow.Uint32Traits.CastFromBytes(buf.Bytes())[:n*a.words]
	clear(words)
	valid := make([]bool, n)
	failed := 0
	d := a.in.DType
	for r := range n {
		if col.IsNull(r) {
			continue
		}
		row := words[r*a.words : (r+1)*a.words]
		ok := true
		switch a.conv {
		case argInt:
			ok = putInt(row, d, intValue(col, r))
		case argFloat:
			putFloat(row, d, floatValue(col, r))
		case argBool:
			if col.(*array.Boolean).Value(r) {
				row[0] = 1
			}
		case argBytes:
			ok = putBytes(row, d, a.elems, bytesValue(col, r))
		case argTensor:
			fsl := col.(*array.FixedSizeList)
			vals := fsl.ListValues().(*array.Float32).Float32Values()
			start := (fsl.Offset() + r) * a.elems
			for e, v := range vals[start : start+a.elems] {
				putFloat(row[e*wordsPer(d):], d, float64(v))
			}
		}
		if !ok {
			clear(row)
			failed++
			continue
		}
		valid[r] = true
	}
	nulls, nNulls := bitmap(mem, valid)
	defer buf.Release()
	if nulls != nil {
		defer nulls.Release()
	}
	child := array.NewData(arrow.PrimitiveTypes.Float32, n*a.words, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer child.Release()
	data := array.NewData(ml.TensorType([]int64{int64(a.words)}), n, []*memory.Buffer{nulls, nil}, []arrow.ArrayData{child}, nNulls, 0)
	defer data.Release()
	return array.MakeFromData(data), failed
}

// bitmap is a validity bitmap of valid (nil when all are).
func bitmap(mem memory.Allocator, valid []bool) (*memory.Buffer, int) {
	nNulls := 0
	for _, v := range valid {
		if !v {
			nNulls++
		}
	}
	if nNulls == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(valid)))))
	for i, v := range valid {
		bitutil.SetBitTo(buf.Bytes(), i, v)
	}
	return buf, nNulls
}

// intValue reads an integer (or TIMESTAMP, DATE) column's row.
func intValue(col arrow.Array, r int) int64 {
	switch c := col.(type) {
	case *array.Int8:
		return int64(c.Value(r))
	case *array.Int16:
		return int64(c.Value(r))
	case *array.Int32:
		return int64(c.Value(r))
	case *array.Int64:
		return c.Value(r)
	case *array.Uint8:
		return int64(c.Value(r))
	case *array.Uint16:
		return int64(c.Value(r))
	case *array.Uint32:
		return int64(c.Value(r))
	case *array.Timestamp:
		return int64(c.Value(r))
	case *array.Date32:
		return int64(c.Value(r))
	}
	return 0
}

func floatValue(col arrow.Array, r int) float64 {
	switch c := col.(type) {
	case *array.Float32:
		return float64(c.Value(r))
	case *array.Float64:
		return c.Value(r)
	}
	return 0
}

func bytesValue(col arrow.Array, r int) []byte {
	switch c := col.(type) {
	case *array.Binary:
		return c.Value(r)
	case *array.LargeBinary:
		return c.Value(r)
	case *array.String:
		return []byte(c.Value(r))
	case *array.LargeString:
		return []byte(c.Value(r))
	}
	return nil
}

// intRange is the range of an integer element type.
func intRange(d ml.DType) (lo, hi int64) {
	switch d {
	case ml.Int8:
		return math.MinInt8, math.MaxInt8
	case ml.Uint8:
		return 0, math.MaxUint8
	case ml.Int16:
		return math.MinInt16, math.MaxInt16
	case ml.Uint16:
		return 0, math.MaxUint16
	case ml.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// putInt writes integer v as one element of type d into its words; false
// when d cannot hold it.
func putInt(w []uint32, d ml.DType, v int64) bool {
	switch d {
	case ml.Float32, ml.Float16, ml.Float64:
		putFloat(w, d, float64(v))
		return true
	}
	lo, hi := intRange(d)
	if v < lo || v > hi {
		return false
	}
	w[0] = uint32(v) & sizeMask(d)
	if d.Size() == 8 {
		w[1] = uint32(uint64(v) >> 32)
	}
	return true
}

// sizeMask keeps the element's own bytes of a word (a negative int8 is
// 0xff, not 0xffffffff: the carrier holds the element's bits).
func sizeMask(d ml.DType) uint32 {
	if s := d.Size(); s < 4 {
		return 1<<(8*s) - 1
	}
	return math.MaxUint32
}

func putFloat(w []uint32, d ml.DType, v float64) {
	switch d {
	case ml.Float32:
		w[0] = math.Float32bits(float32(v))
	case ml.Float16:
		w[0] = uint32(float16.New(float32(v)).Uint16())
	case ml.Float64:
		b := math.Float64bits(v)
		w[0], w[1] = uint32(b), uint32(b>>32)
	}
}

// putBytes writes b as the row's elements of type d, little-endian: at
// most elems of them, a shorter b zero-padded; false when b is longer or
// not whole elements.
func putBytes(w []uint32, d ml.DType, elems int, b []byte) bool {
	size := d.Size()
	if len(b) > elems*size || len(b)%size != 0 {
		return false
	}
	per := wordsPer(d)
	for e := 0; e*size < len(b); e++ {
		el := b[e*size : (e+1)*size]
		switch size {
		case 1:
			w[e] = uint32(el[0])
		case 2:
			w[e] = uint32(binary.LittleEndian.Uint16(el))
		case 4:
			w[e] = binary.LittleEndian.Uint32(el)
		case 8:
			w[e*per] = binary.LittleEndian.Uint32(el)
			w[e*per+1] = binary.LittleEndian.Uint32(el[4:])
		}
	}
	return true
}
