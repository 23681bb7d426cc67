package ml

import "math"

// ResizeArea scales a square single-channel image of side from to side to
// by area averaging: each output pixel is the mean of the input pixels it
// covers, fractions weighted. It is what the sender of a frame applies
// before a slow link (data adaptation, Jellyfish 7.3), and what the
// variants trained for the smaller sizes were trained on, so a model sees
// at run time the pixels it learnt from. dst is reused when it has room.
func ResizeArea(dst, src []float32, from, to int) []float32 {
	if cap(dst) < to*to {
		dst = make([]float32, to*to)
	}
	dst = dst[:to*to]
	if to == from {
		copy(dst, src[:from*from])
		return dst
	}
	scale := float64(from) / float64(to)
	for oy := 0; oy < to; oy++ {
		y0, y1 := float64(oy)*scale, float64(oy+1)*scale
		for ox := 0; ox < to; ox++ {
			x0, x1 := float64(ox)*scale, float64(ox+1)*scale
			var sum float64
			for iy := int(y0); iy < from && float64(iy) < y1; iy++ {
				wy := math.Min(y1, float64(iy+1)) - math.Max(y0, float64(iy))
				row := src[iy*from:]
				for ix := int(x0); ix < from && float64(ix) < x1; ix++ {
					wx := math.Min(x1, float64(ix+1)) - math.Max(x0, float64(ix))
					sum += wy * wx * float64(row[ix])
				}
			}
			dst[oy*to+ox] = float32(sum / (scale * scale))
		}
	}
	return dst
}

// ResizeBilinear scales a square single-channel image of side from to
// side to by bilinear interpolation between pixel centres (edges
// clamped). It is the alternative to ResizeArea's upscaling that the
// model call's resizing of variable-side rows was measured against (and
// lost to; runtime/inference's TestVariableSidesOnTheZoo). dst must hold
// to*to values.
func ResizeBilinear(dst, src []float32, from, to int) {
	if to == from {
		copy(dst[:to*to], src[:from*from])
		return
	}
	scale := float64(from) / float64(to)
	coord := func(o int) (int, int, float64) {
		x := (float64(o)+0.5)*scale - 0.5
		x = math.Max(0, math.Min(float64(from-1), x))
		i := int(x)
		j := min(i+1, from-1)
		return i, j, x - float64(i)
	}
	for oy := 0; oy < to; oy++ {
		y0, y1, fy := coord(oy)
		for ox := 0; ox < to; ox++ {
			x0, x1, fx := coord(ox)
			top := float64(src[y0*from+x0])*(1-fx) + float64(src[y0*from+x1])*fx
			bot := float64(src[y1*from+x0])*(1-fx) + float64(src[y1*from+x1])*fx
			dst[oy*to+ox] = float32(top*(1-fy) + bot*fy)
		}
	}
}

// EncodeUint8 packs pixels in [0, 1] as one byte each (a quarter of
// float32's bytes on the wire); DecodeUint8 undoes it to within 1/510.
func EncodeUint8(dst []byte, src []float32) []byte {
	for _, v := range src {
		x := math.Round(float64(v) * 255)
		dst = append(dst, byte(math.Max(0, math.Min(255, x))))
	}
	return dst
}

// DecodeUint8 is EncodeUint8's inverse.
func DecodeUint8(dst []float32, src []byte) []float32 {
	for _, b := range src {
		dst = append(dst, float32(b)/255)
	}
	return dst
}
