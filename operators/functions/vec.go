package functions

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/scalar"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/arrowx"
)

// vec reads one argument row by row, whether it is an array or a broadcast
// scalar, for the canonical types. The typed slices alias the Arrow buffers.
type vec struct {
	kind   kind
	arr    arrow.Array
	const_ bool
	null   bool // the scalar is NULL
	i64    []int64
	f64    []float64
	str    *array.String
	sval   string
	bools  *array.Boolean
	bval   bool
	dec    []decimal128.Num // DECIMAL: unscaled values of one scale
	blob   *array.Binary
	blobv  []byte
}

// kind is the physical family of a canonical type.
type kind uint8

const (
	kNull kind = iota
	kInt       // BIGINT, TIMESTAMP, INTERVAL: int64 values
	kFloat
	kString
	kBool
	kDecimal
	kDate // DATE: int32 days (two dates compare as such)
	kBlob
)

func kindOf(t arrow.DataType) kind {
	switch t.ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.DURATION:
		return kInt
	case arrow.FLOAT64:
		return kFloat
	case arrow.STRING:
		return kString
	case arrow.BOOL:
		return kBool
	case arrow.DECIMAL128:
		return kDecimal
	case arrow.DATE32:
		return kDate
	case arrow.BINARY:
		return kBlob
	}
	return kNull
}

func newVec(d compute.Datum) (*vec, error) {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		a := d.MakeArray()
		v, err := arrayVec(a)
		if err != nil {
			a.Release()
		}
		return v, err
	case *compute.ScalarDatum:
		return scalarVec(d.Value)
	}
	return nil, fmt.Errorf("functions: unsupported datum %s", d)
}

func arrayVec(a arrow.Array) (*vec, error) {
	v := &vec{arr: a, kind: kindOf(a.DataType())}
	switch a.DataType().ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.DURATION:
		v.i64 = Int64Values(a)
	case arrow.FLOAT64:
		v.f64 = a.(*array.Float64).Float64Values()
	case arrow.STRING:
		v.str = a.(*array.String)
	case arrow.BOOL:
		v.bools = a.(*array.Boolean)
	case arrow.DECIMAL128:
		v.dec = decVals(a)
	case arrow.DATE32:
		for _, d := range a.(*array.Date32).Date32Values() {
			v.i64 = append(v.i64, int64(d))
		}
	case arrow.BINARY:
		v.blob = a.(*array.Binary)
	case arrow.NULL:
	default:
		return nil, fmt.Errorf("functions: non-canonical argument type %s", a.DataType())
	}
	return v, nil
}

func scalarVec(s scalar.Scalar) (*vec, error) {
	v := &vec{const_: true, null: !s.IsValid(), kind: kindOf(s.DataType())}
	if v.null {
		return v, nil
	}
	switch s := s.(type) {
	case *scalar.Int64:
		v.i64 = []int64{s.Value}
	case *scalar.Timestamp:
		v.i64 = []int64{int64(s.Value)}
	case *scalar.Duration:
		v.i64 = []int64{int64(s.Value)}
	case *scalar.Float64:
		v.f64 = []float64{s.Value}
	case *scalar.String:
		v.sval = string(s.Value.Bytes())
	case *scalar.Boolean:
		v.bval = s.Value
	case *scalar.Decimal128:
		v.dec = []decimal128.Num{s.Value}
	case *scalar.Date32:
		v.i64 = []int64{int64(s.Value)}
	case *scalar.Binary:
		v.blobv = s.Value.Bytes()
	default:
		return nil, fmt.Errorf("functions: non-canonical scalar type %s", s.DataType())
	}
	return v, nil
}

// Int64Values views the values of an int64, timestamp, duration or date64 array
// as []int64 (same 8-byte layout), honouring the array's offset.
func Int64Values(a arrow.Array) []int64 {
	d := a.Data()
	buf := d.Buffers()[1]
	if buf == nil {
		return nil
	}
	all := arrow.Int64Traits.CastFromBytes(buf.Bytes())
	return all[d.Offset() : d.Offset()+d.Len()]
}

func (v *vec) isNull(i int) bool {
	if v.const_ {
		return v.null
	}
	// A NULL-typed array has no validity bitmap (IsNull says false), but
	// every row of it is NULL.
	return v.kind == kNull || v.arr.IsNull(i)
}

func (v *vec) int64(i int) int64 {
	if v.const_ {
		return v.i64[0]
	}
	return v.i64[i]
}

func (v *vec) float64(i int) float64 {
	if v.const_ {
		return v.f64[0]
	}
	return v.f64[i]
}

func (v *vec) string(i int) string {
	if v.const_ {
		return v.sval
	}
	return v.str.Value(i)
}

func (v *vec) decimal(i int) decimal128.Num {
	if v.const_ {
		return v.dec[0]
	}
	return v.dec[i]
}

// bytes is row i of a BLOB argument; it aliases the Arrow buffer.
func (v *vec) bytes(i int) []byte {
	if v.const_ {
		return v.blobv
	}
	return v.blob.Value(i)
}

// number is row i of a numeric argument (BIGINT or DOUBLE) as a float64.
func (v *vec) number(i int) float64 {
	if v.kind == kInt {
		return float64(v.int64(i))
	}
	return v.float64(i)
}

func (v *vec) bool(i int) bool {
	if v.const_ {
		return v.bval
	}
	return v.bools.Value(i)
}

// out builds a result column of one canonical type.
type out struct {
	// err is why the output could not be built (room), reported by
	// rowwise in place of the array.
	err error
	b   array.Builder
	i64 func(int64)
	f64 func(float64)
	str func(string)
	bl  func(bool)
	dec func(decimal128.Num)
	bin func([]byte)
}

func newOut(mem memory.Allocator, t arrow.DataType, n int) *out {
	o := &out{b: array.NewBuilder(mem, t)}
	arrowx.Reserve(o.b, n)
	switch b := o.b.(type) {
	case *array.Int64Builder:
		o.i64 = b.UnsafeAppend
	case *array.TimestampBuilder:
		o.i64 = func(x int64) { b.UnsafeAppend(arrow.Timestamp(x)) }
	case *array.DurationBuilder:
		o.i64 = func(x int64) { b.UnsafeAppend(arrow.Duration(x)) }
	case *array.Float64Builder:
		o.f64 = b.UnsafeAppend
	case *array.StringBuilder:
		o.str = b.Append
	case *array.BooleanBuilder:
		o.bl = b.UnsafeAppend
	case *array.Decimal128Builder:
		o.dec = b.UnsafeAppend
	case *array.Date32Builder:
		o.i64 = func(x int64) { b.UnsafeAppend(arrow.Date32(x)) }
	case *array.BinaryBuilder:
		o.bin = b.Append
	}
	return o
}

func (o *out) null() { o.b.AppendNull() }

// maxColumnBytes is what one string column can hold: its offsets are
// 32-bit.
const maxColumnBytes = math.MaxInt32

// room makes room in a string output for a value of n bytes before a
// function builds it (repeat, lpad): the bytes are charged to the query's
// budget first, whose allocator refuses past its limit (a memory limit,
// as any operator's), so no Go memory is spent on a value the query may
// not hold, and a value no string column can hold is an error, not a
// crash. n < 0 stands for a size past int64. False, with o.err set, when
// there is no room.
func (o *out) room(n int64) bool {
	sb, ok := o.b.(*array.StringBuilder)
	if !ok {
		return true
	}
	if n < 0 || int64(sb.DataLen())+n > maxColumnBytes {
		size := "more than 2 GiB"
		if n >= 0 {
			size = dataflow.Bytes(n)
		}
		o.err = fmt.Errorf("%w: a value of %s after %s of this batch's: a string column holds at most 2 GiB", ErrValueTooLarge, size, dataflow.Bytes(int64(sb.DataLen())))
		return false
	}
	sb.ReserveData(int(n))
	return true
}

// ErrValueTooLarge: a function's result would not fit a column.
var ErrValueTooLarge = errors.New("functions: value too large")

// copyFrom appends row i of v (whose type matches the output's).
func (o *out) copyFrom(v *vec, i int) {
	switch {
	case v.isNull(i):
		o.b.AppendNull()
	case o.i64 != nil:
		o.i64(v.int64(i))
	case o.f64 != nil:
		o.f64(v.float64(i))
	case o.str != nil:
		o.str(v.string(i))
	case o.bl != nil:
		o.bl(v.bool(i))
	case o.dec != nil:
		o.dec(v.decimal(i))
	case o.bin != nil:
		o.bin(v.bytes(i))
	default:
		o.b.AppendNull()
	}
}

func (o *out) finish() arrow.Array {
	a := o.b.NewArray()
	o.b.Release()
	return a
}

// vecs wraps the arguments; the caller must releaseVecs the result.
func vecs(args []compute.Datum) ([]*vec, error) {
	out := make([]*vec, 0, len(args))
	for _, a := range args {
		v, err := newVec(a)
		if err != nil {
			releaseVecs(out)
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func releaseVecs(vs []*vec) {
	for _, v := range vs {
		if v.arr != nil {
			v.arr.Release()
		}
	}
}

// anyNull reports whether any argument is NULL at row i.
func anyNull(vs []*vec, i int) bool {
	for _, v := range vs {
		if v.isNull(i) {
			return true
		}
	}
	return false
}

// rowwise runs fn for every row where no argument is NULL; NULL in gives NULL out.
func rowwise(c *Ctx, ret arrow.DataType, args []compute.Datum, n int, fn func(o *out, vs []*vec, i int)) (arrow.Array, error) {
	vs, err := vecs(args)
	if err != nil {
		return nil, err
	}
	defer releaseVecs(vs)
	o := newOut(c.Mem, ret, n)
	for i := 0; i < n; i++ {
		if anyNull(vs, i) {
			o.null()
			continue
		}
		fn(o, vs, i)
		if o.err != nil {
			o.b.Release()
			return nil, o.err
		}
	}
	return o.finish(), nil
}

// toArray turns a datum result into an array of length n, broadcasting scalars,
// and releases the datum.
func toArray(c *Ctx, d compute.Datum, n int) (arrow.Array, error) {
	defer d.Release()
	switch d := d.(type) {
	case *compute.ArrayDatum:
		return d.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(d.Value, n, c.Mem)
	}
	return nil, fmt.Errorf("functions: unexpected result %s", d)
}

// isFloat is true when the datum's type is DOUBLE.
func isFloat(d compute.Datum) bool {
	return d.(compute.ArrayLikeDatum).Type().ID() == arrow.FLOAT64
}

func typeID(d compute.Datum) arrow.Type { return d.(compute.ArrayLikeDatum).Type().ID() }

// asInt64 reinterprets a temporal datum as int64 (zero-copy for arrays) so that
// the int64 kernels of arrow compute apply to it.
func asInt64(d compute.Datum) compute.Datum {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		src := d.Value
		nd := array.NewData(arrow.PrimitiveTypes.Int64, src.Len(), src.Buffers(), nil, src.NullN(), src.Offset())
		return &compute.ArrayDatum{Value: nd}
	case *compute.ScalarDatum:
		if !d.Value.IsValid() {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64))
		}
		switch s := d.Value.(type) {
		case *scalar.Timestamp:
			return compute.NewDatum(scalar.NewInt64Scalar(int64(s.Value)))
		case *scalar.Duration:
			return compute.NewDatum(scalar.NewInt64Scalar(int64(s.Value)))
		}
	}
	return d
}

// retype gives an int64 array result the temporal type t (zero-copy).
func retype(a arrow.Array, t arrow.DataType) arrow.Array {
	if arrow.TypeEqual(a.DataType(), t) {
		return a
	}
	src := a.Data()
	nd := array.NewData(t, src.Len(), src.Buffers(), nil, src.NullN(), src.Offset())
	a.Release()
	r := array.MakeFromData(nd)
	nd.Release()
	return r
}

var nan = math.NaN()
