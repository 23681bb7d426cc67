package ocr

import (
	"fmt"
	"image"
	"os"
	"strings"

	ort "github.com/yalue/onnxruntime_go"
	"golang.org/x/image/draw"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// Model files under the setup cache (scripts/setup.sh), relative to the
// repository root.
const (
	CacheDir       = ".cache/models/ocr/1.4.2"
	DetectorFile   = "ch_PP-OCRv4_det_infer.onnx"
	RecogniserFile = "ch_PP-OCRv4_rec_infer.onnx"
	DictionaryFile = "ppocr_keys_v1.txt"
)

// DetPrep is PaddleOCR's detector recipe at side x side: the whole image
// inside, ImageNet's mean and std, BGR.
func DetPrep(side int) ml.ImagePrep {
	return ml.ImagePrep{Height: side, Width: side, Fit: ml.FitLongSide, BGR: true,
		Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}
}

// RecPrep is PaddleOCR's recogniser recipe: height 48, up to width wide,
// values to [-1, 1], BGR.
func RecPrep(width int) ml.ImagePrep {
	return ml.ImagePrep{Height: 48, Width: width, Fit: ml.FitHeight, BGR: true,
		Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
}

// Reference runs the detector and the recogniser straight through ONNX
// Runtime (onnxruntime_go sessions of its own, no engine: no Arrow, no
// batcher, no dataflow, no NATS) with the same recipes and decoding as the
// engine's steps: what the engine's answers are checked against, row for
// row, and what its added time is measured against.
type Reference struct {
	det, rec *ort.DynamicAdvancedSession
	DetPrep  ml.ImagePrep
	RecPrep  ml.ImagePrep
	DB       ml.DBConfig
	Dict     ml.CTCDictionary
	classes  int
	labels   []int32
	scratch  *image.RGBA
}

// NewReference opens the two networks from dir with threads intra-op
// threads each (0: ONNX Runtime's default).
func NewReference(dir string, detSide, recWidth, threads int) (*Reference, error) {
	if _, err := onnx.Open(""); err != nil {
		return nil, err
	}
	dict, err := os.ReadFile(dir + "/" + DictionaryFile)
	if err != nil {
		return nil, err
	}
	r := &Reference{DetPrep: DetPrep(detSide), RecPrep: RecPrep(recWidth), DB: ml.DBConfig{}.Defaults()}
	if r.Dict, err = ml.ParseCTCDictionary(string(dict)); err != nil {
		return nil, err
	}
	r.classes = len(r.Dict) + 2
	open := func(f string) (*ort.DynamicAdvancedSession, error) {
		opts, err := ort.NewSessionOptions()
		if err != nil {
			return nil, err
		}
		defer opts.Destroy()
		if threads > 0 {
			if err := opts.SetIntraOpNumThreads(threads); err != nil {
				return nil, err
			}
		}
		in, out, err := ort.GetInputOutputInfo(dir + "/" + f)
		if err != nil {
			return nil, err
		}
		return ort.NewDynamicAdvancedSession(dir+"/"+f, []string{in[0].Name}, []string{out[0].Name}, opts)
	}
	if r.det, err = open(DetectorFile); err != nil {
		return nil, err
	}
	if r.rec, err = open(RecogniserFile); err != nil {
		r.det.Destroy()
		return nil, err
	}
	return r, nil
}

// Close frees the sessions.
func (r *Reference) Close() {
	r.det.Destroy()
	r.rec.Destroy()
}

// Detect finds the boxes of one encoded image.
func (r *Reference) Detect(b []byte) (image.Image, []ml.Box, error) {
	img, err := ml.DecodeImage(b)
	if err != nil {
		return nil, nil, err
	}
	p := r.DetPrep
	x := make([]float32, 3*p.Height*p.Width)
	var pl ml.Placed
	pl, r.scratch = p.Fill(x, img, r.scratch)
	prob, _, err := r.run(r.det, []int64{1, 3, int64(p.Height), int64(p.Width)}, x)
	if err != nil {
		return nil, nil, err
	}
	var boxes []ml.Box
	boxes, r.labels = ml.DBBoxes(prob, p.Width, p.Height, pl, r.DB, r.labels)
	return img, boxes, nil
}

// Recognise reads the text in box b of img.
func (r *Reference) Recognise(img image.Image, boxes []ml.Box) ([]string, []float32, error) {
	if len(boxes) == 0 {
		return nil, nil, nil
	}
	p := r.RecPrep
	size := 3 * p.Height * p.Width
	x := make([]float32, len(boxes)*size)
	for i, b := range boxes {
		o := img.Bounds().Min
		rect := image.Rect(o.X+b.X0, o.Y+b.Y0, o.X+b.X1, o.Y+b.Y1)
		crop := image.NewRGBA(image.Rect(0, 0, rect.Dx(), rect.Dy()))
		draw.Draw(crop, crop.Bounds(), img, rect.Min, draw.Src)
		_, r.scratch = p.Fill(x[i*size:(i+1)*size], crop, r.scratch)
	}
	probs, shape, err := r.run(r.rec, []int64{int64(len(boxes)), 3, int64(p.Height), int64(p.Width)}, x)
	if err != nil {
		return nil, nil, err
	}
	k := int(shape[2])
	if k != r.classes {
		return nil, nil, fmt.Errorf("recogniser: %d classes, the dictionary gives %d", k, r.classes)
	}
	row := int(shape[1]) * k
	texts := make([]string, len(boxes))
	confs := make([]float32, len(boxes))
	var sb strings.Builder
	for i := range boxes {
		texts[i], confs[i] = ml.CTCGreedy(probs[i*row:(i+1)*row], k, r.Dict, &sb)
	}
	return texts, confs, nil
}

// Read runs both networks on one scene.
func (r *Reference) Read(id int64, b []byte) ([]Read, error) {
	img, boxes, err := r.Detect(b)
	if err != nil {
		return nil, err
	}
	texts, confs, err := r.Recognise(img, boxes)
	if err != nil {
		return nil, err
	}
	out := make([]Read, len(boxes))
	for i, bx := range boxes {
		out[i] = Read{ID: id, X0: bx.X0, Y0: bx.Y0, X1: bx.X1, Y1: bx.Y1, Score: bx.Score, Text: texts[i], Confidence: confs[i]}
	}
	return out, nil
}

// run calls s on one input tensor and returns its first output's values
// and shape.
func (r *Reference) run(s *ort.DynamicAdvancedSession, shape []int64, x []float32) ([]float32, []int64, error) {
	in, err := ort.NewTensor(ort.NewShape(shape...), x)
	if err != nil {
		return nil, nil, err
	}
	defer in.Destroy()
	outs := []ort.Value{nil}
	if err := s.Run([]ort.Value{in}, outs); err != nil {
		return nil, nil, err
	}
	defer outs[0].Destroy()
	t, ok := outs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, nil, fmt.Errorf("output is %T, want float32", outs[0])
	}
	return append([]float32(nil), t.GetData()...), t.GetShape(), nil
}
