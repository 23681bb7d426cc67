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
			ref.Close()
		}
	}
	if err := m.time(dir, scenes, threads, iters, progress); err != nil {
		return nil, err
	}
	return m, nil
}

// timedCall is one variant's call at one batch size, and its times (ms).
type timedCall struct {
	run func() error
	ms  []float64
}

// time times every variant's calls by batch size in rounds: each round
// makes one call of every variant and batch size, starting one further
// along each time, so a load that comes and goes on a shared machine
// falls on all of them alike; each gets iters calls, and its p50, p75 and
// p90 are over them. Timed one variant after the other, a busy minute
// would land on one variant's calls alone and could put a smaller
// detector's P90 above a larger one's.
func (m *Measured) time(dir string, scenes []*Scene, threads, iters int, progress io.Writer) error {
	var calls []*timedCall
	det := map[int]map[int]*timedCall{}
	rec := map[int]map[int]*timedCall{}
	for _, side := range DetSides {
		ref, err := NewReference(dir, side, RecWidths[0], threads)
		if err != nil {
			return err
		}
		defer ref.Close()
		det[side] = map[int]*timedCall{}
		for _, b := range m.Batches["det"] {
			run, err := ref.detCall(scenes, b)
			if err != nil {
				return err
			}
			c := &timedCall{run: run}
			det[side][b] = c
			calls = append(calls, c)
		}
	}
	for _, width := range RecWidths {
		// The recogniser's calls are on det-480's crops.
		ref, err := NewReference(dir, 480, width, threads)
		if err != nil {
			return err
		}
		defer ref.Close()
		rec[width] = map[int]*timedCall{}
		for _, b := range m.Batches["rec"] {
			run, err := ref.recCall(scenes, b)
			if err != nil {
				return err
			}
			c := &timedCall{run: run}
			rec[width][b] = c
			calls = append(calls, c)
		}
	}
	for i := range iters {
		for j := range calls {
			c := calls[(i+j)%len(calls)]
			t0 := time.Now()
			if err := c.run(); err != nil {
				return err
			}
			c.ms = append(c.ms, float64(time.Since(t0).Microseconds())/1000)
		}
		fmt.Fprintf(progress, "timed round %d of %d (%d calls each)\n", i+1, iters, len(calls))
	}
	for side, bs := range det {
		m.DetMs[side] = map[int][3]float64{}
		for b, c := range bs {
			m.DetMs[side][b] = percentiles(c.ms)
		}
		fmt.Fprintf(progress, "det-%d: ms per call by batch %v\n", side, m.DetMs[side])
	}
	for width, bs := range rec {
		m.RecMs[width] = map[int][3]float64{}
		for b, c := range bs {
			m.RecMs[width][b] = percentiles(c.ms)
		}
		fmt.Fprintf(progress, "rec-%d: ms per call by batch %v\n", width, m.RecMs[width])
	}
	return nil
}

// percentiles returns p50, p75, p90 of xs (ms).
func percentiles(xs []float64) [3]float64 {
	sort.Float64s(xs)
	at := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
	return [3]float64{at(0.5), at(0.75), at(0.9)}
}

// detCall is a detector call on b scenes' tensors.
func (r *Reference) detCall(scenes []*Scene, b int) (func() error, error) {
	p := r.DetPrep
	size := 3 * p.Height * p.Width
	x := make([]float32, b*size)
	for i := range b {
		img, err := decodeAt(scenes, i)
		if err != nil {
			return nil, err
		}
		_, r.scratch = p.Fill(x[i*size:(i+1)*size], img, r.scratch)
	}
	shape := []int64{int64(b), 3, int64(p.Height), int64(p.Width)}
	return func() error {
		_, _, err := r.run(r.det, shape, x)
		return err
	}, nil
}

// recCall is a recogniser call on b crops of the scenes' lines (as the
// detector found them).
func (r *Reference) recCall(scenes []*Scene, b int) (func() error, error) {
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
		if len(crops) >= b*size {
			break
		}
	}
	if len(crops) == 0 {
		return nil, fmt.Errorf("no line found in %d scenes to time the recogniser on", len(scenes))
	}
	x := make([]float32, b*size)
	for i := range b {
		copy(x[i*size:], crops[(i*size)%len(crops):])
	}
	shape := []int64{int64(b), 3, int64(p.Height), int64(p.Width)}
	return func() error {
		_, _, err := r.run(r.rec, shape, x)
		return err
	}, nil
}

func decodeAt(scenes []*Scene, i int) (image.Image, error) {
	s := scenes[i%len(scenes)]
	img, _, err := image.Decode(strings.NewReader(string(s.Bytes)))
	return img, err
}
