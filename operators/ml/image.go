package ml

import (
	"fmt"
	"image"

	"golang.org/x/image/draw"

	"github.com/tierflow/tierflow/operators/pixels"
)

// ImagePrep says how an encoded image (PNG, JPEG or GIF bytes, or raw
// pixels) becomes a
// model's input tensor [3, Height, Width]: decoded, resized, scaled,
// normalised per channel, and padded. Vision networks are trained on one
// such recipe; a variant at another resolution keeps the recipe and
// changes Height and Width.
type ImagePrep struct {
	// Height and Width are the tensor's spatial size.
	Height, Width int
	// Fit is how the image is resized: FitLongSide scales it so that it
	// fits Height x Width whole, keeping its aspect (a detector's frame);
	// FitHeight scales it to Height, keeping its aspect, up to Width (a
	// text recogniser's line). The rest is padded with zeros after
	// normalisation, as PaddleOCR pads.
	Fit ImageFit
	// Mean and Std normalise each channel of values scaled to [0, 1]:
	// (v - Mean[c]) / Std[c]. Zero Std means 1.
	Mean, Std [3]float32
	// BGR orders the channels blue, green, red (what a network trained on
	// OpenCV's images expects).
	BGR bool
}

// ImageFit is ImagePrep.Fit.
type ImageFit int

const (
	// FitLongSide keeps the aspect and the whole image inside the tensor.
	FitLongSide ImageFit = iota + 1
	// FitHeight scales to the tensor's height and crops nothing but what
	// would run past its width (squeezed to fit instead).
	FitHeight
)

// Check reports a recipe that cannot make a tensor.
func (p ImagePrep) Check() error {
	if p.Height <= 0 || p.Width <= 0 {
		return fmt.Errorf("%w: image size %dx%d", ErrConfig, p.Width, p.Height)
	}
	if p.Fit != FitLongSide && p.Fit != FitHeight {
		return fmt.Errorf("%w: image fit %d", ErrConfig, p.Fit)
	}
	return nil
}

// Shape is the tensor's per-row shape [3, Height, Width].
func (p ImagePrep) Shape() []int64 { return []int64{3, int64(p.Height), int64(p.Width)} }

// DecodeImage decodes PNG, JPEG or GIF bytes, or raw pixels (a crop_image
// result: package pixels).
func DecodeImage(b []byte) (image.Image, error) {
	img, err := pixels.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: image of %d bytes: %w", ErrRow, len(b), err)
	}
	return img, nil
}

// Placed is where an image landed in the tensor: its scaled size (the
// rest is padding) and the scale from source pixels to tensor pixels, by
// axis, so that what a model finds in the tensor maps back to the image.
type Placed struct {
	SrcW, SrcH int
	W, H       int
	ScaleX     float64
	ScaleY     float64
}

// Fill writes img into dst (3*Height*Width values, channel-major) by the
// recipe and says where it landed. scratch is reused for the resized
// pixels when it has room; the grown one is returned.
func (p ImagePrep) Fill(dst []float32, img image.Image, scratch *image.RGBA) (Placed, *image.RGBA) {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	w, h := p.Width, p.Height
	switch p.Fit {
	case FitLongSide:
		s := min(float64(p.Width)/float64(max(sw, 1)), float64(p.Height)/float64(max(sh, 1)))
		w, h = max(1, min(p.Width, int(float64(sw)*s+0.5))), max(1, min(p.Height, int(float64(sh)*s+0.5)))
	case FitHeight:
		h = p.Height
		w = max(1, min(p.Width, int(float64(sw)*float64(p.Height)/float64(max(sh, 1))+0.999)))
	}
	pl := Placed{SrcW: sw, SrcH: sh, W: w, H: h, ScaleX: float64(w) / float64(max(sw, 1)), ScaleY: float64(h) / float64(max(sh, 1))}
	r := image.Rect(0, 0, w, h)
	if scratch == nil || scratch.Bounds().Dx() < w || scratch.Bounds().Dy() < h {
		scratch = image.NewRGBA(image.Rect(0, 0, max(w, p.Width), max(h, p.Height)))
	}
	sub := scratch.SubImage(r).(*image.RGBA)
	if w == sw && h == sh {
		draw.Draw(sub, r, img, b.Min, draw.Src)
	} else {
		// Bilinear, as the networks' own preprocessing (OpenCV's INTER_LINEAR)
		// resizes.
		draw.BiLinear.Scale(sub, r, img, b, draw.Src, nil)
	}
	plane := p.Width * p.Height
	order := [3]int{0, 1, 2}
	if p.BGR {
		order = [3]int{2, 1, 0}
	}
	var scale, shift [3]float32
	for c := range 3 {
		std := p.Std[c]
		if std == 0 {
			std = 1
		}
		scale[c], shift[c] = 1/(255*std), p.Mean[c]/std
	}
	clear(dst[:3*plane])
	for y := range h {
		row := sub.Pix[y*sub.Stride : y*sub.Stride+4*w]
		for x := range w {
			px := row[4*x : 4*x+3]
			o := y*p.Width + x
			for c := range 3 {
				dst[c*plane+o] = float32(px[order[c]])*scale[c] - shift[c]
			}
		}
	}
	return pl, scratch
}
