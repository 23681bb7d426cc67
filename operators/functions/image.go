package functions

import (
	"bytes"
	"errors"
	"image"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/pixels"
)

// cropImageFunc is crop_image(image, x0, y0, x1, y1): the box's pixels of
// an image (encoded, or raw pixels), as raw pixels (package pixels: the
// next model reads them without a PNG encode and decode per crop). A row that cannot be cut (bytes that are not
// an image, a box outside it) is NULL, not a failed batch: one bad frame
// costs its own rows, and a model call counts a NULL input as a failed row.
//
// The frame's pixels are charged to the query while it is cut from
// (pixels.DecodeWithin): a frame the query's memory cannot hold fails the
// call, for its memory.
func cropImageFunc(c *Ctx, ret arrow.DataType, args []compute.Datum, n int) (arrow.Array, error) {
	cr := cropper{mem: c.Mem}
	defer cr.forget()
	return rowwise(c, ret, args, n, func(o *out, v []*vec, i int) {
		b, ok, err := cr.crop(v[0].bytes(i), v[1].number(i), v[2].number(i), v[3].number(i), v[4].number(i))
		if err != nil {
			o.err = err
			return
		}
		if !ok {
			o.null()
			return
		}
		o.bin(b)
	})
}

// cropper keeps the last decoded image: a detector's rows repeat their
// frame once per box, and decoding a frame costs far more than comparing
// its bytes with the last one's. A frame it has not seen comes from the
// worker's frame cache (pixels.Shared): the detector's image step, fused
// with this projection on the same worker, decoded it moments ago.
type cropper struct {
	mem     memory.Allocator
	src     []byte
	img     image.Image
	release func() // gives back the charge for img's pixels
	bad     bool
	// scratch is the region's RGBA pixels (a decoded JPEG is YCbCr);
	// buf the raw form, copied into the result by the caller.
	scratch *image.RGBA
	buf     []byte
}

func (c *cropper) crop(b []byte, x0, y0, x1, y1 float64) ([]byte, bool, error) {
	if c.src == nil || !bytes.Equal(b, c.src) {
		c.forget()
		img, release, err := pixels.Shared.DecodeWithin(b, c.mem)
		if errors.Is(err, dataflow.ErrMemory) {
			return nil, false, err
		}
		c.src, c.img, c.release, c.bad = bytes.Clone(b), img, release, err != nil
	}
	if c.bad {
		return nil, false, nil
	}
	bd := c.img.Bounds()
	px := func(v float64, lo, hi int) int {
		if math.IsNaN(v) {
			return lo
		}
		return max(lo, min(hi, lo+int(math.Round(math.Max(-1e9, math.Min(1e9, v))))))
	}
	r := image.Rect(px(x0, bd.Min.X, bd.Max.X), px(y0, bd.Min.Y, bd.Max.Y), px(x1, bd.Min.X, bd.Max.X), px(y1, bd.Min.Y, bd.Max.Y))
	if r.Empty() || r.Min.X >= r.Max.X || r.Min.Y >= r.Max.Y {
		return nil, false, nil
	}
	c.buf, c.scratch = pixels.AppendRaw(c.buf[:0], c.img, r, c.scratch)
	return c.buf, true, nil
}

// forget lets go of the last frame and its charge.
func (c *cropper) forget() {
	if c.release != nil {
		c.release()
	}
	c.src, c.img, c.release = nil, nil, nil
}
