package pixels

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

func encodedFrame(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, testFrame(t, w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFramesDecodeOnce(t *testing.T) {
	f := &Frames{MaxFrames: 2, MaxBytes: 1 << 20}
	a, b, c := encodedFrame(t, 20, 10), encodedFrame(t, 21, 10), encodedFrame(t, 22, 10)
	first, err := f.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.Decode(bytes.Clone(a)) // equal bytes in another buffer
	if err != nil || again != first {
		t.Fatalf("the same frame's bytes were decoded again (%v)", err)
	}
	if h, m := f.Stats(); h != 1 || m != 1 {
		t.Fatalf("hits %d misses %d, want 1 and 1", h, m)
	}
	// Another frame of the same length is not the cached one.
	other := bytes.Clone(a)
	other[len(other)/2] ^= 0xff
	if img, err := f.Decode(other); err == nil && img == first {
		t.Fatal("a frame with other bytes came from the cache")
	}
	// Two more frames push the first out (at most two frames).
	for _, x := range [][]byte{b, c} {
		if _, err := f.Decode(x); err != nil {
			t.Fatal(err)
		}
	}
	if img, _ := f.Decode(a); img == first {
		t.Fatal("a frame past MaxFrames is still cached")
	}
	if len(f.slots) > 2 {
		t.Fatalf("%d frames cached, at most 2", len(f.slots))
	}
	// Over MaxBytes: not cached at all.
	small := &Frames{MaxFrames: 4, MaxBytes: 100}
	x, _ := small.Decode(a)
	if y, _ := small.Decode(a); x == y || len(small.slots) != 0 {
		t.Fatal("a frame larger than MaxBytes was cached")
	}
	// Raw pixels and bad bytes are not cached.
	raw, _ := AppendRaw(nil, testFrame(t, 3, 3), image.Rect(0, 0, 3, 3), nil)
	if _, err := f.Decode(raw); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Decode([]byte("no image")); err == nil {
		t.Fatal("bad bytes decoded")
	}
	for _, s := range f.slots {
		if IsRaw(s.src) || string(s.src) == "no image" {
			t.Fatal("raw pixels or bad bytes cached")
		}
	}
}

func TestFramesReset(t *testing.T) {
	f := &Frames{MaxFrames: 4, MaxBytes: 1 << 20}
	a := encodedFrame(t, 20, 10)
	first, _ := f.Decode(a)
	f.Reset()
	if again, _ := f.Decode(a); again == first {
		t.Fatal("a frame decoded before Reset came from the cache")
	}
}

// MaxBytes bounds everything the cache keeps: each frame's pixels and
// the copy of its encoded bytes. Noise compresses badly, so a frame's PNG
// is about as large as its pixels; counting the pixels alone, the cache
// held about twice MaxBytes.
func TestFramesBoundCountsTheEncodedCopies(t *testing.T) {
	noise := func(seed int) []byte {
		img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
		x := uint32(seed*2654435761 + 1)
		for i := range img.Pix {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			img.Pix[i] = byte(x)
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	one := noise(0)
	f := &Frames{MaxFrames: 100, MaxBytes: 4 * int64(64*64*4+len(one))}
	for i := range 20 {
		if _, err := f.Decode(noise(i)); err != nil {
			t.Fatal(err)
		}
	}
	var held int64
	for _, s := range f.slots {
		held += decodedSize(s.img) + int64(len(s.src))
	}
	if held > f.MaxBytes {
		t.Errorf("the cache holds %d bytes of pixels and encoded copies in %d frames, past its MaxBytes %d", held, len(f.slots), f.MaxBytes)
	}
}
