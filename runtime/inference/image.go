package inference

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
)

// imageCall is how a model called on encoded images (a BLOB column; the
// catalog model's image: recipe) runs: a Pre step decodes and resizes each
// image into the variant's input tensor on the worker that runs the model,
// the session takes tensors of that size (its dynamic dimensions fixed by
// one probe call), and a Post step decodes the raw output into the query's
// rows (the model's decode:), or drops the hidden columns.
type imageCall struct {
	prep    ml.ImagePrep
	session ml.Session // shapes fixed
	// post makes the Post step over the bound model's output schema.
	post func(bound *arrow.Schema) (ml.Step, error)
}

// imagePrep is m's image recipe at variant v's input size.
func imagePrep(m *catalog.Model, v *catalog.Variant) (ml.ImagePrep, error) {
	im := m.Image
	if im == nil {
		return ml.ImagePrep{}, fmt.Errorf("%w: model %s is called on encoded images (a BLOB) but declares no image: recipe (fit, mean, std)", ErrModel, m.Name)
	}
	if len(v.InputSize) != 2 {
		return ml.ImagePrep{}, fmt.Errorf("%w: model %s variant %s: an image model's variant needs input_size: [height, width]", ErrModel, m.Name, v.Name)
	}
	p := ml.ImagePrep{Height: v.InputSize[0], Width: v.InputSize[1], BGR: im.BGR}
	switch im.Fit {
	case "long_side":
		p.Fit = ml.FitLongSide
	case "height":
		p.Fit = ml.FitHeight
	default:
		return ml.ImagePrep{}, fmt.Errorf("%w: model %s: image fit %q (want long_side or height)", ErrModel, m.Name, im.Fit)
	}
	for c := range 3 {
		if len(im.Mean) == 3 {
			p.Mean[c] = float32(im.Mean[c])
		}
		p.Std[c] = 1
		if len(im.Std) == 3 {
			p.Std[c] = float32(im.Std[c])
		}
	}
	return p, p.Check()
}

// newImageCall prepares the call of variant v of m (session sess) whose
// query columns are out.
func newImageCall(m *catalog.Model, v *catalog.Variant, sess ml.Session, out []arrow.Field) (*imageCall, error) {
	prep, err := imagePrep(m, v)
	if err != nil {
		return nil, err
	}
	shaped, err := fixShapes(sess, prep.Shape())
	if err != nil {
		return nil, fmt.Errorf("%w: model %s variant %s: %w", ErrModel, m.Name, v.Name, err)
	}
	c := &imageCall{prep: prep, session: shaped}
	d := m.Decode
	switch {
	case d == nil:
		c.post = func(bound *arrow.Schema) (ml.Step, error) {
			return ml.NewKeepStep(bound, bound.NumFields()-len(out)-2, len(out))
		}
	case d.Kind == "db":
		cfg := ml.DBConfig{Threshold: float32(d.Threshold), BoxThreshold: float32(d.BoxThreshold), UnclipRatio: d.UnclipRatio, MinSize: d.MinSize}
		c.post = func(bound *arrow.Schema) (ml.Step, error) {
			return ml.NewDBStep(bound, bound.NumFields()-3, out, cfg)
		}
	case d.Kind == "ctc":
		dict, err := loadDictionary(d)
		if err != nil {
			return nil, fmt.Errorf("%w: model %s: %w", ErrModel, m.Name, err)
		}
		c.post = func(bound *arrow.Schema) (ml.Step, error) {
			return ml.NewCTCStep(bound, bound.NumFields()-3, out, dict)
		}
	default:
		return nil, fmt.Errorf("%w: model %s: decode kind %q (want db or ctc)", ErrModel, m.Name, d.Kind)
	}
	return c, nil
}

// heads are the Model's heads: the raw first output as a hidden tensor
// column when a decode step reads it, else the query's columns.
func (c *imageCall) heads(m *catalog.Model, out []arrow.Field) ([]ml.Head, error) {
	if m.Decode == nil {
		return ml.PlanHeads(c.session, out)
	}
	return []ml.Head{{Kind: ml.Embed, Output: c.session.Outputs()[0].Name, Columns: []string{ml.RawOutputColumn}}}, nil
}

// loadDictionary reads a CTC dictionary file, relative to the catalog that
// names it.
func loadDictionary(d *catalog.Decode) (ml.CTCDictionary, error) {
	path := d.Dictionary
	if !filepath.IsAbs(path) && d.Pos.File != "" {
		path = filepath.Join(filepath.Dir(d.Pos.File), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ctc dictionary: %w", err)
	}
	return ml.ParseCTCDictionary(string(b))
}

// shapedSession is a session whose dynamic input dimensions (a fully
// convolutional detector's height and width, a recogniser's width) are
// fixed to one row shape, and its outputs' to what that shape gives, so
// the model operator can size its buffers: the input size is the
// variant's.
type shapedSession struct {
	ml.Session
	in, out []ml.TensorInfo
}

// fixShapes fixes s's one input to rows of shape row and finds its
// outputs' row shapes by one call of a zero row.
func fixShapes(s ml.Session, row []int64) (ml.Session, error) {
	ins := s.Inputs()
	if len(ins) != 1 || ins[0].DType != ml.Float32 || len(ins[0].Shape) != len(row)+1 {
		return nil, fmt.Errorf("an image model takes one float32 input [N, %s], this one %v", ml.FormatDims(row), ins)
	}
	for i, d := range ins[0].Shape[1:] {
		if d >= 0 && d != row[i] {
			return nil, fmt.Errorf("input %s takes [%s] at dimension %d, the variant's input_size gives %d", ins[0], ml.FormatShape(ins[0].Shape), i+1, row[i])
		}
	}
	shape := append([]int64{1}, row...)
	n := int64(1)
	for _, d := range row {
		n *= d
	}
	outs := make([]ml.Tensor, len(s.Outputs()))
	for i, o := range s.Outputs() {
		outs[i] = ml.Tensor{DType: o.DType}
	}
	if err := s.Run([]ml.Tensor{{DType: ml.Float32, Shape: shape, F32: make([]float32, n)}}, outs); err != nil {
		return nil, fmt.Errorf("probe call at [%s]: %w", ml.FormatDims(row), err)
	}
	w := &shapedSession{Session: s, in: []ml.TensorInfo{{Name: ins[0].Name, DType: ml.Float32, Shape: append([]int64{-1}, row...)}}}
	for i, o := range s.Outputs() {
		got := slices.Clone(outs[i].Shape)
		if len(got) > 0 {
			got[0] = -1
		}
		w.out = append(w.out, ml.TensorInfo{Name: o.Name, DType: o.DType, Shape: got})
	}
	return w, nil
}

func (s *shapedSession) Inputs() []ml.TensorInfo  { return s.in }
func (s *shapedSession) Outputs() []ml.TensorInfo { return s.out }

// Fork keeps the session's per-caller view (its cached runtime values).
func (s *shapedSession) Fork() ml.Session {
	if f, ok := s.Session.(ml.Forker); ok {
		return &shapedSession{Session: f.Fork(), in: s.in, out: s.out}
	}
	return s
}

// Provider says where the wrapped session runs.
func (s *shapedSession) Provider() string {
	if p, ok := s.Session.(interface{ Provider() string }); ok {
		return p.Provider()
	}
	return ""
}

// imagePipeline is what a model operator runs on a batch of encoded images
// (Lateral's Pre step, model and Post step), for the profiler: its time per
// call is what the planner's profile must hold, decoding and resizing and
// decoding the output included.
type imagePipeline struct {
	pre, post ml.Step
	model     *ml.Model
}

// isImageModel reports a model called on encoded images: one BLOB input and
// an image: recipe.
func isImageModel(m *catalog.Model) bool {
	if m.Image == nil || len(m.Inputs) != 1 {
		return false
	}
	t, err := catalog.ParseType(m.Inputs[0].Type)
	return err == nil && isBinary(t)
}

// bindImage binds variant v of image model m (session sess) to rows of
// schema whose column col holds the images, as Lateral does, in batches of
// at most maxBatch rows.
func bindImage(m *catalog.Model, v *catalog.Variant, sess ml.Session, schema *arrow.Schema, col, maxBatch int) (*imagePipeline, error) {
	outs := make([]arrow.Field, len(m.Outputs))
	for i, c := range m.Outputs {
		f, err := c.Field()
		if err != nil {
			return nil, fmt.Errorf("%w: model %s output %s: %v", ErrProfile, m.Name, c.Name, err)
		}
		outs[i] = f
	}
	ic, err := newImageCall(m, v, sess, outs)
	if err != nil {
		return nil, err
	}
	pre, err := ml.NewImageStep(schema, col, ic.prep)
	if err != nil {
		return nil, err
	}
	heads, err := ic.heads(m, outs)
	if err != nil {
		return nil, err
	}
	in := pre.Schema()
	bm, err := ml.Bind(ic.session, in, ml.Config{Inputs: []string{ml.ImageTensorColumn}, InputIndexes: []int{in.NumFields() - 2},
		Heads: heads, NoErrorColumn: true, MaxBatch: maxBatch})
	if err != nil {
		return nil, fmt.Errorf("model %s variant %s: %w", m.Name, v.Name, err)
	}
	post, err := ic.post(bm.OutputSchema())
	if err != nil {
		return nil, fmt.Errorf("model %s variant %s: %w", m.Name, v.Name, err)
	}
	return &imagePipeline{pre: pre, post: post, model: bm}, nil
}

// run decodes, infers and decodes the output of one batch; the caller
// releases the result (rec's columns, then the model's).
func (p *imagePipeline) run(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	in, err := p.pre.Apply(mem, rec)
	if err != nil {
		return nil, err
	}
	raw, err := p.model.Infer(mem, in)
	in.Release()
	if err != nil {
		return nil, err
	}
	defer raw.Release()
	return p.post.Apply(mem, raw)
}
