package ml

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/compute"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
)

// DBConfig is the post-processing of a differentiable-binarisation (DB)
// text detector (Liao et al., AAAI 2020; PaddleOCR's det models): the
// network maps an image to a per-pixel probability of text whose blobs are
// the text regions shrunk by a fixed ratio, so a box is a blob's bounds
// grown back ("unclipped") by the distance the training shrank it by.
type DBConfig struct {
	// Threshold binarises the probability map (PaddleOCR: 0.3).
	Threshold float32
	// BoxThreshold is the least mean probability inside a kept box (0.6).
	BoxThreshold float32
	// UnclipRatio grows a blob's box by area*ratio/perimeter on each side
	// (1.5), the inverse of the label shrinking.
	UnclipRatio float64
	// MinSize is the least side of a box, in map pixels, before and (plus
	// two) after unclipping (3).
	MinSize float64
}

// Defaults fills zero fields with PaddleOCR's values.
func (c DBConfig) Defaults() DBConfig {
	if c.Threshold == 0 {
		c.Threshold = 0.3
	}
	if c.BoxThreshold == 0 {
		c.BoxThreshold = 0.6
	}
	if c.UnclipRatio == 0 {
		c.UnclipRatio = 1.5
	}
	if c.MinSize == 0 {
		c.MinSize = 3
	}
	return c
}

// Box is one text box in the source image's pixels, [X0, X1) x [Y0, Y1).
type Box struct {
	X0, Y0, X1, Y1 int
	Score          float32
}

// DBBoxes finds the text boxes of one probability map of w x h (row-major)
// for an image placed by pl. Boxes are in reading order: top to bottom, and
// left to right within a line (boxes whose tops are within half the
// smaller box's height). labels is scratch of w*h, reused when it has room.
func DBBoxes(prob []float32, w, h int, pl Placed, c DBConfig, labels []int32) ([]Box, []int32) {
	if cap(labels) < w*h {
		labels = make([]int32, w*h)
	}
	labels = labels[:w*h]
	clear(labels)
	var boxes []Box
	var stack []int32
	// Only the part of the map the image covers: the padding is no text.
	cw, ch := min(w, max(pl.W, 1)), min(h, max(pl.H, 1))
	next := int32(0)
	for y := range ch {
		for x := range cw {
			i := y*w + x
			if labels[i] != 0 || prob[i] <= c.Threshold {
				continue
			}
			// A blob: the 8-connected pixels above the threshold.
			next++
			minX, maxX, minY, maxY := x, x, y, y
			labels[i] = next
			stack = append(stack[:0], int32(i))
			for len(stack) > 0 {
				p := int(stack[len(stack)-1])
				stack = stack[:len(stack)-1]
				px, py := p%w, p/w
				minX, maxX, minY, maxY = min(minX, px), max(maxX, px), min(minY, py), max(maxY, py)
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						qx, qy := px+dx, py+dy
						if qx < 0 || qy < 0 || qx >= cw || qy >= ch {
							continue
						}
						q := qy*w + qx
						if labels[q] == 0 && prob[q] > c.Threshold {
							labels[q] = next
							stack = append(stack, int32(q))
						}
					}
				}
			}
			bw, bh := float64(maxX-minX+1), float64(maxY-minY+1)
			if min(bw, bh) < c.MinSize {
				continue
			}
			// The box's score is the mean probability inside it (PaddleOCR's
			// "fast" score).
			var sum float64
			for yy := minY; yy <= maxY; yy++ {
				for _, v := range prob[yy*w+minX : yy*w+maxX+1] {
					sum += float64(v)
				}
			}
			score := float32(sum / (bw * bh))
			if score < c.BoxThreshold {
				continue
			}
			d := bw * bh * c.UnclipRatio / (2 * (bw + bh))
			x0, y0 := float64(minX)-d, float64(minY)-d
			x1, y1 := float64(maxX+1)+d, float64(maxY+1)+d
			if min(x1-x0, y1-y0) < c.MinSize+2 {
				continue
			}
			toX := func(v float64) int { return clampInt(int(v/pl.ScaleX+0.5), 0, pl.SrcW) }
			toY := func(v float64) int { return clampInt(int(v/pl.ScaleY+0.5), 0, pl.SrcH) }
			b := Box{X0: toX(x0), Y0: toY(y0), X1: toX(x1), Y1: toY(y1), Score: score}
			if b.X1 > b.X0 && b.Y1 > b.Y0 {
				boxes = append(boxes, b)
			}
		}
	}
	sort.SliceStable(boxes, func(i, j int) bool {
		a, b := boxes[i], boxes[j]
		if line := min(a.Y1-a.Y0, b.Y1-b.Y0) / 2; a.Y0-b.Y0 > line || b.Y0-a.Y0 > line {
			return a.Y0 < b.Y0
		}
		return a.X0 < b.X0
	})
	return boxes, labels
}

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// DBStep is the Post step of a DB detector: each input row becomes one row
// per text box its probability map holds (none for an image without text,
// or whose image did not decode), its own columns repeated beside the
// box's, in one of two forms the call's columns choose:
//
//   - five numbers: x0, y0, x1, y1 (integer or floating point, in source
//     pixels) and the box's score; cutting a box out of its frame is then
//     the query's (crop_image, a relational step between the detector and
//     the next model, on the worker that holds the frame);
//   - a detection set, as an object detector's call gives it: box
//     TENSOR(FLOAT, 4) ([x0, y0, x1, y1] in source pixels), optionally crop
//     TENSOR(FLOAT, 3, h, w) and then score FLOAT. The crop is the box cut
//     out of the detector's own input tensor and resized (bilinear) to
//     h x w, normalised as the detector saw it, so a next model (a
//     re-identification network) takes it as its input tensor per box.
type DBStep struct {
	keep   int // the query's columns before the hidden ones
	prob   int // the raw output column
	place  int // ImagePlaceColumn
	image  int // ImageTensorColumn, where a crop is cut from
	w, h   int
	cfg    DBConfig
	out    *arrow.Schema
	labels []int32
	// The detection-set form: boxSet, and the crop's [3, cropH, cropW]
	// when the call has a crop column (cropH 0: none).
	boxSet       bool
	cropH, cropW int
	imgH, imgW   int
}

// NewDBStep decodes the raw output column of in (a probability map
// [1, h, w] or [h, w] per row) into out's columns (five numbers, or box,
// [crop,] score) after in's first keep columns.
func NewDBStep(in *arrow.Schema, keep int, out []arrow.Field, cfg DBConfig) (*DBStep, error) {
	s := &DBStep{keep: keep, prob: -1, place: -1, image: -1, cfg: cfg.Defaults()}
	for i, f := range in.Fields() {
		switch f.Name {
		case RawOutputColumn:
			s.prob = i
		case ImagePlaceColumn:
			s.place = i
		case ImageTensorColumn:
			s.image = i
		}
	}
	if s.prob < 0 || s.place < 0 || keep > in.NumFields() {
		return nil, fmt.Errorf("%w: db decode: want the columns %s and %s, have %s", ErrSchema, RawOutputColumn, ImagePlaceColumn, fieldNames(in))
	}
	shape, err := FieldShape(in.Field(s.prob))
	if err != nil {
		return nil, fmt.Errorf("db decode: %w", err)
	}
	if n := len(shape); n < 2 || (n == 3 && shape[0] != 1) || n > 3 {
		return nil, fmt.Errorf("%w: db decode: the detector's output rows are [%s], want a probability map [1, h, w]", ErrSchema, FormatDims(shape))
	}
	s.h, s.w = int(shape[len(shape)-2]), int(shape[len(shape)-1])
	if len(out) > 0 && isBoxTensor(out[0]) {
		if err := s.bindBoxSet(in, out); err != nil {
			return nil, err
		}
	} else if err := checkBoxNumbers(out); err != nil {
		return nil, err
	}
	fs := append(slices.Clone(in.Fields()[:keep]), out...)
	md := in.Metadata()
	s.out = arrow.NewSchema(fs, &md)
	return s, nil
}

// isBoxTensor says whether f is a TENSOR(FLOAT, 4): a detection set's box.
func isBoxTensor(f arrow.Field) bool {
	shape, err := FieldShape(f)
	return err == nil && product(shape) == 4
}

// checkBoxNumbers checks the five-number form.
func checkBoxNumbers(out []arrow.Field) error {
	if len(out) != 5 {
		return fmt.Errorf("%w: db decode: %d output columns, want five (x0, y0, x1, y1 and a score; a crop of the box is crop_image(image, x0, y0, x1, y1)) or a detection set (box TENSOR(FLOAT, 4), [crop TENSOR(FLOAT, 3, h, w),] score FLOAT)", ErrSchema, len(out))
	}
	for i, f := range out {
		switch id := f.Type.ID(); {
		case i == 4 && id != arrow.FLOAT32 && id != arrow.FLOAT64:
			return fmt.Errorf("%w: db decode: the score column %s is %s, want FLOAT", ErrSchema, f.Name, f.Type)
		case i < 4 && id != arrow.INT32 && id != arrow.INT64 && id != arrow.FLOAT32 && id != arrow.FLOAT64:
			return fmt.Errorf("%w: db decode: the coordinate column %s is %s, want a number", ErrSchema, f.Name, f.Type)
		}
	}
	return nil
}

// bindBoxSet checks the detection-set form: box, [crop,] score.
func (s *DBStep) bindBoxSet(in *arrow.Schema, out []arrow.Field) error {
	s.boxSet = true
	if len(out) != 2 && len(out) != 3 {
		return fmt.Errorf("%w: db decode: a detection set is box TENSOR(FLOAT, 4), [crop TENSOR(FLOAT, 3, h, w),] score FLOAT; the call has %d columns", ErrSchema, len(out))
	}
	score := out[len(out)-1]
	if id := score.Type.ID(); id != arrow.FLOAT32 && id != arrow.FLOAT64 {
		return fmt.Errorf("%w: db decode: the score column %s is %s, want FLOAT", ErrSchema, score.Name, score.Type)
	}
	if len(out) == 2 {
		return nil
	}
	crop, err := FieldShape(out[1])
	if err != nil || len(crop) != 3 || crop[0] != 3 {
		return fmt.Errorf("%w: db decode: the crop column %s is %s, want TENSOR(FLOAT, 3, h, w)", ErrSchema, out[1].Name, out[1].Type)
	}
	if s.image < 0 {
		return fmt.Errorf("%w: db decode: a crop is cut from the detector's input %s, which %s lacks", ErrSchema, ImageTensorColumn, fieldNames(in))
	}
	img, err := FieldShape(in.Field(s.image))
	if err != nil || len(img) != 3 || img[0] != 3 {
		return fmt.Errorf("%w: db decode: the detector's input rows are %s, want [3, h, w] to cut crops from", ErrSchema, in.Field(s.image).Type)
	}
	s.cropH, s.cropW = int(crop[1]), int(crop[2])
	s.imgH, s.imgW = int(img[1]), int(img[2])
	return nil
}

// Schema is the query's columns and the box's.
func (s *DBStep) Schema() *arrow.Schema { return s.out }

// Apply finds every row's boxes and repeats its columns once per box.
func (s *DBStep) Apply(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	prob, size, err := TensorValues(rec.Column(s.prob))
	if err != nil {
		return nil, err
	}
	place, _, err := TensorValues(rec.Column(s.place))
	if err != nil {
		return nil, err
	}
	probCol := rec.Column(s.prob)
	idx := array.NewInt32Builder(mem)
	defer idx.Release()
	bs := make([]array.Builder, s.out.NumFields()-s.keep)
	for i := range bs {
		bs[i] = array.NewBuilder(mem, s.out.Field(s.keep+i).Type)
		defer bs[i].Release()
	}
	var image []float32
	if s.cropH > 0 {
		if image, _, err = TensorValues(rec.Column(s.image)); err != nil {
			return nil, err
		}
	}
	// The detection set's tensors, row after row.
	var boxVals, cropVals []float32
	cropSize, imgSize := 3*s.cropH*s.cropW, 3*s.imgH*s.imgW
	for r := range int(rec.NumRows()) {
		if probCol.IsNull(r) {
			continue
		}
		p := place[4*r : 4*r+4]
		pl := Placed{SrcW: int(p[0]), SrcH: int(p[1]), ScaleX: float64(p[2]), ScaleY: float64(p[3])}
		pl.W, pl.H = int(float64(pl.SrcW)*pl.ScaleX+0.5), int(float64(pl.SrcH)*pl.ScaleY+0.5)
		var boxes []Box
		boxes, s.labels = DBBoxes(prob[r*size:(r+1)*size], s.w, s.h, pl, s.cfg, s.labels)
		for _, b := range boxes {
			idx.Append(int32(r))
			if !s.boxSet {
				for i, v := range []float64{float64(b.X0), float64(b.Y0), float64(b.X1), float64(b.Y1), float64(b.Score)} {
					appendNumber(bs[i], v)
				}
				continue
			}
			boxVals = append(boxVals, float32(b.X0), float32(b.Y0), float32(b.X1), float32(b.Y1))
			appendNumber(bs[len(bs)-1], float64(b.Score))
			if s.cropH > 0 {
				n := len(cropVals)
				cropVals = slices.Grow(cropVals, cropSize)[:n+cropSize]
				cropBox(cropVals[n:], s.cropH, s.cropW, image[r*imgSize:(r+1)*imgSize], s.imgH, s.imgW, b, pl)
			}
		}
	}
	if s.boxSet {
		// The tensor columns come whole from their values; the score's
		// builder is the last.
		box, err := NewTensorColumn(mem, []int64{4}, boxVals)
		if err != nil {
			return nil, err
		}
		tensors := []arrow.Array{box}
		if s.cropH > 0 {
			crop, err := NewTensorColumn(mem, []int64{3, int64(s.cropH), int64(s.cropW)}, cropVals)
			if err != nil {
				box.Release()
				return nil, err
			}
			tensors = append(tensors, crop)
		}
		defer func() {
			for _, a := range tensors {
				a.Release()
			}
		}()
		return s.assemble(mem, rec, idx, tensors, bs[len(bs)-1:])
	}
	return s.assemble(mem, rec, idx, nil, bs)
}

// cropBox writes box b (source pixels) of the detector's input tensor img
// ([3, ih, iw], the frame placed by pl) into dst ([3, ch, cw]), bilinear.
func cropBox(dst []float32, ch, cw int, img []float32, ih, iw int, b Box, pl Placed) {
	x0, y0 := float64(b.X0)*pl.ScaleX, float64(b.Y0)*pl.ScaleY
	sx, sy := float64(b.X1-b.X0)*pl.ScaleX/float64(cw), float64(b.Y1-b.Y0)*pl.ScaleY/float64(ch)
	for y := range ch {
		fy := min(max(y0+(float64(y)+0.5)*sy-0.5, 0), float64(ih-1))
		ya := int(fy)
		yb, wy := min(ya+1, ih-1), float32(fy-float64(ya))
		for x := range cw {
			fx := min(max(x0+(float64(x)+0.5)*sx-0.5, 0), float64(iw-1))
			xa := int(fx)
			xb, wx := min(xa+1, iw-1), float32(fx-float64(xa))
			for c := range 3 {
				p := img[c*ih*iw:]
				top := p[ya*iw+xa]*(1-wx) + p[ya*iw+xb]*wx
				bot := p[yb*iw+xa]*(1-wx) + p[yb*iw+xb]*wx
				dst[c*ch*cw+y*cw+x] = top*(1-wy) + bot*wy
			}
		}
	}
}

// assemble takes the kept columns of rec's rows idx and appends the
// box's columns: tensors first, then the builders'.
func (s *DBStep) assemble(mem memory.Allocator, rec arrow.Record, idx *array.Int32Builder, tensors []arrow.Array, bs []array.Builder) (arrow.Record, error) {
	take := idx.NewInt32Array()
	defer take.Release()
	ctx := compute.WithAllocator(context.Background(), dataflow.Unrefused(mem))
	cols := make([]arrow.Array, 0, s.out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range s.keep {
		c, err := compute.TakeArray(ctx, rec.Column(i), take)
		if err != nil {
			return nil, fmt.Errorf("db decode: column %s: %w", s.out.Field(i).Name, err)
		}
		cols = append(cols, c)
	}
	for _, a := range tensors {
		a.Retain()
		cols = append(cols, a)
	}
	for _, b := range bs {
		cols = append(cols, b.NewArray())
	}
	return array.NewRecord(s.out, cols, int64(take.Len())), nil
}

func appendNumber(b array.Builder, v float64) {
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(int64(v))
	case *array.Float32Builder:
		b.Append(float32(v))
	case *array.Float64Builder:
		b.Append(v)
	}
}
