package eval

import (
	"context"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Gather returns the rows idx of a, in order; a negative index gives NULL. It
// is the selection kernel behind filter, join and sort: tight loops over the raw
// buffers for fixed-width, boolean and string columns. (arrow/go v17's filter
// and take kernels grow their output a run at a time, which is quadratic on
// scattered selections; other types still fall back to them.)
func Gather(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int32) (arrow.Array, error) {
	return gather(ctx, mem, a, idx, hasNegative(idx))
}

func hasNegative(idx []int32) bool {
	for _, i := range idx {
		if i < 0 {
			return true
		}
	}
	return false
}

func gather(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int32, negative bool) (arrow.Array, error) {
	d := a.Data()
	n := len(idx)
	hasNull := a.NullN() > 0 || negative
	var validity *memory.Buffer
	nulls := 0
	if hasNull {
		validity = memory.NewResizableBuffer(mem)
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		vb := validity.Bytes()
		for k := range vb {
			vb[k] = 0
		}
		for k, i := range idx {
			if i >= 0 && a.IsValid(int(i)) {
				bitutil.SetBit(vb, k)
			} else {
				nulls++
			}
		}
	}
	build := func(bufs ...*memory.Buffer) arrow.Array {
		nd := array.NewData(a.DataType(), n, append([]*memory.Buffer{validity}, bufs...), nil, nulls, 0)
		out := array.MakeFromData(nd)
		nd.Release()
		for _, b := range bufs {
			b.Release()
		}
		if validity != nil {
			validity.Release()
		}
		return out
	}
	switch dt := a.DataType().(type) {
	case arrow.FixedWidthDataType:
		if dt.ID() == arrow.BOOL {
			src := d.Buffers()[1].Bytes()
			out := memory.NewResizableBuffer(mem)
			out.Resize(int(bitutil.BytesForBits(int64(n))))
			ob := out.Bytes()
			for k := range ob {
				ob[k] = 0
			}
			off := d.Offset()
			for k, i := range idx {
				if i >= 0 && bitutil.BitIsSet(src, off+int(i)) {
					bitutil.SetBit(ob, k)
				}
			}
			return build(out), nil
		}
		w := dt.BitWidth() / 8
		if dt.BitWidth()%8 != 0 || (w != 1 && w != 2 && w != 4 && w != 8) {
			break
		}
		src := d.Buffers()[1].Bytes()[d.Offset()*w:]
		out := memory.NewResizableBuffer(mem)
		out.Resize(n * w)
		dst := out.Bytes()
		switch w {
		case 8:
			gatherT(unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(dst))), n), unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/8), idx)
		case 4:
			gatherT(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(dst))), n), unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/4), idx)
		case 2:
			gatherT(unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), n), unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/2), idx)
		case 1:
			gatherT(dst, src, idx)
		}
		return build(out), nil
	case *arrow.StringType, *arrow.BinaryType:
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
		var data []byte
		if b := d.Buffers()[2]; b != nil {
			data = b.Bytes()
		}
		total := 0
		for _, i := range idx {
			if i >= 0 {
				total += int(offs[i+1] - offs[i])
			}
		}
		ob := memory.NewResizableBuffer(mem)
		ob.Resize((n + 1) * 4)
		oo := arrow.Int32Traits.CastFromBytes(ob.Bytes())
		db := memory.NewResizableBuffer(mem)
		db.Resize(total)
		dd := db.Bytes()
		pos := int32(0)
		for k, i := range idx {
			oo[k] = pos
			if i >= 0 {
				pos += int32(copy(dd[pos:], data[offs[i]:offs[i+1]]))
			}
		}
		oo[n] = pos
		return build(ob, db), nil
	}
	if validity != nil {
		validity.Release()
	}
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	for _, i := range idx {
		if i < 0 {
			ib.AppendNull()
		} else {
			ib.Append(i)
		}
	}
	ia := ib.NewArray()
	defer ia.Release()
	return compute.TakeArray(ctx, a, ia)
}

func gatherT[T uint8 | uint16 | uint32 | uint64](dst, src []T, idx []int32) {
	for k, i := range idx {
		if i >= 0 {
			dst[k] = src[i]
		} else {
			dst[k] = 0
		}
	}
}

// GatherRecord gathers every column of rec (see Gather).
func GatherRecord(ctx context.Context, mem memory.Allocator, rec arrow.Record, idx []int32) (arrow.Record, error) {
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	neg := hasNegative(idx)
	for _, c := range rec.Columns() {
		g, err := gather(ctx, mem, c, idx, neg)
		if err != nil {
			return nil, err
		}
		cols = append(cols, g)
	}
	return array.NewRecord(rec.Schema(), cols, int64(len(idx))), nil
}

// SelectionIndices lists the rows where a boolean mask is TRUE (NULL counts as
// false), reusing buf.
func SelectionIndices(mask *array.Boolean, buf []int32) []int32 {
	buf = buf[:0]
	d := mask.Data()
	vals := d.Buffers()[1].Bytes()
	var valid []byte
	if mask.NullN() > 0 {
		valid = d.Buffers()[0].Bytes()
	}
	off, n := d.Offset(), mask.Len()
	if off%8 != 0 {
		for i := 0; i < n; i++ {
			if mask.IsValid(i) && mask.Value(i) {
				buf = append(buf, int32(i))
			}
		}
		return buf
	}
	vals = vals[off/8:]
	if valid != nil {
		valid = valid[off/8:]
	}
	for byteIdx := 0; byteIdx*8 < n; byteIdx++ {
		b := vals[byteIdx]
		if valid != nil {
			b &= valid[byteIdx]
		}
		for b != 0 {
			i := byteIdx*8 + bits.TrailingZeros8(b)
			if i >= n {
				break
			}
			buf = append(buf, int32(i))
			b &= b - 1
		}
	}
	return buf
}
