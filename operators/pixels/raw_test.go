package pixels

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"testing"
)

func testFrame(t *testing.T, w, h int) *image.RGBA {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{R: uint8(3*x + y), G: uint8(x * y), B: uint8(200 - x), A: 255})
		}
	}
	return m
}

// A region of any image reads back as exactly the pixels an RGBA draw of
// that region gives: what a model's resize read from the PNG crop before.
func TestRawRoundTrip(t *testing.T) {
	frame := testFrame(t, 40, 30)
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, frame, nil); err != nil {
		t.Fatal(err)
	}
	jimg, err := Decode(jb.Bytes()) // YCbCr: the copy path
	if err != nil {
		t.Fatal(err)
	}
	r := image.Rect(5, 7, 33, 19)
	for name, src := range map[string]image.Image{"rgba": frame, "jpeg": jimg, "sub-image": frame.SubImage(image.Rect(2, 2, 38, 28))} {
		want := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
		draw.Draw(want, want.Rect, src, r.Min, draw.Src)
		b, _ := AppendRaw([]byte("keep"), src, r, nil)
		if string(b[:4]) != "keep" || len(b) != 4+RawSize(r.Dx(), r.Dy()) {
			t.Fatalf("%s: %d bytes, want 4+%d", name, len(b), RawSize(r.Dx(), r.Dy()))
		}
		got, err := Decode(b[4:])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Bounds() != want.Rect || !bytes.Equal(got.(*image.RGBA).Pix, want.Pix) {
			t.Errorf("%s: the raw crop reads back other pixels", name)
		}
		// image.Decode knows the form too.
		cfg, format, err := image.DecodeConfig(bytes.NewReader(b[4:]))
		if err != nil || format != "raw-rgb" || cfg.Width != r.Dx() || cfg.Height != r.Dy() {
			t.Errorf("%s: DecodeConfig = %v %q %v", name, cfg, format, err)
		}
	}
}

func TestRawRejectsBadBytes(t *testing.T) {
	good, _ := AppendRaw(nil, testFrame(t, 4, 3), image.Rect(0, 0, 4, 3), nil)
	huge := bytes.Clone(good[:rawHeader])
	huge[len(rawMagic)+3] = 0xff // width 2^31
	huge[len(rawMagic)+7] = 0xff
	var pb bytes.Buffer
	if err := png.Encode(&pb, testFrame(t, 4, 3)); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"short": good[:len(good)-1], "long": append(bytes.Clone(good), 0), "huge": huge,
		"zero width": append([]byte(rawMagic), make([]byte, 8)...), "text": []byte("not an image"),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrImage) {
			t.Errorf("%s: err = %v, want ErrImage", name, err)
		}
	}
	if img, err := Decode(pb.Bytes()); err != nil || img.Bounds().Dx() != 4 {
		t.Errorf("PNG: %v", err)
	}
}
