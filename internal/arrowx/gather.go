package arrowx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/compute/exec"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Gather returns the rows idx of a, in order; a negative index gives NULL. It
// is the selection kernel behind filters, joins, sorts and the exchange's
// partitioning: tight loops over the raw buffers for fixed-width, boolean,
// string and binary columns and for tensors (fixed-size lists of fixed-width
// values without nulls), and dictionaries (indices gathered, dictionary
// shared). arrow/go v17's take and filter kernels grow their output a run at a
// time, which is quadratic on scattered selections; other types still go to
// them.
func Gather(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int32) (arrow.Array, error) {
	return gather(ctx, mem, a, idx, HasNegative(idx))
}

// HasNegative reports whether idx selects a NULL row anywhere.
func HasNegative(idx []int32) bool {
	for _, i := range idx {
		if i < 0 {
			return true
		}
	}
	return false
}

// GatherRecord gathers every column of rec (see Gather).
func GatherRecord(ctx context.Context, mem memory.Allocator, rec arrow.Record, idx []int32) (arrow.Record, error) {
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	neg := HasNegative(idx)
	for _, c := range rec.Columns() {
		g, err := gather(ctx, mem, c, idx, neg)
		if err != nil {
			return nil, err
		}
		cols = append(cols, g)
	}
	return array.NewRecord(rec.Schema(), cols, int64(len(idx))), nil
}

func gather(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int32, negative bool) (arrow.Array, error) {
	d := a.Data()
	n := len(idx)
	validity, nulls := gatherValidity(mem, a, idx, negative)
	build := func(bufs []*memory.Buffer, children []arrow.ArrayData) arrow.Array {
		nd := array.NewData(a.DataType(), n, append([]*memory.Buffer{validity}, bufs...), children, nulls, 0)
		out := array.MakeFromData(nd)
		nd.Release()
		for _, b := range bufs {
			b.Release()
		}
		for _, c := range children {
			c.Release()
		}
		if validity != nil {
			validity.Release()
		}
		return out
	}
	switch dt := a.DataType().(type) {
	case *arrow.DictionaryType:
		// The indices, gathered; the dictionary, shared.
		iw, ok := dt.IndexType.(arrow.FixedWidthDataType)
		if !ok || d.Dictionary() == nil || len(d.Buffers()) != 2 {
			break
		}
		w := iw.BitWidth() / 8
		values := gatherFixed(mem, d.Buffers()[1].Bytes()[d.Offset()*w:], w, idx)
		nd := array.NewDataWithDictionary(dt, n, []*memory.Buffer{validity, values}, nulls, 0, d.Dictionary().(*array.Data))
		values.Release()
		if validity != nil {
			validity.Release()
		}
		defer nd.Release()
		return array.MakeFromData(nd), nil
	case *arrow.BooleanType:
		src := d.Buffers()[1].Bytes()
		out := memory.NewResizableBuffer(mem)
		out.Resize(int(bitutil.BytesForBits(int64(n))))
		ob := out.Bytes()
		clear(ob)
		off := d.Offset()
		for k, i := range idx {
			if i >= 0 && bitutil.BitIsSet(src, off+int(i)) {
				bitutil.SetBit(ob, k)
			}
		}
		return build([]*memory.Buffer{out}, nil), nil
	case arrow.FixedWidthDataType:
		if dt.ID() == arrow.DICTIONARY || len(d.Children()) > 0 || len(d.Buffers()) != 2 || dt.BitWidth()%8 != 0 {
			break // a dictionary's indices alone would lose the dictionary
		}
		w := dt.BitWidth() / 8
		return build([]*memory.Buffer{gatherFixed(mem, d.Buffers()[1].Bytes()[d.Offset()*w:], w, idx)}, nil), nil
	case *arrow.StringType, *arrow.BinaryType:
		bufs, err := gatherVarBinary(mem, d, idx, math.MaxInt32)
		if err != nil {
			if validity != nil {
				validity.Release()
			}
			return nil, err
		}
		return build(bufs, nil), nil
	case *arrow.FixedSizeListType:
		// A tensor: each row is size values of the child, gathered as one
		// fixed-width block of size x width bytes.
		ch := d.Children()
		ew, ok := dt.Elem().(arrow.FixedWidthDataType)
		if !ok || len(ch) != 1 || ch[0].NullN() != 0 || len(ch[0].Buffers()) != 2 || ew.BitWidth()%8 != 0 || ew.ID() == arrow.BOOL {
			break
		}
		size, w := int(dt.Len()), ew.BitWidth()/8
		block := size * w
		src := ch[0].Buffers()[1].Bytes()[(ch[0].Offset()+d.Offset()*size)*w:]
		values := gatherFixed(mem, src, block, idx)
		child := array.NewData(dt.Elem(), n*size, []*memory.Buffer{nil, values}, nil, 0, 0)
		values.Release()
		return build(nil, []arrow.ArrayData{child}), nil
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
	return compute.TakeArray(exec.WithAllocator(ctx, mem), a, ia)
}

// gatherValidity is the validity bitmap of the gathered rows, or nil when
// every one is valid.
func gatherValidity(mem memory.Allocator, a arrow.Array, idx []int32, negative bool) (*memory.Buffer, int) {
	if a.NullN() == 0 && !negative {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	bits := buf.Bytes()
	clear(bits)
	nulls := 0
	for k, i := range idx {
		if i >= 0 && a.IsValid(int(i)) {
			bitutil.SetBit(bits, k)
		} else {
			nulls++
		}
	}
	return buf, nulls
}

// gatherFixed gathers w-byte values (zero for a negative index).
func gatherFixed(mem memory.Allocator, src []byte, w int, idx []int32) *memory.Buffer {
	n := len(idx)
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
	default:
		for k, i := range idx {
			if i >= 0 {
				copy(dst[k*w:k*w+w], src[int(i)*w:int(i)*w+w])
			} else {
				clear(dst[k*w : k*w+w])
			}
		}
	}
	return out
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

// ErrTooLarge: a gathered string or binary column would hold more bytes
// than its 32-bit offsets address (2 GiB). Operators gather in pieces small
// enough (a join's maxJoinOut rows), so this is a guard, not a limit users
// meet: the sum is taken in 64 bits and checked, never wrapped.
var ErrTooLarge = errors.New("column too large for 32-bit offsets")

// gatherVarBinary gathers a string or binary column: offsets and data. The
// data's size is summed in 64 bits; above limit it is ErrTooLarge.
func gatherVarBinary(mem memory.Allocator, d arrow.ArrayData, idx []int32, limit int64) ([]*memory.Buffer, error) {
	offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
	var data []byte
	if b := d.Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	total := int64(0)
	for _, i := range idx {
		if i >= 0 {
			total += int64(offs[i+1] - offs[i])
		}
	}
	if total > limit {
		return nil, fmt.Errorf("%w: %d rows of %d bytes", ErrTooLarge, len(idx), total)
	}
	ob := memory.NewResizableBuffer(mem)
	ob.Resize((len(idx) + 1) * 4)
	oo := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	db := memory.NewResizableBuffer(mem)
	db.Resize(int(total))
	dd := db.Bytes()
	pos := int32(0)
	for k, i := range idx {
		oo[k] = pos
		if i >= 0 {
			pos += int32(copy(dd[pos:], data[offs[i]:offs[i+1]]))
		}
	}
	oo[len(idx)] = pos
	return []*memory.Buffer{ob, db}, nil
}
