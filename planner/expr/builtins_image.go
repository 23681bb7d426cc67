package expr

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	_ "image/gif" // the formats a BLOB image may be in (formatBlob, the examples)
	_ "image/jpeg"
	"image/png"
)

// imageFunctions are the functions over encoded images (BLOBs of PNG,
// JPEG or GIF bytes): what sits between two vision models in a query, on
// the worker that holds the frame.
func imageFunctions() []*Function {
	img := exampleImage(4, 3)
	return []*Function{
		{Name: "crop_image", Kind: Scalar,
			Doc: "The pixels [x0, x1) x [y0, y1) of an image (PNG, JPEG or GIF bytes, or another crop) as raw RGB pixels (an 8-byte tag, width and height as little-endian uint32, then 3 bytes a pixel, row by row): a detector's box cut from its frame for the next model, which reads it without a decode. " +
				"Coordinates are rounded to whole pixels and the box is clamped to the image; NULL when nothing of it is left, when the bytes are not an image, or when an argument is NULL.",
			Signatures: []Signature{sig(ret(Blob), "BLOB", p("image", BlobClass), p("x0", num), p("y0", num), p("x1", num), p("y1", num))},
			Examples: []Example{
				ex(exampleCrop(img, image.Rect(1, 1, 3, 3)), img, int64(1), int64(1), int64(3), int64(3)),
				ex(exampleCrop(img, image.Rect(0, 2, 2, 3)), img, int64(-5), 2.0, 2.4, int64(10)),
				ex(nil, img, int64(3), int64(1), int64(3), int64(2)),
				ex(nil, []byte("not an image"), int64(0), int64(0), int64(1), int64(1)),
				ex(nil, nil, int64(0), int64(0), int64(1), int64(1)),
			}},
	}
}

// exampleImage is a w x h PNG whose every pixel differs, so that a crop's
// bytes say which pixels it took.
func exampleImage(w, h int) []byte {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{R: uint8(40 + 50*x), G: uint8(30 + 70*y), B: uint8(10 * (x + y)), A: 255})
		}
	}
	return encodePNG(m)
}

// exampleCrop is the raw pixels r of the image b, cut pixel by pixel: what
// crop_image's examples must give (operators/functions runs them against
// its implementation, operators/pixels).
func exampleCrop(b []byte, r image.Rectangle) []byte {
	src, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	out := []byte("\x00TFRGB1")
	out = binary.LittleEndian.AppendUint32(out, uint32(r.Dx()))
	out = binary.LittleEndian.AppendUint32(out, uint32(r.Dy()))
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(src.At(x, y)).(color.RGBA)
			out = append(out, c.R, c.G, c.B)
		}
	}
	return out
}

// encodePNG is the example frame's encoding.
func encodePNG(m image.Image) []byte {
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, m); err != nil {
		panic(err) // an in-memory image always encodes
	}
	return b.Bytes()
}
