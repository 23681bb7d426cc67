// Package vqalive is the runnable twin of examples/vqa: JellyBean's visual
// question answering workflow (an image stream and a speech stream, one model
// each, joined on the request id, then a two-input VQA model) on small ONNX
// models and real data, sized so the whole workflow runs at 40 requests a
// second on a fraction of one core.
//
// It owns the stream layout (Rows requests, one every Interval of event time,
// in records of RecordRows rows), the construction of the model variants
// (Build), the stream files (WriteStreams) and the bytes a row costs on a
// relay link (WireBytes). ./gen writes everything under models/ and data/;
// the files are checked in, so running the example needs neither gen nor its
// inputs. It is an example: nothing imports it.
package vqalive

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// The streams: Rows requests, one every Interval of event time (40 a second),
// written in records of RecordRows rows (the batches that travel the links).
const (
	Rows       = 1152
	RecordRows = 2
	Interval   = 25 * time.Millisecond
)

// StreamEpoch is the event time of request 0.
var StreamEpoch = time.Date(2026, 1, 6, 9, 0, 0, 0, time.UTC)

// Shapes of the tensor columns and of the features the two upstream models
// hand to VQA.
var (
	ImageShape  = []int64{1, 28, 28}
	SpeechShape = []int64{SpeechWindow}
)

// Speech frames: windows of SpeechWindow samples (32 ms at 16 kHz) every
// SpeechHop samples (16 ms), cut from the LibriVox audio of examples/vad.
const (
	SpeechWindow = 512
	SpeechHop    = 256
	FeatureDim   = 64
)

// Answers are VQA's classes in index order (model metadata tierflow.labels).
var Answers = []string{"yes", "no", "top", "trouser", "dress", "coat", "shoe", "bag", "one", "two"}

// Sources are the checked-in files the streams are cut from, relative to the
// repository root.
const (
	FashionStream = "examples/fashion/data/shelf.arrow"
	FashionModels = "examples/fashion/models"
	VADStream     = "examples/vad/data/speech.arrow"
)

// Variant is one model file gen writes.
type Variant struct {
	Model, Name, File string
	// Stands for the prototype's variant whose accuracy it carries.
	Prototype string
	Graph     *modelzoo.Graph
}

// streamSchema is a stream file's schema: request_id, ts and one tensor column.
func streamSchema(col string, shape []int64) *arrow.Schema {
	size := int32(1)
	for _, d := range shape {
		size *= int32(d)
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "request_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: col, Type: arrow.FixedSizeListOf(size, arrow.PrimitiveTypes.Float32), Nullable: true,
			Metadata: arrow.NewMetadata([]string{ml.ShapeKey}, []string{ml.FormatDims(shape)})},
	}, nil)
}

// ImageSchema and SpeechSchema are the two stream files' schemas.
func ImageSchema() *arrow.Schema  { return streamSchema("image", ImageShape) }
func SpeechSchema() *arrow.Schema { return streamSchema("speech", SpeechShape) }

// Inputs are the streams' tensor values, Rows rows each.
type Inputs struct {
	Images []float32 // Rows*784, Fashion-MNIST test images scaled to [0,1]
	Speech []float32 // Rows*SpeechWindow samples in [-1,1)
}

// LoadInputs reads the first Rows images of the fashion stream and cuts Rows
// overlapping speech windows from the VAD stream (whose rows hold 64 samples
// of context and then 512 new ones; the new ones, in order, are the audio).
func LoadInputs(root string) (*Inputs, error) {
	mem := memory.NewGoAllocator()
	img, err := readTensor(mem, filepath.Join(root, FashionStream), "image", 784)
	if err != nil {
		return nil, err
	}
	if len(img) < Rows*784 {
		return nil, fmt.Errorf("%s: %d images, want at least %d", FashionStream, len(img)/784, Rows)
	}
	const vadRow, vadContext = 576, 64
	frames, err := readTensor(mem, filepath.Join(root, VADStream), "audio", vadRow)
	if err != nil {
		return nil, err
	}
	var audio []float32
	for r := 0; r+vadRow <= len(frames); r += vadRow {
		audio = append(audio, frames[r+vadContext:r+vadRow]...)
	}
	if need := (Rows-1)*SpeechHop + SpeechWindow; len(audio) < need {
		return nil, fmt.Errorf("%s: %d samples, want at least %d", VADStream, len(audio), need)
	}
	in := &Inputs{Images: img[:Rows*784], Speech: make([]float32, 0, Rows*SpeechWindow)}
	for i := 0; i < Rows; i++ {
		in.Speech = append(in.Speech, audio[i*SpeechHop:i*SpeechHop+SpeechWindow]...)
	}
	return in, nil
}

// readTensor reads every row of a tensor column of an Arrow IPC file.
func readTensor(mem memory.Allocator, path, col string, size int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	idx := r.Schema().FieldIndices(col)
	if len(idx) != 1 {
		return nil, fmt.Errorf("%s: no column %q", path, col)
	}
	var out []float32
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, i, err)
		}
		vals, n, err := ml.TensorValues(rec.Column(idx[0]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if n != size {
			return nil, fmt.Errorf("%s: column %s has rows of %d values, want %d", path, col, n, size)
		}
		out = append(out, vals[:int(rec.NumRows())*size]...)
	}
	return out, nil
}

// Record builds rows [lo, hi) of a stream as one record.
func Record(mem memory.Allocator, schema *arrow.Schema, values []float32, lo, hi int) arrow.Record {
	size := schema.Field(2).Type.(*arrow.FixedSizeListType).Len()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := lo; i < hi; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(StreamEpoch.Add(time.Duration(i) * Interval).UnixMicro()))
		lb := b.Field(2).(*array.FixedSizeListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues(values[i*int(size):(i+1)*int(size)], nil)
	}
	return b.NewRecord()
}

// WriteStream writes a stream file (Arrow IPC, LZ4) in records of
// RecordRows rows. LZ4, not zstd: Arrow's reader makes a zstd decoder for
// each record, which allocates and clears an 8 MiB window, and the file's
// 576 records of 2 rows cost 0.1-0.2 CPU-seconds a read in zstd, in the
// example's and the tests' processes alike.
func WriteStream(path string, schema *arrow.Schema, values []float32) error {
	mem := memory.NewGoAllocator()
	return sinks.WriteIPCFile(path, schema, mem, func(emit func(arrow.Record) error) error {
		for lo := 0; lo < Rows; lo += RecordRows {
			if err := emit(Record(mem, schema, values, lo, min(lo+RecordRows, Rows))); err != nil {
				return err
			}
		}
		return nil
	}, ipc.WithLZ4())
}

// WireBytes is what one record costs on a NATS relay link, as
// relay/natsrelay meters it: per data message the frame header (for a query
// id of queryLen bytes) and the Arrow IPC record batch message, plus one
// progress frame (the sender's frontier moves after each batch). The schema
// travels once per link and is left out.
func WireBytes(rec arrow.Record, queryLen int) (int, error) {
	enc := frame.NewEncoder(memory.NewGoAllocator())
	defer enc.Reset()
	var buf bytes.Buffer
	if _, err := enc.Encode(&buf, rec); err != nil { // the schema's message
		return 0, err
	}
	buf.Reset()
	if _, err := enc.Encode(&buf, rec); err != nil {
		return 0, err
	}
	h := frame.Header{Kind: frame.KindData, Query: strings.Repeat("q", queryLen)}
	return 2*h.Len() + buf.Len(), nil
}

// QueryIDLen is the length of the coordinator's query ids ("q-1a154858").
const QueryIDLen = 10

// rng is the seeded source of every random weight.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// dense appends Gemm (+ Relu) from value cur to g with He-initialised
// weights (scaled by gain), and returns the new value's name.
func dense(g *modelzoo.Graph, r *rand.Rand, cur, name string, in, out int, relu bool, gain float64) string {
	w := make([]float32, in*out)
	std := gain * math.Sqrt(2/float64(in))
	for i := range w {
		w[i] = float32(r.NormFloat64() * std)
	}
	g.Initializers = append(g.Initializers,
		modelzoo.Initializer{Name: name + ".weight", Dims: []int64{int64(out), int64(in)}, Data: w},
		modelzoo.Initializer{Name: name + ".bias", Dims: []int64{int64(out)}, Data: make([]float32, out)})
	g.Nodes = append(g.Nodes, modelzoo.Node{OpType: "Gemm", Name: name, Inputs: []string{cur, name + ".weight", name + ".bias"},
		Outputs: []string{name}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("transB", 1)}})
	if !relu {
		return name
	}
	g.Nodes = append(g.Nodes, modelzoo.Node{OpType: "Relu", Name: name + "_relu", Inputs: []string{name}, Outputs: []string{name + "_relu"}})
	return name + "_relu"
}

// rename makes the node output from the graph's output named to.
func rename(g *modelzoo.Graph, from, to string) {
	for i := range g.Nodes {
		for j, o := range g.Nodes[i].Outputs {
			if o == from {
				g.Nodes[i].Outputs[j] = to
			}
		}
	}
}

// imageFeatures turns a fashion classifier into a feature extractor: the
// graph up to its "embedding" (the last hidden layer, after ReLU), then,
// when that is wider than FeatureDim, a seeded random projection down to
// FeatureDim. The output is "feature" [N, FeatureDim].
func imageFeatures(src *modelzoo.Graph, name string, seed uint64) (*modelzoo.Graph, error) {
	g := &modelzoo.Graph{Name: name, Inputs: src.Inputs, Metadata: map[string]string{modelzoo.MetaTask: "image-feature-extraction"}}
	used := map[string]bool{}
	found := false
	for _, n := range src.Nodes {
		g.Nodes = append(g.Nodes, n)
		for _, in := range n.Inputs {
			used[in] = true
		}
		if len(n.Outputs) == 1 && n.Outputs[0] == "embedding" {
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no node makes \"embedding\"", src.Name)
	}
	width := 0
	for _, o := range src.Outputs {
		if o.Name == "embedding" {
			width = int(o.Shape[1].Value)
		}
	}
	if width == 0 {
		return nil, fmt.Errorf("%s: no graph output \"embedding\"", src.Name)
	}
	for _, in := range src.Initializers {
		if used[in.Name] {
			g.Initializers = append(g.Initializers, in)
		}
	}
	if width == FeatureDim {
		rename(g, "embedding", "feature")
	} else {
		cur := dense(g, rng(seed), "embedding", "proj", width, FeatureDim, false, 1/math.Sqrt2)
		rename(g, cur, "feature")
	}
	g.Outputs = []modelzoo.ValueInfo{{Name: "feature", Shape: []modelzoo.Dim{{Param: "N"}, {Value: FeatureDim}}}}
	return g, nil
}

// speechFeatures is a seeded random MLP [N, SpeechWindow] -> [N, FeatureDim]
// with the given hidden widths. It is not trained: a stand-in of the
// prototype's wav2vec2 models with a real cost that grows with its widths.
func speechFeatures(name string, hidden []int, seed uint64) *modelzoo.Graph {
	g := &modelzoo.Graph{Name: name, Metadata: map[string]string{modelzoo.MetaTask: "speech-feature-extraction"},
		Inputs: []modelzoo.ValueInfo{{Name: "speech", Shape: []modelzoo.Dim{{Param: "N"}, {Value: SpeechWindow}}}}}
	r := rng(seed)
	cur, in := "speech", SpeechWindow
	for i, h := range hidden {
		cur = dense(g, r, cur, fmt.Sprintf("fc%d", i), in, h, true, 1)
		in = h
	}
	rename(g, dense(g, r, cur, fmt.Sprintf("fc%d", len(hidden)), in, FeatureDim, true, 1), "feature")
	g.Outputs = []modelzoo.ValueInfo{{Name: "feature", Shape: []modelzoo.Dim{{Param: "N"}, {Value: FeatureDim}}}}
	return g
}

// vqa is the two-input answer model: Concat(image_feature, speech_feature)
// -> Gemm+Relu (hidden) -> Gemm -> Softmax over Answers. imgScale and
// speechScale divide the two inputs (folded into the first layer's weights)
// so that each contributes on the same scale. Seeded random, not trained.
func vqa(name string, hidden int, imgScale, speechScale float64, seed uint64) *modelzoo.Graph {
	g := &modelzoo.Graph{Name: name, Metadata: map[string]string{
		modelzoo.MetaTask:   "visual-question-answering",
		modelzoo.MetaLabels: strings.Join(Answers, ","),
	}}
	g.Inputs = []modelzoo.ValueInfo{
		{Name: "image_feature", Shape: []modelzoo.Dim{{Param: "N"}, {Value: FeatureDim}}},
		{Name: "speech_feature", Shape: []modelzoo.Dim{{Param: "N"}, {Value: FeatureDim}}},
	}
	g.Nodes = append(g.Nodes, modelzoo.Node{OpType: "Concat", Name: "concat", Inputs: []string{"image_feature", "speech_feature"},
		Outputs: []string{"joint"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}})
	r := rng(seed)
	cur := dense(g, r, "joint", "fc0", 2*FeatureDim, hidden, true, 1)
	w := g.Initializers[len(g.Initializers)-2].Data
	for o := 0; o < hidden; o++ {
		for i := 0; i < 2*FeatureDim; i++ {
			s := imgScale
			if i >= FeatureDim {
				s = speechScale
			}
			w[o*2*FeatureDim+i] /= float32(s)
		}
	}
	cur = dense(g, r, cur, "fc1", hidden, len(Answers), false, 2)
	g.Nodes = append(g.Nodes, modelzoo.Node{OpType: "Softmax", Name: "softmax", Inputs: []string{cur}, Outputs: []string{"probs"},
		Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}})
	g.Outputs = []modelzoo.ValueInfo{{Name: "probs", Shape: []modelzoo.Dim{{Param: "N"}, {Value: int64(len(Answers))}}}}
	return g
}

// rms is the root mean square of a graph's output on x (n rows).
func rms(g *modelzoo.Graph, x []float32, n int, output string) (float64, error) {
	y, _, err := modelzoo.Evaluate(g, x, n, output)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", g.Name, err)
	}
	var s float64
	for _, v := range y {
		s += float64(v) * float64(v)
	}
	// Rounded to 4 significant digits: the weights must not depend on the
	// last bits of a float sum (FMA contraction differs between platforms).
	r := math.Sqrt(s / float64(len(y)))
	p := math.Pow(10, 3-math.Floor(math.Log10(r)))
	return math.Round(r*p) / p, nil
}

// Build makes every variant, smallest first within each model. The image
// extractors come from the fashion example's trained classifiers (read from
// root/examples/fashion/models); everything else is seeded random, with the
// VQA inputs scaled by the smallest extractors' feature RMS on in.
func Build(root string, in *Inputs) ([]Variant, error) {
	fashion := func(file string) (*modelzoo.Graph, error) {
		return modelzoo.ReadGraph(filepath.Join(root, FashionModels, file))
	}
	var out []Variant
	for i, v := range []struct{ name, file, proto string }{
		{"img-mlp64", "mlp-small.onnx", "resnet18"},
		{"img-mlp256", "mlp-large.onnx", "resnet50"},
		{"img-cnn", "cnn.onnx", "resnet152"},
	} {
		src, err := fashion(v.file)
		if err != nil {
			return nil, err
		}
		g, err := imageFeatures(src, v.name, 100+uint64(i))
		if err != nil {
			return nil, err
		}
		out = append(out, Variant{Model: "ExtractImageFeature", Name: v.name, File: v.name + ".onnx", Prototype: v.proto, Graph: g})
	}
	out = append(out,
		Variant{Model: "SpeechRecognition", Name: "speech-mlp64", File: "speech-mlp64.onnx", Prototype: "wav2vec2-base-960h",
			Graph: speechFeatures("speech-mlp64", []int{64}, 200)},
		Variant{Model: "SpeechRecognition", Name: "speech-mlp384", File: "speech-mlp384.onnx", Prototype: "wav2vec2-large-960h-lv60-self",
			Graph: speechFeatures("speech-mlp384", []int{384, 256}, 201)})
	imgRMS, err := rms(out[0].Graph, in.Images, Rows, "feature")
	if err != nil {
		return nil, err
	}
	speechRMS, err := rms(out[3].Graph, in.Speech, Rows, "feature")
	if err != nil {
		return nil, err
	}
	out = append(out,
		Variant{Model: "VQA", Name: "vqa-mlp64", File: "vqa-mlp64.onnx", Prototype: "default", Graph: vqa("vqa-mlp64", 64, imgRMS, speechRMS, 300)},
		Variant{Model: "VQA", Name: "vqa-mlp256", File: "vqa-mlp256.onnx", Prototype: "default", Graph: vqa("vqa-mlp256", 256, imgRMS, speechRMS, 301)})
	return out, nil
}

// Generate writes models/*.onnx and data/{images,speech}.arrow under dir
// from the checked-in inputs under root (the repository).
func Generate(root, dir string) ([]Variant, error) {
	in, err := LoadInputs(root)
	if err != nil {
		return nil, err
	}
	vs, err := Build(root, in)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"models", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	for _, v := range vs {
		if err := v.Graph.WriteFile(filepath.Join(dir, "models", v.File)); err != nil {
			return nil, err
		}
	}
	if err := WriteStream(filepath.Join(dir, "data", "images.arrow"), ImageSchema(), in.Images); err != nil {
		return nil, err
	}
	if err := WriteStream(filepath.Join(dir, "data", "speech.arrow"), SpeechSchema(), in.Speech); err != nil {
		return nil, err
	}
	return vs, nil
}
