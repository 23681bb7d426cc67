// Package vqa makes the models and stream files that run examples/vqa (the
// JellyBean prototype's VQA workflow as imported: BLOB columns in and out)
// from examples/vqa-live's: the same networks, behind the typed columns the
// imported catalog declares (runtime/inference's typed calls):
//
//   - ExtractImageFeature takes an image BLOB of 784 bytes, a 28x28 8-bit
//     grayscale picture (uint8 [N,784]), and gives its feature as a BLOB of
//     64 little-endian float32s;
//   - SpeechRecognition takes a speech BLOB of 512 16-bit PCM samples
//     (int16 [N,512], 1,024 bytes) and gives a BLOB of 64 float32s;
//   - VQA takes the two feature BLOBs (float32 [N,64] each) and gives its
//     answer as text (uint8 [N,AnswerLen], NUL-padded: a VARCHAR).
//
// Each wraps a vqa-live network (examples/vqa-live/models) with the
// conversion ops in the graph itself (Cast, scale, Reshape in front; ArgMax
// and a Gather from the answers' bytes behind), so the engine feeds the
// SQL types as they are and the answer depends on each request's image and
// speech. Generate is deterministic: `go run ./examples/vqa/gen`.
package vqa

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	vqalive "github.com/tierflow/tierflow/examples/vqa-live"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// Rows are the requests of the stream files: the first of vqa-live's.
const Rows = 96

// AnswerLen is the bytes of an answer (NUL-padded).
const AnswerLen = 8

// LiveModels is where the wrapped networks are, under the repository root.
const LiveModels = "examples/vqa-live/models"

// Model is one model file of the example: the vqa-live network it wraps.
type Model struct {
	Catalog, File, Live string
}

// Models are the files; the catalog's variants name them (two prototype
// variants may share one: vqa-live has three image networks for five).
var Models = []Model{
	{"ExtractImageFeature", "img-mlp64.onnx", "img-mlp64.onnx"},
	{"ExtractImageFeature", "img-mlp256.onnx", "img-mlp256.onnx"},
	{"ExtractImageFeature", "img-cnn.onnx", "img-cnn.onnx"},
	{"SpeechRecognition", "speech-mlp64.onnx", "speech-mlp64.onnx"},
	{"SpeechRecognition", "speech-mlp384.onnx", "speech-mlp384.onnx"},
	{"VQA", "vqa-mlp64.onnx", "vqa-mlp64.onnx"},
}

// Generate writes models/*.onnx and data/{images,speech}.arrow under dir
// from root (the repository).
func Generate(root, dir string) error {
	for _, m := range Models {
		live, err := modelzoo.ReadGraph(filepath.Join(root, LiveModels, m.Live))
		if err != nil {
			return err
		}
		var g *modelzoo.Graph
		switch m.Catalog {
		case "ExtractImageFeature":
			g, err = bytesIn(live, "image", modelzoo.Uint8, 784, 1.0/255, "extract_image_feature")
		case "SpeechRecognition":
			g, err = bytesIn(live, "speech", modelzoo.Int16, vqalive.SpeechWindow, 1.0/32768, "speech_recognition")
		case "VQA":
			g, err = answerOut(live)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m.File, err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
			return err
		}
		if err := g.WriteFile(filepath.Join(dir, "models", m.File)); err != nil {
			return err
		}
	}
	in, err := vqalive.LoadInputs(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return err
	}
	images := make([][]byte, Rows)
	speech := make([][]byte, Rows)
	for r := range Rows {
		images[r] = make([]byte, 784)
		for i, v := range in.Images[r*784 : (r+1)*784] {
			images[r][i] = byte(math.Round(float64(min(max(v, 0), 1)) * 255))
		}
		w := vqalive.SpeechWindow
		speech[r] = make([]byte, 2*w)
		for i, v := range in.Speech[r*w : (r+1)*w] {
			s := int16(max(-32768, min(32767, math.Round(float64(v)*32768))))
			speech[r][2*i], speech[r][2*i+1] = byte(s), byte(uint16(s)>>8)
		}
	}
	if err := writeStream(filepath.Join(dir, "data", "images.arrow"), "image", images); err != nil {
		return err
	}
	return writeStream(filepath.Join(dir, "data", "speech.arrow"), "speech", speech)
}

// bytesIn puts in front of live's one input a typed input name of elem
// [N, size], cast to float and scaled, reshaped to what live takes; its
// output "feature" becomes out.
func bytesIn(live *modelzoo.Graph, name string, elem modelzoo.ElemType, size int, scale float32, out string) (*modelzoo.Graph, error) {
	if len(live.Inputs) != 1 || len(live.Outputs) < 1 {
		return nil, fmt.Errorf("want one input and a feature output, have %d and %d", len(live.Inputs), len(live.Outputs))
	}
	inner := live.Inputs[0]
	shape := []int64{-1}
	n := int64(1)
	for _, d := range inner.Shape[1:] {
		shape = append(shape, d.Value)
		n *= d.Value
	}
	if n != int64(size) {
		return nil, fmt.Errorf("input %s holds %d values, want %d", inner.Name, n, size)
	}
	g := &modelzoo.Graph{Name: live.Name, Metadata: live.Metadata, Initializers: live.Initializers}
	renameInputs(live, inner.Name, "typed.float")
	g.Initializers = append(g.Initializers,
		modelzoo.Initializer{Name: "typed.scale", Dims: []int64{1}, Data: []float32{scale}},
		modelzoo.Initializer{Name: "typed.shape", Dims: []int64{int64(len(shape))}, Elem: modelzoo.Int64, Raw: int64Bytes(shape...)})
	g.Nodes = append([]modelzoo.Node{
		{OpType: "Cast", Name: "typed.cast", Inputs: []string{name}, Outputs: []string{"typed.cast"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("to", int64(modelzoo.Float))}},
		{OpType: "Mul", Name: "typed.scale", Inputs: []string{"typed.cast", "typed.scale"}, Outputs: []string{"typed.scaled"}},
		{OpType: "Reshape", Name: "typed.reshape", Inputs: []string{"typed.scaled", "typed.shape"}, Outputs: []string{"typed.float"}},
	}, live.Nodes...)
	g.Inputs = []modelzoo.ValueInfo{{Name: name, Shape: []modelzoo.Dim{{Param: "N"}, {Value: int64(size)}}, Elem: elem}}
	feature := live.Outputs[0]
	renameOutputs(g, feature.Name, out)
	g.Outputs = []modelzoo.ValueInfo{{Name: out, Shape: feature.Shape}}
	return g, nil
}

// answerOut renames live's two inputs to the catalog's and puts behind its
// probabilities the answer's text: ArgMax, then a Gather from the answers'
// NUL-padded bytes (its labels metadata).
func answerOut(live *modelzoo.Graph) (*modelzoo.Graph, error) {
	labels := strings.Split(live.Metadata[modelzoo.MetaLabels], ",")
	if len(live.Inputs) != 2 || len(live.Outputs) != 1 || len(labels) < 2 {
		return nil, fmt.Errorf("want two inputs, one output and labels, have %d, %d, %q", len(live.Inputs), len(live.Outputs), labels)
	}
	table := make([]byte, len(labels)*AnswerLen)
	for i, l := range labels {
		if len(l) > AnswerLen {
			return nil, fmt.Errorf("answer %q is longer than %d bytes", l, AnswerLen)
		}
		copy(table[i*AnswerLen:], l)
	}
	g := &modelzoo.Graph{Name: live.Name, Metadata: live.Metadata, Initializers: live.Initializers, Nodes: live.Nodes}
	for i, name := range []string{"extract_image_feature", "speech_recognition"} {
		renameInputs(g, live.Inputs[i].Name, name)
		g.Inputs = append(g.Inputs, modelzoo.ValueInfo{Name: name, Shape: live.Inputs[i].Shape})
	}
	g.Initializers = append(g.Initializers, modelzoo.Initializer{Name: "typed.answers",
		Dims: []int64{int64(len(labels)), AnswerLen}, Elem: modelzoo.Uint8, Raw: table})
	g.Nodes = append(g.Nodes,
		modelzoo.Node{OpType: "ArgMax", Name: "typed.argmax", Inputs: []string{live.Outputs[0].Name}, Outputs: []string{"typed.answer"},
			Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1), modelzoo.IntAttr("keepdims", 0)}},
		modelzoo.Node{OpType: "Gather", Name: "typed.text", Inputs: []string{"typed.answers", "typed.answer"}, Outputs: []string{"vqa"},
			Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 0)}})
	g.Outputs = []modelzoo.ValueInfo{{Name: "vqa", Shape: []modelzoo.Dim{{Param: "N"}, {Value: AnswerLen}}, Elem: modelzoo.Uint8}}
	return g, nil
}

// renameInputs makes every node that reads value from read to.
func renameInputs(g *modelzoo.Graph, from, to string) {
	for i := range g.Nodes {
		for j, in := range g.Nodes[i].Inputs {
			if in == from {
				g.Nodes[i].Inputs[j] = to
			}
		}
	}
}

// renameOutputs makes the node that writes value from write to.
func renameOutputs(g *modelzoo.Graph, from, to string) {
	for i := range g.Nodes {
		for j, o := range g.Nodes[i].Outputs {
			if o == from {
				g.Nodes[i].Outputs[j] = to
			}
		}
	}
}

func int64Bytes(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		for k := range 8 {
			b = append(b, byte(uint64(v)>>(8*k)))
		}
	}
	return b
}

// StreamSchema is a stream file's: request_id BIGINT, col BLOB.
func StreamSchema(col string) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "request_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: col, Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
}

// writeStream writes rows (request i: rows[i]) as an Arrow IPC file of
// records of vqalive.RecordRows rows, as a stream publishes them.
func writeStream(path, col string, rows [][]byte) error {
	schema := StreamSchema(col)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		f.Close()
		return err
	}
	mem := memory.NewGoAllocator()
	for lo := 0; lo < len(rows) && err == nil; lo += vqalive.RecordRows {
		b := array.NewRecordBuilder(mem, schema)
		for r := lo; r < min(lo+vqalive.RecordRows, len(rows)); r++ {
			b.Field(0).(*array.Int64Builder).Append(int64(r))
			b.Field(1).(*array.BinaryBuilder).Append(rows[r])
		}
		rec := b.NewRecord()
		err = w.Write(rec)
		rec.Release()
		b.Release()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
