// Package pixelstest makes the images that tests of image readers share.
package pixelstest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"testing"
)

// StatingPNG is a PNG of one pixel's data whose header states w x h RGBA
// pixels: what a decoder sizes its image by before it reads a row.
func StatingPNG(t testing.TB, w, h uint32) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// The signature (8 bytes), then IHDR: its length, "IHDR", width,
	// height, 5 more bytes, and the CRC of the type and data.
	binary.BigEndian.PutUint32(b[16:], w)
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}
