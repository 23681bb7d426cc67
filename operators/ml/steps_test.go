package ml

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// TestDBBoxesFindsBlobsInReadingOrder: two blobs above the threshold on one
// line and one below them become three boxes, top to bottom and left to
// right, grown by the unclip distance and mapped back to the source's
// pixels; a faint blob (mean under the box threshold) and a sliver (under
// the least size) are dropped.
func TestDBBoxesFindsBlobsInReadingOrder(t *testing.T) {
	const w, h = 64, 64
	prob := make([]float32, w*h)
	fill := func(x0, y0, x1, y1 int, v float32) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				prob[y*w+x] = v
			}
		}
	}
	fill(30, 10, 50, 16, 0.9) // right of the first line
	fill(4, 11, 20, 17, 0.9)  // left of the first line, a pixel lower
	fill(10, 40, 40, 50, 0.8) // the second line
	fill(50, 40, 60, 46, 0.4) // faint: mean 0.4 < 0.6
	fill(2, 30, 40, 32, 0.9)  // a sliver two pixels high
	pl := Placed{SrcW: 128, SrcH: 128, W: w, H: h, ScaleX: 0.5, ScaleY: 0.5}
	boxes, _ := DBBoxes(prob, w, h, pl, DBConfig{}.Defaults(), nil)
	if len(boxes) != 3 {
		t.Fatalf("boxes %+v, want three", boxes)
	}
	// The left blob: 16x6 pixels, unclip d = 96*1.5/44 = 3.27, in source
	// pixels (scale 0.5) x0 = (4-3.27)*2, y0 = (11-3.27)*2, x1 = (20+3.27)*2.
	want := Box{X0: 1, Y0: 15, X1: 47, Y1: 41}
	if b := boxes[0]; b.X0 != want.X0 || b.Y0 != want.Y0 || b.X1 != want.X1 || b.Y1 != want.Y1 {
		t.Errorf("first box %+v, want %+v", b, want)
	}
	if boxes[1].X0 < boxes[0].X1-10 || boxes[2].Y0 < boxes[0].Y1 {
		t.Errorf("not in reading order: %+v", boxes)
	}
	for _, b := range boxes {
		if b.Score < 0.6 {
			t.Errorf("box %+v under the box threshold", b)
		}
	}
}

// TestCTCGreedyCollapsesRepeatsAndBlanks: steps a a - a _ b b - (- the
// blank, _ the class after the dictionary, a space) decode to "aa b": a
// repeat collapses, a blank between two a's keeps both.
func TestCTCGreedyCollapsesRepeatsAndBlanks(t *testing.T) {
	dict := CTCDictionary{"a", "b"}
	k := len(dict) + 2 // blank, a, b, space
	steps := []int{1, 1, 0, 1, 3, 2, 2, 0}
	probs := make([]float32, len(steps)*k)
	for i, c := range steps {
		probs[i*k+c] = 0.9
		probs[i*k+(c+1)%k] = 0.1
	}
	var sb strings.Builder
	text, conf := CTCGreedy(probs, k, dict, &sb)
	if text != "aa b" {
		t.Errorf("text %q, want %q", text, "aa b")
	}
	if conf < 0.89 || conf > 0.91 {
		t.Errorf("confidence %v, want 0.9", conf)
	}
	if text, conf := CTCGreedy(make([]float32, 3*k), k, dict, &sb); text != "" || conf != 1 {
		t.Errorf("all blank: %q %v", text, conf)
	}
	if _, err := ParseCTCDictionary(""); err == nil {
		t.Error("an empty dictionary was accepted")
	}
}

func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImageStepAndDBStep: the image step fills a letterboxed, normalised
// tensor (BGR, the padding zero) and nulls an undecodable image; the DB
// step makes one row per box, repeating the row's columns, and none for
// the failed row; nothing leaks.
func TestImageStepAndDBStep(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	in := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "image", Type: arrow.BinaryTypes.Binary}}, nil)
	b := array.NewRecordBuilder(mem, in)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
	b.Field(1).(*array.BinaryBuilder).AppendValues([][]byte{pngOf(t, 32, 16, color.RGBA{255, 0, 0, 255}), []byte("not an image")}, nil)
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	prep := ImagePrep{Height: 16, Width: 16, Fit: FitLongSide, BGR: true, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
	st, err := NewImageStep(in, 1, prep)
	if err != nil {
		t.Fatal(err)
	}
	pre, err := st.Apply(mem, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Release()
	vals, size, _ := TensorValues(pre.Column(2))
	// Red, BGR: channel 2 is 1, channels 0 and 1 are -1 in the top 16x8;
	// the bottom half is padding, 0.
	if vals[0] != -1 || vals[2*256] != 1 || vals[256+8*16] != 0 || size != 3*256 {
		t.Errorf("tensor %v %v %v (size %d)", vals[0], vals[2*256], vals[256+8*16], size)
	}
	if !pre.Column(2).IsNull(1) || pre.Column(2).IsNull(0) || st.Failed != 1 {
		t.Errorf("the bad image: nulls %v %v, failed %d", pre.Column(2).IsNull(0), pre.Column(2).IsNull(1), st.Failed)
	}
	// A model's raw output: a map with two blobs for row 0, null for row 1.
	mapShape := []int64{1, 16, 16}
	probs := make([]float32, 2*256)
	for y := 2; y < 6; y++ {
		for x := 1; x < 5; x++ {
			probs[y*16+x], probs[y*16+x+8] = 0.9, 0.9
		}
	}
	raw, err := NewTensorColumn(mem, mapShape, probs)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Release()
	fs := append(pre.Schema().Fields(), TensorField(RawOutputColumn, mapShape))
	cols := append(pre.Columns(), raw)
	bound := array.NewRecord(arrow.NewSchema(fs, nil), cols, 2)
	defer bound.Release()
	out := []arrow.Field{{Name: "x0", Type: arrow.PrimitiveTypes.Int32}, {Name: "y0", Type: arrow.PrimitiveTypes.Int32},
		{Name: "x1", Type: arrow.PrimitiveTypes.Int32}, {Name: "y1", Type: arrow.PrimitiveTypes.Int32},
		{Name: "score", Type: arrow.PrimitiveTypes.Float32}}
	db, err := NewDBStep(bound.Schema(), 2, out, DBConfig{MinSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Apply(mem, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumRows() != 2 || got.NumCols() != 7 {
		t.Fatalf("got %d rows of %d columns, want 2 of 7: %v", got.NumRows(), got.NumCols(), got)
	}
	ids := got.Column(0).(*array.Int64)
	if ids.Value(0) != 7 || ids.Value(1) != 7 {
		t.Errorf("ids %v, want the first row's twice", ids)
	}
	if _, err := NewDBStep(bound.Schema(), 2, out[:4], DBConfig{}); err == nil {
		t.Error("four output columns were accepted")
	}

	// The detection-set form of the same boxes: a box tensor, the crop cut
	// from the detector's input tensor, the score.
	set := []arrow.Field{TensorField("box", []int64{4}), TensorField("crop", []int64{3, 4, 4}), {Name: "score", Type: arrow.PrimitiveTypes.Float32}}
	dset, err := NewDBStep(bound.Schema(), 2, set, DBConfig{MinSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := dset.Apply(mem, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer sets.Release()
	if sets.NumRows() != 2 || sets.NumCols() != 5 {
		t.Fatalf("detection set: %d rows of %d columns, want 2 of 5: %v", sets.NumRows(), sets.NumCols(), sets)
	}
	if !sets.Schema().Equal(dset.Schema()) {
		t.Errorf("detection set: record schema %v, step schema %v", sets.Schema(), dset.Schema())
	}
	boxes, _, err := TensorValues(sets.Column(2))
	if err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		for i := range 4 {
			if want := float32(got.Column(2 + i).(*array.Int32).Value(r)); boxes[4*r+i] != want {
				t.Errorf("box %d: coordinate %d is %v, the five-number form's is %v", r, i, boxes[4*r+i], want)
			}
		}
		if a, b := sets.Column(4).(*array.Float32).Value(r), got.Column(6).(*array.Float32).Value(r); a != b {
			t.Errorf("box %d: score %v, the five-number form's %v", r, a, b)
		}
	}
	// Both boxes lie in the red (BGR: -1, -1, 1) top of the frame.
	crops, size, err := TensorValues(sets.Column(3))
	if err != nil || size != 48 {
		t.Fatalf("crop column: size %d, %v", size, err)
	}
	for i, v := range crops {
		if want := []float32{-1, -1, 1}[(i%48)/16]; v != want {
			t.Fatalf("crop value %d is %v, want %v (the red frame, BGR)", i, v, want)
		}
	}
	// Without the crop: box and score.
	bare, err := NewDBStep(bound.Schema(), 2, []arrow.Field{set[0], set[2]}, DBConfig{MinSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	boxOnly, err := bare.Apply(mem, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer boxOnly.Release()
	if b, _, _ := TensorValues(boxOnly.Column(2)); boxOnly.NumRows() != 2 || boxOnly.NumCols() != 4 || !slices.Equal(b, boxes) {
		t.Errorf("box and score alone: %d rows of %d columns, boxes %v, want 2 of 4 and %v", boxOnly.NumRows(), boxOnly.NumCols(), b, boxes)
	}
	if _, err := NewDBStep(bound.Schema(), 2, []arrow.Field{set[0], set[2], set[1]}, DBConfig{}); err == nil {
		t.Error("a detection set whose last column is a tensor, not the score, was accepted")
	}
	if _, err := NewDBStep(bound.Schema(), 2, []arrow.Field{set[0], TensorField("crop", []int64{4, 4}), set[2]}, DBConfig{}); err == nil {
		t.Error("a crop of shape [4, 4] (no channels) was accepted")
	}
}
