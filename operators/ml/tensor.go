package ml

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// ShapeKey is the field metadata key that carries a tensor column's per-row shape,
// as comma-separated dimensions ("1,28,28"). The column's type is
// fixed_size_list<float32> whose list size is the product of the shape. A tensor
// field without the key is taken as a vector of the list size.
const ShapeKey = "tierflow.shape"

// TensorType is the Arrow type of a tensor column of the given per-row shape.
// Its elements are nullable, as in the catalog's TENSOR(FLOAT, ...): a model's
// embedding and a file's tensor column bind to the same type, so expressions
// over either compile against the binder's.
func TensorType(shape []int64) *arrow.FixedSizeListType {
	return arrow.FixedSizeListOf(int32(product(shape)), arrow.PrimitiveTypes.Float32)
}

// TensorField is a tensor column's field: type and shape metadata.
func TensorField(name string, shape []int64) arrow.Field {
	return arrow.Field{
		Name:     name,
		Type:     TensorType(shape),
		Nullable: true,
		Metadata: arrow.NewMetadata([]string{ShapeKey}, []string{FormatDims(shape)}),
	}
}

// FormatDims writes a shape as the metadata value ("1,28,28").
func FormatDims(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return strings.Join(parts, ",")
}

// FieldShape returns the per-row shape of a tensor field, checking that the field
// is fixed_size_list<float32> and that the metadata agrees with the list size.
func FieldShape(f arrow.Field) ([]int64, error) {
	lt, ok := f.Type.(*arrow.FixedSizeListType)
	if !ok || lt.Elem().ID() != arrow.FLOAT32 {
		return nil, fmt.Errorf("%w: column %q is %s, want a tensor column fixed_size_list<float32>", ErrSchema, f.Name, f.Type)
	}
	i := f.Metadata.FindKey(ShapeKey)
	if i < 0 {
		return []int64{int64(lt.Len())}, nil
	}
	v := f.Metadata.Values()[i]
	var shape []int64
	for _, p := range strings.Split(v, ",") {
		d, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: column %q: metadata %s=%q is not a list of positive sizes", ErrSchema, f.Name, ShapeKey, v)
		}
		shape = append(shape, d)
	}
	if product(shape) != int64(lt.Len()) {
		return nil, fmt.Errorf("%w: column %q: shape %s has %d values but the list size is %d", ErrSchema, f.Name, v, product(shape), lt.Len())
	}
	return shape, nil
}

// TensorValues returns the float32 values of a tensor column's rows as one slice
// over the column's own buffer (no copy): row i is values[i*size : (i+1)*size].
// Null rows are present with whatever their slots hold; callers check IsNull.
func TensorValues(col arrow.Array) ([]float32, int, error) {
	fsl, ok := col.(*array.FixedSizeList)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s is not a tensor column", ErrSchema, col.DataType())
	}
	size := int(fsl.DataType().(*arrow.FixedSizeListType).Len())
	child, ok := fsl.ListValues().(*array.Float32)
	if !ok {
		return nil, 0, fmt.Errorf("%w: tensor elements are %s, want float32", ErrSchema, fsl.ListValues().DataType())
	}
	vals := child.Float32Values()
	start, end := fsl.Offset()*size, (fsl.Offset()+fsl.Len())*size
	if end > len(vals) {
		return nil, 0, fmt.Errorf("%w: tensor column has %d values for %d rows of %d", ErrSchema, len(vals), fsl.Len(), size)
	}
	return vals[start:end], size, nil
}

// newFloat32Buffer allocates n float32s from mem and returns the buffer and a
// slice over it, so model outputs can be written straight into Arrow memory.
func newFloat32Buffer(mem memory.Allocator, n int) (*memory.Buffer, []float32) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * arrow.Float32SizeBytes)
	return buf, arrow.Float32Traits.CastFromBytes(buf.Bytes())[:n]
}

// validity builds a validity bitmap (nil when every row is valid) from failed rows.
func validity(mem memory.Allocator, n int, failed []bool, nFailed int) *memory.Buffer {
	if nFailed == 0 {
		return nil
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := buf.Bytes()
	for i := 0; i < n; i++ {
		bitutil.SetBitTo(bits, i, !failed[i])
	}
	return buf
}

// newTensorArray makes a tensor column of n rows over values (n*size float32s held
// by valuesBuf), taking ownership of valuesBuf and nulls (either may be released by
// the caller afterwards: the array retains them).
func newTensorArray(shape []int64, n int, valuesBuf, nulls *memory.Buffer, nNulls int) arrow.Array {
	size := int(product(shape))
	child := array.NewData(arrow.PrimitiveTypes.Float32, n*size, []*memory.Buffer{nil, valuesBuf}, nil, 0, 0)
	defer child.Release()
	data := array.NewData(TensorType(shape), n, []*memory.Buffer{nulls}, []arrow.ArrayData{child}, nNulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// NewTensorColumn copies rows*size values into a new tensor column allocated from
// mem (one copy of the whole block, no per-element work). Sources and tests use it
// to build input columns.
func NewTensorColumn(mem memory.Allocator, shape []int64, values []float32) (arrow.Array, error) {
	size := int(product(shape))
	if size <= 0 || len(values)%size != 0 {
		return nil, fmt.Errorf("%w: %d values do not divide into rows of shape %s", ErrSchema, len(values), FormatDims(shape))
	}
	n := len(values) / size
	buf, dst := newFloat32Buffer(mem, len(values))
	copy(dst, values)
	defer buf.Release()
	return newTensorArray(shape, n, buf, nil, 0), nil
}
