package ml

import (
	"math"
	"testing"
)

func TestResizeAreaAveragesWhatEachPixelCovers(t *testing.T) {
	// 4x4 -> 2x2: each output pixel is the mean of a 2x2 block.
	src := []float32{
		0, 1, 2, 3,
		4, 5, 6, 7,
		8, 9, 10, 11,
		12, 13, 14, 15,
	}
	got := ResizeArea(nil, src, 4, 2)
	want := []float32{2.5, 4.5, 10.5, 12.5}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("4->2: %v, want %v", got, want)
		}
	}
	// 28 -> 20 (a fractional ratio) keeps the mean of a constant image and
	// of any image (area averaging conserves the total).
	img := make([]float32, 28*28)
	var sum float64
	for i := range img {
		img[i] = float32(i%17) / 16
		sum += float64(img[i])
	}
	small := ResizeArea(nil, img, 28, 20)
	var s2 float64
	for _, v := range small {
		s2 += float64(v)
	}
	if math.Abs(sum/784-s2/400) > 1e-5 {
		t.Fatalf("28->20 changed the mean: %v vs %v", sum/784, s2/400)
	}
	if same := ResizeArea(nil, img, 28, 28); same[100] != img[100] {
		t.Fatal("28->28 is not the identity")
	}
}

func TestUint8RoundTrip(t *testing.T) {
	src := []float32{0, 0.5, 1, 0.1234, 1.2, -0.1}
	b := EncodeUint8(nil, src)
	back := DecodeUint8(nil, b)
	for i, v := range src {
		want := math.Max(0, math.Min(1, float64(v)))
		if math.Abs(float64(back[i])-want) > 1.0/510+1e-6 {
			t.Fatalf("%v -> %d -> %v", v, b[i], back[i])
		}
	}
}
