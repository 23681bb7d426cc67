package eval

import (
	"context"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/arrowx"
)

// Gather returns the rows idx of a, in order; a negative index gives NULL (see
// arrowx.Gather: the kernel is shared with the dataflow's exchange).
func Gather(ctx context.Context, mem memory.Allocator, a arrow.Array, idx []int32) (arrow.Array, error) {
	return arrowx.Gather(ctx, mem, a, idx)
}

// GatherRecord gathers every column of rec (see Gather).
func GatherRecord(ctx context.Context, mem memory.Allocator, rec arrow.Record, idx []int32) (arrow.Record, error) {
	return arrowx.GatherRecord(ctx, mem, rec, idx)
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
