// Package pixels is how images travel between the operators of a vision
// workflow: encoded frames (PNG, JPEG, GIF) decoded once per worker, and
// cut-out regions (a detector's boxes, cropped for a second model) as raw
// pixels rather than an image file. A crop goes from one operator to the
// next, on the same worker or over a link, and is read once: compressing it
// costs more CPU (a PNG encode and decode per crop) than its bytes cost to
// move, so it travels as the pixels the next model's resize reads.
//
// Both operators/functions (crop_image) and operators/ml (a model's image
// step) read images through this package; it imports neither.
package pixels

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // what a camera or a crop step sends
	_ "image/jpeg"
	_ "image/png"
	"io"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/image/draw"

	"github.com/tierflow/tierflow/dataflow"
)

// ErrImage: bytes that are not an image this package reads.
var ErrImage = errors.New("not an image")

// Raw pixels: the magic, then width and height (uint32, little-endian),
// then width*height RGB triples, row by row. The magic begins with a byte
// no image file format begins with here (PNG's is 0x89, JPEG's 0xFF,
// GIF's 'G'), so a raw crop is never mistaken for a file and the reverse.
const (
	rawMagic  = "\x00TFRGB1"
	rawHeader = len(rawMagic) + 8
	// MaxRawPixels bounds a raw image's size (a corrupt header must not
	// make a reader allocate gigabytes): 256 megapixels.
	MaxRawPixels = 1 << 28
)

// IsRaw reports bytes in the raw pixel form.
func IsRaw(b []byte) bool { return len(b) >= rawHeader && string(b[:len(rawMagic)]) == rawMagic }

// RawSize is the size in bytes of a w x h image in the raw form.
func RawSize(w, h int) int { return rawHeader + 3*w*h }

// AppendRaw appends region r of img to dst in the raw form. scratch is
// reused for the region's RGBA pixels when it has room; the grown one is
// returned. Translucent pixels are stored premultiplied over black, as a
// model's tensor reads them.
func AppendRaw(dst []byte, img image.Image, r image.Rectangle, scratch *image.RGBA) ([]byte, *image.RGBA) {
	r = r.Intersect(img.Bounds())
	w, h := r.Dx(), r.Dy()
	var src *image.RGBA
	if m, ok := img.(*image.RGBA); ok {
		src = m.SubImage(r).(*image.RGBA)
	} else {
		if scratch == nil || scratch.Rect.Dx() < w || scratch.Rect.Dy() < h {
			scratch = image.NewRGBA(image.Rect(0, 0, w, h))
		}
		src = scratch.SubImage(image.Rect(0, 0, w, h)).(*image.RGBA)
		draw.Draw(src, src.Rect, img, r.Min, draw.Src)
	}
	dst = append(dst, rawMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(w))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h))
	o := len(dst)
	dst = append(dst, make([]byte, 3*w*h)...)
	px := dst[o:]
	for y := range h {
		row := src.Pix[y*src.Stride : y*src.Stride+4*w]
		out := px[3*w*y : 3*w*(y+1)]
		for x := range w {
			out[3*x], out[3*x+1], out[3*x+2] = row[4*x], row[4*x+1], row[4*x+2]
		}
	}
	return dst, scratch
}

// decodeRaw reads the raw form into an RGBA image (the form a resize reads
// fastest).
func decodeRaw(b []byte) (*image.RGBA, error) {
	w := binary.LittleEndian.Uint32(b[len(rawMagic):])
	h := binary.LittleEndian.Uint32(b[len(rawMagic)+4:])
	if w == 0 || h == 0 || uint64(w)*uint64(h) > MaxRawPixels {
		return nil, fmt.Errorf("%w: raw pixels of %dx%d", ErrImage, w, h)
	}
	if want := RawSize(int(w), int(h)); len(b) != want {
		return nil, fmt.Errorf("%w: raw pixels of %dx%d in %d bytes, want %d", ErrImage, w, h, len(b), want)
	}
	img := image.NewRGBA(image.Rect(0, 0, int(w), int(h)))
	px := b[rawHeader:]
	for i, n := 0, int(w)*int(h); i < n; i++ {
		img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = px[3*i], px[3*i+1], px[3*i+2], 0xff
	}
	return img, nil
}

// Decode reads an image in the raw form or an encoded file (PNG, JPEG,
// GIF), within no query's budget (DecodeWithin).
func Decode(b []byte) (image.Image, error) {
	img, release, err := DecodeWithin(b, nil)
	release()
	return img, err
}

// DecodeWithin is Decode for a query whose budget mem charges (a
// dataflow.Charger; any other mem charges nothing). An encoded image states
// its size in its header, and a decoder allocates its pixels from that
// before it reads them: a 100 KB PNG of zeros states 20000x20000 (1.6 GB
// decoded). So the header is read first: an image past MaxRawPixels is
// not an image this package reads, and the pixels of one within it are
// charged to the query before they are decoded (refused, the error wraps
// dataflow.ErrMemory). release gives them back once the caller is done with
// the image; it is never nil.
func DecodeWithin(b []byte, mem memory.Allocator) (_ image.Image, release func(), _ error) {
	release = func() {}
	if IsRaw(b) {
		img, err := decodeRaw(b) // its bytes are its pixels: nothing stated, nothing to bound
		return img, release, err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, release, fmt.Errorf("%w: %d bytes: %w", ErrImage, len(b), err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || uint64(cfg.Width)*uint64(cfg.Height) > MaxRawPixels {
		return nil, release, fmt.Errorf("%w: %d bytes state %dx%d pixels, more than %d", ErrImage, len(b), cfg.Width, cfg.Height, MaxRawPixels)
	}
	if ch, ok := mem.(dataflow.Charger); ok {
		n := int64(cfg.Width) * int64(cfg.Height) * bytesPerPixel(cfg.ColorModel)
		if err := ch.Charge(n); err != nil {
			return nil, release, fmt.Errorf("an image of %dx%d pixels: %w", cfg.Width, cfg.Height, err)
		}
		release = func() { ch.Uncharge(n) }
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		release()
		return nil, func() {}, fmt.Errorf("%w: %d bytes: %w", ErrImage, len(b), err)
	}
	return img, release, nil
}

// bytesPerPixel is what Go's decoders hold a pixel in, by the color model
// a header states (a JPEG's YCbCr at most 3, 4:4:4); 8 for one not known.
func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel:
		return 4
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// The raw form is an image format like the others to image.Decode and
// image.DecodeConfig (a BLOB's description in EXPLAIN and the REPL, any
// reader of a crop).
func init() {
	image.RegisterFormat("raw-rgb", rawMagic, func(r io.Reader) (image.Image, error) {
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		if !IsRaw(b) {
			return nil, fmt.Errorf("%w: %d bytes of raw pixels, short of the header", ErrImage, len(b))
		}
		return decodeRaw(b)
	}, func(r io.Reader) (image.Config, error) {
		var h [rawHeader]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return image.Config{}, err
		}
		w := binary.LittleEndian.Uint32(h[len(rawMagic):])
		ht := binary.LittleEndian.Uint32(h[len(rawMagic)+4:])
		if uint64(w)*uint64(ht) > MaxRawPixels {
			return image.Config{}, fmt.Errorf("%w: raw pixels of %dx%d", ErrImage, w, ht)
		}
		return image.Config{ColorModel: color.RGBAModel, Width: int(w), Height: int(ht)}, nil
	})
}
