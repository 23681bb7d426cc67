package dataflow

import (
	"context"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/compute/exec"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// takeColumn gathers arr's rows idx into a new array. The common flat
// layouts are gathered directly: the generic take kernel's dispatch and
// growing builders cost more than the copy itself at batch sizes. Anything
// else (nested, dictionary, ...) goes through compute.TakeArray.
func takeColumn(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	data := arr.Data()
	n := len(idx)
	switch dt := arr.DataType().(type) {
	case *arrow.StringType, *arrow.BinaryType:
		if len(data.Children()) == 0 {
			return takeVarBinary(mem, arr, idx), nil
		}
	case *arrow.BooleanType:
	case arrow.FixedWidthDataType:
		if w := dt.BitWidth(); w%8 == 0 && len(data.Children()) == 0 && len(data.Buffers()) == 2 {
			w /= 8
			values := memory.NewResizableBuffer(mem)
			values.Resize(n * w)
			dst := values.Bytes()
			src := data.Buffers()[1].Bytes()[data.Offset()*w:]
			switch w {
			case 8:
				d, s := arrow.Uint64Traits.CastFromBytes(dst), arrow.Uint64Traits.CastFromBytes(src)
				for i, r := range idx {
					d[i] = s[r]
				}
			case 4:
				d, s := arrow.Uint32Traits.CastFromBytes(dst), arrow.Uint32Traits.CastFromBytes(src)
				for i, r := range idx {
					d[i] = s[r]
				}
			default:
				for i, r := range idx {
					copy(dst[i*w:i*w+w], src[int(r)*w:int(r)*w+w])
				}
			}
			nulls, nullN := takeValidity(mem, arr, idx)
			out := array.NewData(arr.DataType(), n, []*memory.Buffer{nulls, values}, nil, nullN, 0)
			values.Release()
			if nulls != nil {
				nulls.Release()
			}
			defer out.Release()
			return array.MakeFromData(out), nil
		}
	}
	ctx := exec.WithAllocator(context.Background(), mem)
	ib := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))
	indices := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, ib}, nil, 0, 0))
	defer indices.Release()
	return compute.TakeArray(ctx, arr, indices)
}

// takeValidity gathers the validity bitmap, or returns nil when arr has no
// nulls.
func takeValidity(mem memory.Allocator, arr arrow.Array, idx []int32) (*memory.Buffer, int) {
	if arr.NullN() == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	bits := buf.Bytes()
	clear(bits)
	nulls := 0
	for i, r := range idx {
		if arr.IsValid(int(r)) {
			bitutil.SetBit(bits, i)
		} else {
			nulls++
		}
	}
	return buf, nulls
}

func takeVarBinary(mem memory.Allocator, arr arrow.Array, idx []int32) arrow.Array {
	data := arr.Data()
	offs := arrow.Int32Traits.CastFromBytes(data.Buffers()[1].Bytes())[data.Offset():]
	var vals []byte
	if b := data.Buffers()[2]; b != nil {
		vals = b.Bytes()
	}
	total := 0
	for _, r := range idx {
		total += int(offs[r+1] - offs[r])
	}
	ob := memory.NewResizableBuffer(mem)
	ob.Resize((len(idx) + 1) * 4)
	o := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	vb := memory.NewResizableBuffer(mem)
	vb.Resize(total)
	v := vb.Bytes()
	pos := int32(0)
	for i, r := range idx {
		o[i] = pos
		pos += int32(copy(v[pos:], vals[offs[r]:offs[r+1]]))
	}
	o[len(idx)] = pos
	nulls, nullN := takeValidity(mem, arr, idx)
	out := array.NewData(arr.DataType(), len(idx), []*memory.Buffer{nulls, ob, vb}, nil, nullN, 0)
	ob.Release()
	vb.Release()
	if nulls != nil {
		nulls.Release()
	}
	defer out.Release()
	return array.MakeFromData(out)
}
