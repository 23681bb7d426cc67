package ml

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// EncodingKey marks a tensor column sent encoded (planner/catalog's key of
// the same name): "uint8", a value in [0, 1] as one byte, which the model
// call decodes (EncodeUint8 / DecodeUint8).
const EncodingKey = "tierflow.encoding"

// Adapt is the source side of Jellyfish's data adaptation (planner/logical
// Adapt): it area-resizes the square images of one tensor column to the
// side the model call's variant takes (ResizeArea, what the variant was
// trained on) and, with uint8, packs each value in a byte, so that what
// crosses the link is the size the model takes. Other columns pass as
// they are; a null image stays null.
type Adapt struct {
	dataflow.Base
	col, from, to int
	uint8         bool
	in, out       *arrow.Schema
	shape         []int64 // the adapted per-row shape
	scratch       []float32
	// sides, when set (WithSides), are the sides a batch may go at, to
	// first; each batch's is chosen from the link (adapt_sides.go).
	sides *sideChooser
	// rows counts the rows sent at to without sides (Counters).
	rows atomic.Int64
	// drops counts the batches dropped before the link because they could
	// no longer make their deadline (sides only; the query's counter).
	drops *dataflow.Drops
}

// CountDropsIn counts the rows dropped before the link (a batch that can
// no longer reach the model in time) in the query's d, as DropDeadline.
func (a *Adapt) CountDropsIn(d *dataflow.Drops) { a.drops = d }

// NewAdapt adapts column col of schema in (float32 tensors whose last two
// dimensions are from x from) to to x to, encoded as "float32" or "uint8".
func NewAdapt(in *arrow.Schema, col, from, to int, encoding string) (*Adapt, error) {
	if col < 0 || col >= in.NumFields() {
		return nil, fmt.Errorf("%w: adapt: no column %d in %s", ErrSchema, col, fieldNames(in))
	}
	shape, err := FieldShape(in.Field(col))
	if err != nil {
		return nil, fmt.Errorf("adapt: %w", err)
	}
	n := len(shape)
	if n < 2 || shape[n-2] != int64(from) || shape[n-1] != int64(from) || to <= 0 || to > from {
		return nil, fmt.Errorf("%w: adapt: column %q of shape [%s] is not %dx%d images to resize to %dx%d", ErrSchema, in.Field(col).Name, FormatDims(shape), from, from, to, to)
	}
	if encoding != "float32" && encoding != "uint8" {
		return nil, fmt.Errorf("%w: adapt: unknown encoding %q (want float32 or uint8)", ErrSchema, encoding)
	}
	out := append([]int64(nil), shape...)
	out[n-2], out[n-1] = int64(to), int64(to)
	a := &Adapt{col: col, from: from, to: to, uint8: encoding == "uint8", in: in, shape: out}
	fs := append([]arrow.Field(nil), in.Fields()...)
	fs[col] = a.field(in.Field(col).Name)
	md := in.Metadata()
	a.out = arrow.NewSchema(fs, &md)
	return a, nil
}

// Schema is the adapted batches' schema.
func (a *Adapt) Schema() *arrow.Schema { return a.out }

func (a *Adapt) field(name string) arrow.Field {
	f := TensorField(name, a.shape)
	if a.uint8 {
		f.Type = arrow.FixedSizeListOf(int32(product(a.shape)), arrow.PrimitiveTypes.Uint8)
		f.Metadata = arrow.NewMetadata([]string{ShapeKey, EncodingKey}, []string{FormatDims(a.shape), "uint8"})
	}
	return f
}

func (a *Adapt) OnBatch(ctx *dataflow.Context, _ int, b dataflow.Batch, cap *dataflow.Capability) error {
	rec := b.Record
	defer rec.Release()
	var col arrow.Array
	var err error
	var chosen time.Time
	if a.sides != nil {
		chosen = time.Now()
		side := a.sides.choose(ctx, rec.NumRows())
		if side == 0 {
			a.drops.AddAt(dataflow.DropDeadline, epochOf(cap), rec.NumRows())
			a.sides.dropped.Add(rec.NumRows())
			return nil
		}
		col, err = a.adaptVariable(ctx.Allocator(), rec.Column(a.col), side)
	} else {
		col, err = a.adapt(ctx.Allocator(), rec.Column(a.col))
	}
	if err != nil {
		return err
	}
	defer col.Release()
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	cols[a.col] = col
	if a.sides != nil {
		// Up to the hand-off, not through it: Emit waits for the link
		// when it is busy, which the bytes ahead (UnackedBytes) price.
		a.sides.lagged(time.Since(chosen))
	}
	return ctx.Emit(0, cap, array.NewRecord(a.out, cols, rec.NumRows()))
}

// adapt resizes (and encodes) every row of a tensor column.
func (a *Adapt) adapt(mem memory.Allocator, c arrow.Array) (arrow.Array, error) {
	vals, size, err := TensorValues(c)
	if err != nil {
		return nil, err
	}
	rows := c.Len()
	px := a.from * a.from
	planes := size / px // channels: each is resized on its own
	if planes*px != size {
		return nil, fmt.Errorf("%w: adapt: rows of %d values are not %dx%d planes", ErrSchema, size, a.from, a.from)
	}
	outSize := planes * a.to * a.to
	nulls, nNull := nullsOf(mem, c)
	if nulls != nil {
		defer nulls.Release()
	}
	buf, elem, f32, u8 := pixelBuffer(mem, rows*outSize, a.uint8)
	defer buf.Release()
	for r := 0; r < rows; r++ {
		for p := 0; p < planes; p++ {
			src := vals[r*size+p*px : r*size+(p+1)*px]
			at := r*outSize + p*a.to*a.to
			if a.uint8 {
				a.scratch = ResizeArea(a.scratch, src, a.from, a.to)
				EncodeUint8(u8[at:at], a.scratch)
			} else {
				ResizeArea(f32[at:at+a.to*a.to], src, a.from, a.to)
			}
		}
	}
	a.rows.Add(int64(rows - nNull))
	child := array.NewData(elem, rows*outSize, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer child.Release()
	data := array.NewData(a.field("").Type, rows, []*memory.Buffer{nulls}, []arrow.ArrayData{child}, nNull, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// nullsOf is c's validity as a buffer of its own and its null count (nil
// and 0 when no row is null); the caller releases it.
func nullsOf(mem memory.Allocator, c arrow.Array) (*memory.Buffer, int) {
	n := c.NullN()
	if n == 0 {
		return nil, 0
	}
	failed := make([]bool, c.Len())
	for i := range failed {
		failed[i] = c.IsNull(i)
	}
	return validity(mem, c.Len(), failed, n), n
}

// pixelBuffer holds n adapted values as float32, or a byte each with
// uint8 (u8 set, f32 nil, and the other way round); the caller releases
// buf.
func pixelBuffer(mem memory.Allocator, n int, uint8 bool) (buf *memory.Buffer, elem arrow.DataType, f32 []float32, u8 []byte) {
	buf = memory.NewResizableBuffer(mem)
	if uint8 {
		buf.Resize(n)
		return buf, arrow.PrimitiveTypes.Uint8, nil, buf.Bytes()[:n]
	}
	buf.Resize(n * arrow.Float32SizeBytes)
	return buf, arrow.PrimitiveTypes.Float32, arrow.Float32Traits.CastFromBytes(buf.Bytes())[:n], nil
}

// EncodedShape is the per-row shape of a uint8-encoded tensor field
// (EncodingKey "uint8", fixed_size_list<uint8>), and false for any other.
func EncodedShape(f arrow.Field) ([]int64, bool) {
	lt, ok := f.Type.(*arrow.FixedSizeListType)
	if enc, _ := f.Metadata.GetValue(EncodingKey); !ok || enc != "uint8" || lt.Elem().ID() != arrow.UINT8 {
		return nil, false
	}
	v, ok := f.Metadata.GetValue(ShapeKey)
	if !ok {
		return []int64{int64(lt.Len())}, true
	}
	var shape []int64
	for _, p := range strings.Split(v, ",") {
		d, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || d <= 0 {
			return nil, false
		}
		shape = append(shape, d)
	}
	if product(shape) != int64(lt.Len()) {
		return nil, false
	}
	return shape, true
}

// decodedValues decodes a uint8-encoded tensor column's rows to float32
// (a copy: the model reads float32).
func decodedValues(col arrow.Array) ([]float32, error) {
	fsl, ok := col.(*array.FixedSizeList)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a tensor column", ErrSchema, col.DataType())
	}
	size := int(fsl.DataType().(*arrow.FixedSizeListType).Len())
	child, ok := fsl.ListValues().(*array.Uint8)
	if !ok {
		return nil, fmt.Errorf("%w: encoded tensor elements are %s, want uint8", ErrSchema, fsl.ListValues().DataType())
	}
	raw := child.Uint8Values()
	start, end := fsl.Offset()*size, (fsl.Offset()+fsl.Len())*size
	if end > len(raw) {
		return nil, fmt.Errorf("%w: encoded tensor column has %d values for %d rows of %d", ErrSchema, len(raw), fsl.Len(), size)
	}
	return DecodeUint8(make([]float32, 0, end-start), raw[start:end]), nil
}
