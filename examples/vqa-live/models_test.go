package vqalive

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

func loadCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ortEnv opens ONNX Runtime; tests that need it skip without the library.
func ortEnv(t testing.TB) *onnx.Env {
	t.Helper()
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("no ONNX Runtime library (run scripts/setup.sh): %v", err)
	}
	env, err := onnx.Open("")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// streamValues reads a checked-in stream file's tensor column.
func streamValues(t testing.TB, file, col string, size int) []float32 {
	t.Helper()
	v, err := readTensor(memory.NewGoAllocator(), filepath.Join("data", file), col, size)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != Rows*size {
		t.Fatalf("%s: %d rows, want %d", file, len(v)/size, Rows)
	}
	return v
}

// run calls a session on n rows of each input.
func run(t testing.TB, s *onnx.Session, n int, inputs ...[]float32) [][]float32 {
	t.Helper()
	in := make([]ml.Tensor, len(inputs))
	for i, x := range inputs {
		shape := append([]int64{int64(n)}, s.Inputs()[i].Shape[1:]...)
		in[i] = ml.Tensor{DType: ml.Float32, Shape: shape, F32: x[:n*int(product(shape[1:]))]}
	}
	out := make([]ml.Tensor, len(s.Outputs()))
	if err := s.Run(in, out); err != nil {
		t.Fatal(err)
	}
	res := make([][]float32, len(out))
	for i, o := range out {
		res[i] = o.F32
	}
	return res
}

func product(s []int64) int64 {
	p := int64(1)
	for _, d := range s {
		p *= d
	}
	return p
}

// reference evaluates a model file with modelzoo's Go interpreter, which
// shares no code with ONNX Runtime. VQA's Concat is done here: the graph
// after it is evaluated on the joined rows.
func reference(t testing.TB, file string, n int, inputs ...[]float32) []float32 {
	t.Helper()
	g, err := modelzoo.ReadGraph(file)
	if err != nil {
		t.Fatal(err)
	}
	x := inputs[0]
	if len(g.Inputs) == 2 {
		a, b := int(g.Inputs[0].Shape[1].Value), int(g.Inputs[1].Shape[1].Value)
		if g.Nodes[0].OpType != "Concat" {
			t.Fatalf("%s: a two-input model should start with Concat, has %s", file, g.Nodes[0].OpType)
		}
		x = make([]float32, 0, n*(a+b))
		for r := 0; r < n; r++ {
			x = append(append(x, inputs[0][r*a:(r+1)*a]...), inputs[1][r*b:(r+1)*b]...)
		}
		g.Inputs = []modelzoo.ValueInfo{{Name: g.Nodes[0].Outputs[0], Shape: []modelzoo.Dim{{Param: "N"}, {Value: int64(a + b)}}}}
		g.Nodes = g.Nodes[1:]
	}
	y, _, err := modelzoo.Evaluate(g, x, n, g.Outputs[0].Name)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return y
}

func closeTo(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*math.Max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("%s: value %d is %v, Go reference %v", what, i, got[i], want[i])
		}
	}
}

// TestModelsHaveDeclaredShapes opens every variant of the catalog in ONNX
// Runtime, checks its inputs and outputs against the catalog's declared
// types, and checks its outputs on real rows against the Go interpreter of
// the same file. It also checks the variants' cost order: each larger
// variant does more arithmetic than the one before it.
func TestModelsHaveDeclaredShapes(t *testing.T) {
	env := ortEnv(t)
	c := loadCatalog(t)
	images := streamValues(t, "images.arrow", "image", 784)
	speech := streamValues(t, "speech.arrow", "speech", SpeechWindow)
	const n = 48
	features := map[string][]float32{}
	for _, name := range []string{"ExtractImageFeature", "SpeechRecognition", "VQA"} {
		m := c.Model(name)
		if m == nil || len(m.Variants) < 2 {
			t.Fatalf("catalog model %s: %+v, want at least two variants", name, m)
		}
		prevParams := 0
		for _, v := range m.Variants {
			file := filepath.Join(".", v.File)
			s, err := env.Session(file, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
			if err != nil {
				t.Fatalf("%s/%s: %v", name, v.Name, err)
			}
			if len(s.Inputs()) != len(m.Inputs) {
				t.Fatalf("%s/%s: %d inputs, catalog declares %d", name, v.Name, len(s.Inputs()), len(m.Inputs))
			}
			for i, in := range m.Inputs {
				want := append([]int64{-1}, dims(catalog.TensorShape(in.Type))...)
				if got := s.Inputs()[i]; got.Name != in.Name || !slices.Equal(got.Shape, want) {
					t.Errorf("%s/%s input %d: %s, catalog %s %v", name, v.Name, i, got, in.Name, want)
				}
			}
			if len(s.Outputs()) != 1 {
				t.Fatalf("%s/%s: outputs %v, want one", name, v.Name, s.Outputs())
			}
			out := s.Outputs()[0]
			switch shape := catalog.TensorShape(m.Outputs[0].Type); {
			case shape != nil:
				if !slices.Equal(out.Shape, append([]int64{-1}, dims(shape)...)) {
					t.Errorf("%s/%s output %s, catalog %s", name, v.Name, out, m.Outputs[0].Type)
				}
			default: // answer, score: a class output with the answers as labels
				labels, _ := s.Metadata(ml.LabelsKey)
				if !slices.Equal(out.Shape, []int64{-1, int64(len(Answers))}) || labels != strings.Join(Answers, ",") {
					t.Errorf("%s/%s output %s, labels %q", name, v.Name, out, labels)
				}
			}
			var args [][]float32
			switch name {
			case "ExtractImageFeature":
				args = [][]float32{images}
			case "SpeechRecognition":
				args = [][]float32{speech}
			default:
				args = [][]float32{features["ExtractImageFeature"], features["SpeechRecognition"]}
			}
			got := run(t, s, n, args...)[0]
			closeTo(t, name+"/"+v.Name, got, reference(t, file, n, args...))
			if _, ok := features[name]; !ok {
				features[name] = got
			}
			g, err := modelzoo.ReadGraph(file)
			if err != nil {
				t.Fatal(err)
			}
			p := 0
			for _, in := range g.Initializers {
				p += len(in.Data)
			}
			if name != "ExtractImageFeature" && p <= prevParams {
				t.Errorf("%s/%s: %d weights, not more than the variant before (%d)", name, v.Name, p, prevParams)
			}
			prevParams = p
		}
	}
	// Both inputs matter to the answers: they are not all one class.
	probs := run(t, mustSession(t, env, c.Model("VQA").Variants[0].File), n, features["ExtractImageFeature"], features["SpeechRecognition"])[0]
	seen := map[int]bool{}
	for r := 0; r < n; r++ {
		seen[modelzoo.Argmax(probs[r*len(Answers):(r+1)*len(Answers)])] = true
	}
	if len(seen) < 3 {
		t.Errorf("VQA gives %d distinct answers on %d requests", len(seen), n)
	}
}

func mustSession(t testing.TB, env *onnx.Env, file string) *onnx.Session {
	t.Helper()
	s, err := env.Session(file, onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dims(s []int) []int64 {
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = int64(d)
	}
	return out
}

// TestGenerateReproducesCheckedInFiles regenerates every model and stream
// file into a temporary directory and compares bytes with the checked-in
// ones: gen is deterministic and the files are what it writes.
func TestGenerateReproducesCheckedInFiles(t *testing.T) {
	dir := t.TempDir()
	vs, err := Generate(filepath.Join("..", ".."), dir)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"data/images.arrow", "data/speech.arrow"}
	for _, v := range vs {
		files = append(files, "models/"+v.File)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: regenerated file (%d bytes) differs from the checked-in one (%d bytes): run go run ./examples/vqa-live/gen", f, len(got), len(want))
		}
	}
	// The catalog names exactly the generated variants.
	c := loadCatalog(t)
	var names []string
	for _, m := range c.Models {
		for _, v := range m.Variants {
			names = append(names, m.Name+"/"+v.Name+"="+v.File)
		}
	}
	var gen []string
	for _, v := range vs {
		gen = append(gen, v.Model+"/"+v.Name+"=models/"+v.File)
	}
	if !slices.Equal(names, gen) {
		t.Errorf("catalog variants %v, gen writes %v", names, gen)
	}
}

// TestStreamsMatchOneToOne: both stream files hold requests 0..Rows-1 in
// order with the same event times, 40 a second, in records of RecordRows.
func TestStreamsMatchOneToOne(t *testing.T) {
	for _, f := range []string{"images.arrow", "speech.arrow"} {
		recs := readRecords(t, filepath.Join("data", f))
		row := 0
		for _, rec := range recs {
			if rec.NumRows() != RecordRows {
				t.Errorf("%s: a record of %d rows, want %d", f, rec.NumRows(), RecordRows)
			}
			ids := rec.Column(0).(*array.Int64)
			ts := rec.Column(1).(*array.Timestamp)
			for i := 0; i < int(rec.NumRows()); i++ {
				want := StreamEpoch.Add(Interval * time.Duration(row))
				if ids.Value(i) != int64(row) || ts.Value(i) != arrow.Timestamp(want.UnixMicro()) {
					t.Fatalf("%s row %d: request %d at %v, want %d at %v", f, row, ids.Value(i), ts.Value(i), row, want)
				}
				row++
			}
			rec.Release()
		}
		if row != Rows {
			t.Errorf("%s: %d rows, want %d", f, row, Rows)
		}
	}
}
