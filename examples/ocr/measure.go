package ocr

import (
	"fmt"
	"image"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/image/draw"

	"github.com/tierflow/tierflow/operators/pixels"
)

// The variants: the detector at three input sides, the recogniser at two
// line widths (the same two ONNX files; a fully convolutional network takes
// any size, and a smaller one is cheaper and sees less).
var (
	DetSides  = []int{320, 480, 640}
	RecWidths = []int{160, 320}
)

// Measured is what the catalog says of the variants, measured on the
// labelled scenes by the reference pipeline.
type Measured struct {
	Scenes     int
	Lines      int
	ImageKB    float64                    // mean encoded scene
	Recall     map[int]float64            // detector side -> % of lines found
	Boxes      map[int]float64            // detector side -> boxes per scene
	CropKB     map[int]float64            // detector side -> mean crop_image result (raw pixels)
	RecAcc     map[int]float64            // recogniser width -> % of found lines read right (det-480's boxes)
	EndToEnd   map[[2]int]float64         // (side, width) -> % of lines read right
	DetMs      map[int]map[int][3]float64 // side -> batch -> p50/p75/p90 ms per call
	RecMs      map[int]map[int][3]float64 // width -> batch -> ms per call
	Batches    map[string][]int           // "det", "rec" -> profiled batch sizes
	Threads    int
	MeasuredAt time.Time
}

// Measure runs every variant pair over the scenes for accuracy, and times
// one call per batch size (iters calls each, the median and upper
// percentiles) with threads intra-op threads. progress gets a line per step.
func Measure(dir string, scenes []*Scene, threads, iters int, progress io.Writer) (*Measured, error) {
	m := &Measured{Scenes: len(scenes), Recall: map[int]float64{}, Boxes: map[int]float64{}, CropKB: map[int]float64{},
		RecAcc: map[int]float64{}, EndToEnd: map[[2]int]float64{}, DetMs: map[int]map[int][3]float64{}, RecMs: map[int]map[int][3]float64{},
		Batches: map[string][]int{"det": {1, 2, 4}, "rec": {1, 4, 8, 16}}, Threads: threads, MeasuredAt: time.Now().UTC()}
	for _, s := range scenes {
		m.Lines += len(s.Lines)
		m.ImageKB += float64(len(s.Bytes)) / 1024 / float64(len(scenes))
	}
	for _, side := range DetSides {
		for _, width := range RecWidths {
			ref, err := NewReference(dir, side, width, threads)
			if err != nil {
				return nil, err
			}
			var reads []Read
			var cropBytes, boxes int
			for _, s := range scenes {
				img, bx, err := ref.Detect(s.Bytes)
				if err != nil {
					ref.Close()
					return nil, err
				}
				texts, confs, err := ref.Recognise(img, bx)
				if err != nil {
					ref.Close()
					return nil, err
				}
				for i, b := range bx {
					reads = append(reads, Read{ID: s.ID, X0: b.X0, Y0: b.Y0, X1: b.X1, Y1: b.Y1, Score: b.Score, Text: texts[i], Confidence: confs[i]})
					cropBytes += pixels.RawSize(b.X1-b.X0, b.Y1-b.Y0)
				}
				boxes += len(bx)
			}
			sc := Match(scenes, reads)
			m.Recall[side] = sc.Recall()
			m.Boxes[side] = float64(boxes) / float64(len(scenes))
			if boxes > 0 {
				m.CropKB[side] = float64(cropBytes) / 1024 / float64(boxes)
			}
			m.EndToEnd[[2]int{side, width}] = sc.Accuracy()
			if side == 480 {
				m.RecAcc[width] = pct(sc.Correct, sc.Found)
			}
			fmt.Fprintf(progress, "det-%d rec-%d: lines found %.1f%%, read right %.1f%% (%d boxes)\n", side, width, sc.Recall(), sc.Accuracy(), boxes)
			// Time the calls once per variant (the recogniser's on det-480's crops).
			if width == RecWidths[0] {
				if m.DetMs[side], err = ref.timeDet(scenes, m.Batches["det"], iters); err != nil {
					ref.Close()
					return nil, err
				}
				fmt.Fprintf(progress, "det-%d: ms per call by batch %v\n", side, m.DetMs[side])
			}
			if side == 480 {
				if m.RecMs[width], err = ref.timeRec(scenes, m.Batches["rec"], iters); err != nil {
					ref.Close()
					return nil, err
				}
				fmt.Fprintf(progress, "rec-%d: ms per call by batch %v\n", width, m.RecMs[width])
			}
			ref.Close()
		}
	}
	return m, nil
}

// percentiles returns p50, p75, p90 of xs (ms).
func percentiles(xs []float64) [3]float64 {
	sort.Float64s(xs)
	at := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
	return [3]float64{at(0.5), at(0.75), at(0.9)}
}

// timeDet times detector calls of b scenes' tensors.
func (r *Reference) timeDet(scenes []*Scene, batches []int, iters int) (map[int][3]float64, error) {
	p := r.DetPrep
	size := 3 * p.Height * p.Width
	out := map[int][3]float64{}
	for _, b := range batches {
		x := make([]float32, b*size)
		for i := range b {
			img, err := decodeAt(scenes, i)
			if err != nil {
				return nil, err
			}
			_, r.scratch = p.Fill(x[i*size:(i+1)*size], img, r.scratch)
		}
		var ms []float64
		for range iters {
			t0 := time.Now()
			if _, _, err := r.run(r.det, []int64{int64(b), 3, int64(p.Height), int64(p.Width)}, x); err != nil {
				return nil, err
			}
			ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		}
		out[b] = percentiles(ms)
	}
	return out, nil
}

// timeRec times recogniser calls of b crops.
func (r *Reference) timeRec(scenes []*Scene, batches []int, iters int) (map[int][3]float64, error) {
	p := r.RecPrep
	size := 3 * p.Height * p.Width
	var crops []float32
	for _, s := range scenes {
		img, boxes, err := r.Detect(s.Bytes)
		if err != nil {
			return nil, err
		}
		for _, bx := range boxes {
			o := img.Bounds().Min
			rect := image.Rect(o.X+bx.X0, o.Y+bx.Y0, o.X+bx.X1, o.Y+bx.Y1)
			crop := image.NewRGBA(image.Rect(0, 0, rect.Dx(), rect.Dy()))
			draw.Draw(crop, crop.Bounds(), img, rect.Min, draw.Src)
			x := make([]float32, size)
			_, r.scratch = p.Fill(x, crop, r.scratch)
			crops = append(crops, x...)
		}
		if len(crops) >= 16*size {
			break
		}
	}
	out := map[int][3]float64{}
	for _, b := range batches {
		x := make([]float32, b*size)
		for i := range b {
			copy(x[i*size:], crops[(i*size)%len(crops):])
		}
		var ms []float64
		for range iters {
			t0 := time.Now()
			if _, _, err := r.run(r.rec, []int64{int64(b), 3, int64(p.Height), int64(p.Width)}, x); err != nil {
				return nil, err
			}
			ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		}
		out[b] = percentiles(ms)
	}
	return out, nil
}

func decodeAt(scenes []*Scene, i int) (image.Image, error) {
	s := scenes[i%len(scenes)]
	img, _, err := image.Decode(strings.NewReader(string(s.Bytes)))
	return img, err
}
