package inference

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// The VQA-shaped test model: feature [N,4] and speech [N,3] are concatenated,
// then Gemm to three answers and Softmax.
var (
	vqaW = []float32{ // [3,7], row-major, as Gemm with transB=1 wants
		1, 0, 0, 0, 0.5, 0, 0,
		0, 1, 0, 0, 0, 0.5, 0,
		0, 0, 1, 1, 0, 0, 0.5,
	}
	vqaB    = []float32{0.1, 0, -0.1}
	answers = []string{"yes", "no", "maybe"}
)

// writeVQAModel writes the two-input model with the zoo's ONNX writer.
func writeVQAModel(t *testing.T, dir string) string {
	t.Helper()
	n := modelzoo.Dim{Param: "N"}
	g := &modelzoo.Graph{
		Name: "vqa",
		Inputs: []modelzoo.ValueInfo{
			{Name: "feature", Shape: []modelzoo.Dim{n, {Value: 4}}},
			{Name: "speech", Shape: []modelzoo.Dim{n, {Value: 3}}},
		},
		Outputs: []modelzoo.ValueInfo{{Name: "probs", Shape: []modelzoo.Dim{n, {Value: 3}}}},
		Initializers: []modelzoo.Initializer{
			{Name: "w", Dims: []int64{3, 7}, Data: vqaW},
			{Name: "b", Dims: []int64{3}, Data: vqaB},
		},
		Nodes: []modelzoo.Node{
			{OpType: "Concat", Name: "concat", Inputs: []string{"feature", "speech"}, Outputs: []string{"x"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}},
			{OpType: "Gemm", Name: "fc", Inputs: []string{"x", "w", "b"}, Outputs: []string{"logits"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("transB", 1)}},
			{OpType: "Softmax", Name: "softmax", Inputs: []string{"logits"}, Outputs: []string{"probs"}, Attrs: []modelzoo.Attr{modelzoo.IntAttr("axis", 1)}},
		},
		Metadata: map[string]string{ml.LabelsKey: strings.Join(answers, ",")},
	}
	path := filepath.Join(dir, "vqa.onnx")
	if err := g.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// vqaAnswer is the model's answer computed in Go: the argmax of the logits
// (Softmax keeps the order).
func vqaAnswer(feature, speech []float32) string {
	x := append(append([]float32(nil), feature...), speech...)
	best, bv := 0, float32(0)
	for c := 0; c < 3; c++ {
		v := vqaB[c]
		for k, xv := range x {
			v += vqaW[c*7+k] * xv
		}
		if c == 0 || v > bv {
			best, bv = c, v
		}
	}
	return answers[best]
}

func vqaFeature(i int) []float32 {
	return []float32{float32(i % 5), float32((i * 3) % 7), float32(i%2) * 2, 0.25}
}

func vqaSpeech(i int) []float32 {
	return []float32{float32((i * 7) % 3), float32(i % 4), float32((i * 5) % 6)}
}

// writeTensorTable writes rows id, <col> (a tensor of size values, value(i)),
// with the ids in nulls null in the tensor, as an Arrow IPC file.
func writeTensorTable(t *testing.T, path, col string, size, rows int, value func(int) []float32, nulls map[int]bool) {
	t.Helper()
	mem := memory.NewGoAllocator()
	// The element type is nullable, as the catalog's TENSOR(FLOAT, n) is.
	tf := ml.TensorField(col, []int64{int64(size)})
	tf.Type = arrow.FixedSizeListOf(int32(size), arrow.PrimitiveTypes.Float32)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, tf}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		tb := b.Field(1).(*array.FixedSizeListBuilder)
		if nulls[i] {
			tb.AppendNull()
			continue
		}
		tb.Append(true)
		tb.ValueBuilder().(*array.Float32Builder).AppendValues(value(i), nil)
	}
	rec := b.NewRecord()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// answerRows collects (id, answer) rows; a null answer is "<null>".
type answerRows struct{ got map[int64]string }

func (a *answerRows) Write(rec arrow.Record) error {
	ids := rec.Column(0).(*array.Int64)
	ans := rec.Column(1).(*array.String)
	for i := 0; i < int(rec.NumRows()); i++ {
		v := "<null>"
		if ans.IsValid(i) {
			v = ans.Value(i)
		}
		a.got[ids.Value(i)] = v
	}
	return nil
}
func (a *answerRows) Close() error { return nil }

// TestTwoInputModelQuery runs VQA(img.feature, q.speech) over a join of two
// files through the SQL front end, the executor and ONNX Runtime, and checks
// every answer against the same model computed in Go; a null in either input
// fails that row only.
func TestTwoInputModelQuery(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	model := writeVQAModel(t, dir)
	const rows = 150
	nullF, nullS := map[int]bool{7: true}, map[int]bool{42: true, 99: true}
	writeTensorTable(t, filepath.Join(dir, "images.arrow"), "feature", 4, rows, vqaFeature, nullF)
	writeTensorTable(t, filepath.Join(dir, "questions.arrow"), "speech", 3, rows, vqaSpeech, nullS)
	script := fmt.Sprintf(`
CREATE MODEL VQA TASK 'visual-question-answering'
  INPUTS (feature TENSOR(FLOAT, 4), speech TENSOR(FLOAT, 3))
  OUTPUTS (answer VARCHAR)
  VARIANTS (tiny FROM '%s');
CREATE TABLE images (id BIGINT, feature TENSOR(FLOAT, 4)) FROM FILE '%s' FORMAT ARROW;
CREATE TABLE questions (id BIGINT, speech TENSOR(FLOAT, 3)) FROM FILE '%s' FORMAT ARROW;
SELECT q.id, a.answer
FROM questions AS q
JOIN images AS img ON q.id = img.id
CROSS JOIN LATERAL VQA(img.feature, q.speech) AS a(answer);
`, model, filepath.Join(dir, "images.arrow"), filepath.Join(dir, "questions.arrow"))
	rt := New(Config{Batch: ml.BatchConfig{MaxBatch: 16}})
	out := &answerRows{got: map[int64]string{}}
	err := exec.RunScript(context.Background(), filepath.Join(dir, "vqa.sql"), script, exec.ScriptOptions{
		Options:   exec.Options{Allocator: mem, Lateral: rt.Lateral, BatchSize: 40},
		NewOutput: func() (sinks.Writer, error) { return out, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if ch := rt.Choices(); len(ch) != 1 || ch[0].Variant != "tiny" || !strings.HasPrefix(ch[0].Provider, "cpu") {
		t.Fatalf("choices %+v", ch)
	}
	if len(out.got) != rows {
		t.Fatalf("%d rows, want %d", len(out.got), rows)
	}
	seen := map[string]int{}
	for i := 0; i < rows; i++ {
		got := out.got[int64(i)]
		want := vqaAnswer(vqaFeature(i), vqaSpeech(i))
		if nullF[i] || nullS[i] {
			want = "<null>"
		}
		if got != want {
			t.Errorf("id %d: answer %s, want %s", i, got, want)
		}
		seen[got]++
	}
	if len(seen) < 3 {
		t.Errorf("answers %v: the data should exercise several classes", seen)
	}
}

// TestTwoInputModelErrors: the arguments are checked against the model's
// inputs when the query is built, naming the argument, the input and both
// shapes.
func TestTwoInputModelErrors(t *testing.T) {
	dir := t.TempDir()
	model := writeVQAModel(t, dir)
	writeTensorTable(t, filepath.Join(dir, "t.arrow"), "feature", 4, 3, vqaFeature, nil)
	run := func(call string) error {
		script := fmt.Sprintf(`
CREATE MODEL VQA OUTPUTS (answer VARCHAR) VARIANTS (tiny FROM '%s');
CREATE TABLE t (id BIGINT, feature TENSOR(FLOAT, 4)) FROM FILE '%s' FORMAT ARROW;
SELECT t.id, a.answer FROM t CROSS JOIN LATERAL %s AS a(answer);
`, model, filepath.Join(dir, "t.arrow"), call)
		rt := New(Config{})
		return exec.RunScript(context.Background(), filepath.Join(dir, "q.sql"), script, exec.ScriptOptions{
			Options:   exec.Options{Allocator: memory.NewGoAllocator(), Lateral: rt.Lateral},
			NewOutput: func() (sinks.Writer, error) { return &answerRows{got: map[int64]string{}}, nil },
		})
	}
	err := run("VQA(t.feature, t.feature)")
	if !errors.Is(err, ml.ErrSchema) || !strings.Contains(err.Error(), `argument 2 (column "feature")`) ||
		!strings.Contains(err.Error(), "speech float32[N,3]") || !strings.Contains(err.Error(), "[4]") {
		t.Errorf("wrong shape for the second input: %v", err)
	}
	err = run("VQA(t.feature, t.feature, t.feature)")
	if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "3 arguments for a model with 2 inputs") {
		t.Errorf("three arguments: %v", err)
	}
	err = run("VQA(t.feature, 3)")
	if !errors.Is(err, ErrModel) {
		t.Errorf("a constant where a tensor goes: %v", err)
	}
}

// TestProfileTwoInputModel profiles the two-input model on a labelled data
// set (its answers must match the Go computation) and on made-up inputs
// (latency and output size only).
func TestProfileTwoInputModel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	writeVQAModel(t, dir)
	m := &catalog.Model{Name: "VQA",
		Inputs:   []catalog.Column{{Name: "feature", Type: "TENSOR(FLOAT, 4)"}, {Name: "speech", Type: "TENSOR(FLOAT, 3)"}},
		Outputs:  []catalog.Column{{Name: "answer", Type: "VARCHAR"}},
		Variants: []*catalog.Variant{{Name: "tiny", File: "vqa.onnx", Pos: catalog.Pos{File: filepath.Join(dir, "catalog.yaml")}}}}
	env, err := onnx.Open("")
	if err != nil {
		t.Fatal(err)
	}

	const rows = 40
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		ml.TensorField("speech", []int64{3}), ml.TensorField("feature", []int64{4}), // not in input order: found by name
	}, nil))
	for i := 0; i < rows; i++ {
		for k, v := range [][]float32{vqaSpeech(i), vqaFeature(i)} {
			fb := b.Field(k).(*array.FixedSizeListBuilder)
			fb.Append(true)
			fb.ValueBuilder().(*array.Float32Builder).AppendValues(v, nil)
		}
	}
	data := &Data{Path: "mem", Record: b.NewRecord()}
	b.Release()
	defer data.Release()
	p := &Profiler{Env: env, Mem: mem, Data: data, Iterations: 3, Warmup: 1}
	vp, err := p.Variant(m, m.Variants[0], []int{1, 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vp.Predicted) != rows || len(vp.Latency) != 2 || vp.Latency[1].Batch != 8 || vp.Latency[1].P50 <= 0 {
		t.Fatalf("profile %+v", vp)
	}
	for i, got := range vp.Predicted {
		if want := vqaAnswer(vqaFeature(i), vqaSpeech(i)); got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}

	p.Data = nil // made-up inputs of the declared shapes
	vp, err = p.Variant(m, m.Variants[0], []int{4, 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vp.Latency) != 2 || vp.Latency[1].Batch != 100 || vp.OutputKB <= 0 || len(vp.Predicted) != 100 {
		t.Fatalf("synthetic profile %+v", vp)
	}
	m.Inputs = m.Inputs[:1]
	if _, err := p.Variant(m, m.Variants[0], []int{4}, nil); !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), "declares 1 inputs") {
		t.Errorf("one declared input for two: %v", err)
	}
	m.Inputs = nil // the model's own names and shapes
	if _, err := p.Variant(m, m.Variants[0], []int{4}, nil); err != nil {
		t.Errorf("undeclared inputs: %v", err)
	}
}

// TestCallBatchOptions: a call's WITH (max_batch, max_delay_ms) overrides the
// runtime's batching for that call only, and the rows still come out right.
func TestCallBatchOptions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	model := writeVQAModel(t, dir)
	writeTensorTable(t, filepath.Join(dir, "t.arrow"), "feature", 4, 30, vqaFeature, nil)
	writeTensorTable(t, filepath.Join(dir, "q.arrow"), "speech", 3, 30, vqaSpeech, nil)
	script := fmt.Sprintf(`
CREATE MODEL VQA OUTPUTS (answer VARCHAR) VARIANTS (tiny FROM '%s');
CREATE TABLE t (id BIGINT, feature TENSOR(FLOAT, 4)) FROM FILE '%s' FORMAT ARROW;
CREATE TABLE q (id BIGINT, speech TENSOR(FLOAT, 3)) FROM FILE '%s' FORMAT ARROW;
SELECT q.id, a.answer FROM q JOIN t ON q.id = t.id
CROSS JOIN LATERAL VQA(t.feature, q.speech) WITH (max_batch = 4, max_delay_ms = 1.5) AS a(answer);
SELECT q.id, a.answer FROM q JOIN t ON q.id = t.id CROSS JOIN LATERAL VQA(t.feature, q.speech) AS a(answer);
`, model, filepath.Join(dir, "t.arrow"), filepath.Join(dir, "q.arrow"))
	var log strings.Builder
	rt := New(Config{Batch: ml.BatchConfig{MaxBatch: 16}, Log: &log})
	var outs []*answerRows
	err := exec.RunScript(context.Background(), filepath.Join(dir, "q.sql"), script, exec.ScriptOptions{
		Options: exec.Options{Allocator: mem, Lateral: rt.Lateral},
		NewOutput: func() (sinks.Writer, error) {
			outs = append(outs, &answerRows{got: map[int64]string{}})
			return outs[len(outs)-1], nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := rt.Choices()
	if len(ch) != 2 || ch[0].Batch.MaxBatch != 4 || ch[0].Batch.MaxDelay != 1500*time.Microsecond ||
		ch[1].Batch.MaxBatch != 16 || ch[1].Batch.MaxDelay != DefaultMaxDelay {
		t.Fatalf("choices %+v", ch)
	}
	if !strings.Contains(log.String(), "max batch 4, max delay 1.5ms") {
		t.Errorf("log: %s", log.String())
	}
	for k, out := range outs {
		for i := 0; i < 30; i++ {
			if got, want := out.got[int64(i)], vqaAnswer(vqaFeature(i), vqaSpeech(i)); got != want {
				t.Errorf("query %d id %d: %s, want %s", k, i, got, want)
			}
		}
	}
}

// TestCatalogBatchDefaults: a catalog model's max_batch and max_delay_ms are
// its calls' batching over the runtime's, and a call's WITH still wins.
func TestCatalogBatchDefaults(t *testing.T) {
	dir := t.TempDir()
	model := writeVQAModel(t, dir)
	writeTensorTable(t, filepath.Join(dir, "t.arrow"), "feature", 4, 10, vqaFeature, nil)
	writeTensorTable(t, filepath.Join(dir, "q.arrow"), "speech", 3, 10, vqaSpeech, nil)
	cat, err := catalog.Parse("c.yaml", []byte(fmt.Sprintf(`
models:
  - name: VQA
    inputs: [{name: feature, type: "TENSOR(FLOAT, 4)"}, {name: speech, type: "TENSOR(FLOAT, 3)"}]
    outputs: [{name: answer, type: VARCHAR}]
    max_batch: 8
    max_delay_ms: 2
    variants: [{name: tiny, file: %q, accuracy: 50, output_kb: 0.01, latency_ms: {x2: {p50: 1, p75: 1, p90: 1}}}]
`, model)))
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`
CREATE TABLE t (id BIGINT, feature TENSOR(FLOAT, 4)) FROM FILE '%s' FORMAT ARROW;
CREATE TABLE q (id BIGINT, speech TENSOR(FLOAT, 3)) FROM FILE '%s' FORMAT ARROW;
SELECT q.id, a.answer FROM q JOIN t ON q.id = t.id CROSS JOIN LATERAL VQA(t.feature, q.speech) AS a(answer);
SELECT q.id, a.answer FROM q JOIN t ON q.id = t.id CROSS JOIN LATERAL VQA(t.feature, q.speech) WITH (max_batch = 4) AS a(answer);
`, filepath.Join(dir, "t.arrow"), filepath.Join(dir, "q.arrow"))
	rt := New(Config{Batch: ml.BatchConfig{MaxBatch: 16}})
	err = exec.RunScript(context.Background(), filepath.Join(dir, "q.sql"), script, exec.ScriptOptions{
		Options:   exec.Options{Lateral: rt.Lateral},
		Catalog:   cat,
		NewOutput: func() (sinks.Writer, error) { return &answerRows{got: map[int64]string{}}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := rt.Choices()
	if len(ch) != 2 || ch[0].Batch.MaxBatch != 8 || ch[0].Batch.MaxDelay != 2*time.Millisecond ||
		ch[1].Batch.MaxBatch != 4 || ch[1].Batch.MaxDelay != 2*time.Millisecond {
		t.Fatalf("choices %+v: want the catalog's 8 and 2 ms, then the call's 4", ch)
	}
}
