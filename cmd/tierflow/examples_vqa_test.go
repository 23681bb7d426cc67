package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/tierflow/tierflow/examples/vqa"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/onnx"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// vqaDir is examples/vqa from the test's directory. Its tests are here, in
// a test binary that links the engine anyway, not in one of their own.
const vqaDir = "../../examples/vqa"

// TestVQAFilesUpToDate: examples/vqa's checked-in models and stream files
// are what vqa.Generate writes from examples/vqa-live (go run
// ./examples/vqa/gen).
func TestVQAFilesUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := vqa.Generate("../..", dir); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, m := range vqa.Models {
		files = append(files, filepath.Join("models", m.File))
	}
	files = append(files, filepath.Join("data", "images.arrow"), filepath.Join("data", "speech.arrow"))
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(vqaDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("examples/vqa/%s is stale: go run ./examples/vqa/gen", f)
		}
	}
}

// readBlobs reads a stream file's BLOB column.
func readBlobs(t *testing.T, path string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, rec := range readIPCRecords(t, path) {
		col := rec.Column(1).(*array.Binary)
		for j := range col.Len() {
			out = append(out, bytes.Clone(col.Value(j)))
		}
		rec.Release()
	}
	return out
}

// TestVQAAnswersFollowTheData runs examples/vqa's three smallest models on the stream
// files' bytes as the typed columns feed them (uint8 pixels, int16 samples,
// the features' float32s) and checks that the answers are text of the
// answer list and vary with the requests: the models read their inputs.
func TestVQAAnswersFollowTheData(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("no ONNX Runtime library (run scripts/setup.sh): %v", err)
	}
	env, err := onnx.Open("")
	if err != nil {
		t.Fatal(err)
	}
	open := func(file string) *onnx.Session {
		s, err := env.Session(filepath.Join(vqaDir, "models", file), onnx.Options{Device: onnx.CPU})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	img, speech, answer := open("img-mlp64.onnx"), open("speech-mlp64.onnx"), open("vqa-mlp64.onnx")
	images, sounds := readBlobs(t, filepath.Join(vqaDir, "data", "images.arrow")), readBlobs(t, filepath.Join(vqaDir, "data", "speech.arrow"))
	if len(images) != vqa.Rows || len(sounds) != vqa.Rows {
		t.Fatalf("%d images and %d speech windows, want %d", len(images), len(sounds), vqa.Rows)
	}
	run := func(s *onnx.Session, in ...ml.Tensor) ml.Tensor {
		t.Helper()
		outs := []ml.Tensor{{DType: s.Outputs()[0].DType}}
		if err := s.Run(in, outs); err != nil {
			t.Fatal(err)
		}
		return outs[0]
	}
	seen := map[string]int{}
	for r := range vqa.Rows {
		f := run(img, ml.Tensor{DType: ml.Uint8, Shape: []int64{1, 784}, Raw: images[r]})
		q := run(speech, ml.Tensor{DType: ml.Int16, Shape: []int64{1, 512}, Raw: sounds[r]})
		a := run(answer, f, q)
		if a.DType != ml.Uint8 || len(a.Raw) != vqa.AnswerLen {
			t.Fatalf("request %d: answer %v", r, a)
		}
		seen[string(bytes.TrimRight(a.Raw, "\x00"))]++
	}
	if len(seen) < 4 {
		t.Errorf("answers %v: %d distinct over %d requests, the models should follow the data", seen, len(seen), vqa.Rows)
	}
	t.Logf("answers: %v", seen)
}
