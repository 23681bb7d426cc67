package inference

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

var fashionDir = filepath.Join("..", "..", "examples", "fashion")

func fashionModel() *catalog.Model {
	pos := catalog.Pos{File: filepath.Join(fashionDir, "catalog.yaml")}
	return &catalog.Model{Name: "classify", Variants: []*catalog.Variant{
		{Name: "logreg", File: "models/logreg.onnx", Accuracy: 84.19, Pos: pos},
		{Name: "mlp-small", File: "models/mlp-small.onnx", Accuracy: 87.02, Pos: pos},
		{Name: "paper", Accuracy: 99}, // no file: cannot run
	}}
}

func TestChooseVariant(t *testing.T) {
	m := fashionModel()
	for _, tc := range []struct {
		op   string
		vars map[string]string
		want string
	}{
		{"classify", nil, "mlp-small"}, // most accurate with a file
		{"c2", map[string]string{"classify": "logreg"}, "logreg"},
		{"c2", map[string]string{"c2": "logreg", "classify": "mlp-small"}, "logreg"}, // operator before model
	} {
		v, err := ChooseVariant(m, tc.op, tc.vars)
		if err != nil || v.Name != tc.want {
			t.Errorf("%s %v: %v %v, want %s", tc.op, tc.vars, v, err, tc.want)
		}
	}
	if _, err := ChooseVariant(m, "classify", map[string]string{"classify": "huge"}); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "huge") {
		t.Errorf("unknown variant: %v", err)
	}
	if _, err := ChooseVariant(&catalog.Model{Name: "x", Variants: []*catalog.Variant{{Name: "a"}}}, "x", nil); !errors.Is(err, ErrModel) {
		t.Errorf("no file: %v", err)
	}
}

func TestModelFile(t *testing.T) {
	m := fashionModel()
	p, err := ModelFile(m.Variants[0], "")
	if err != nil || p != filepath.Join(fashionDir, "models", "logreg.onnx") {
		t.Errorf("next to the catalog: %q %v", p, err)
	}
	v := &catalog.Variant{Name: "v", File: "models/cnn.onnx"}
	if p, err := ModelFile(v, fashionDir); err != nil || p != filepath.Join(fashionDir, "models", "cnn.onnx") {
		t.Errorf("under base: %q %v", p, err)
	}
	v.File = "models/none.onnx"
	if _, err := ModelFile(v, fashionDir); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "none.onnx") {
		t.Errorf("missing: %v", err)
	}
}

type labels struct{ got []string }

func (l *labels) Write(rec arrow.Record) error {
	col := rec.Column(int(rec.NumCols()) - 2).(*array.String)
	for i := 0; i < col.Len(); i++ {
		l.got = append(l.got, col.Value(i))
	}
	return nil
}
func (l *labels) Close() error { return nil }

func shelfScan(t *testing.T) *logical.Scan {
	t.Helper()
	table := &catalog.Table{Name: "shelf", Path: filepath.Join(fashionDir, "data", "shelf.arrow"), Format: "arrow",
		Columns: []catalog.Column{{Name: "id", Type: "BIGINT"}, {Name: "image", Type: "TENSOR(FLOAT, 1, 28, 28)"}}}
	scan, err := logical.NewScan(nil, table, "s", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	return scan
}

var labelScore = []arrow.Field{{Name: "label", Type: arrow.BinaryTypes.String}, {Name: "score", Type: arrow.PrimitiveTypes.Float32}}

// TestLateralRunsTheChosenVariant plans a model call over the fashion stream
// file, runs it through the executor with the hook, and checks the rows come
// out in order with the labels the chosen variant gives on the same records.
func TestLateralRunsTheChosenVariant(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	scan := shelfScan(t)
	lat := logical.NewLateralModel(scan, fashionModel(), "classify",
		[]expr.Expr{&expr.Column{Index: 1, Name: "image", DataType: scan.Schema().Field(1).Type}}, "c", labelScore, logical.Pos{})
	rt := New(Config{Variants: map[string]string{"classify": "logreg"}, Batch: ml.BatchConfig{MaxBatch: 16}})
	out := &labels{}
	q, err := exec.Build(&logical.Plan{Root: &logical.Sink{Input: lat}}, exec.Options{Allocator: mem, Output: out, Lateral: rt.Lateral, BatchSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ch := rt.Choices()
	if len(ch) != 1 || ch[0].Variant != "logreg" || !strings.HasPrefix(ch[0].Provider, "cpu") || ch[0].Batch.MaxBatch != 16 {
		t.Fatalf("choices %+v", ch)
	}
	if len(out.got) != 2000 {
		t.Fatalf("%d rows", len(out.got))
	}
	// The same model on the same rows, called directly.
	data, err := LoadData(filepath.Join(fashionDir, "data", "shelf.arrow"), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Release()
	p := &Profiler{Env: rt.env, Mem: mem, Data: data}
	m := fashionModel()
	m.Inputs = []catalog.Column{{Name: "image"}}
	m.Outputs = []catalog.Column{{Name: "label", Type: "VARCHAR"}, {Name: "score", Type: "FLOAT"}}
	vp, err := p.Variant(m, m.Variants[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range out.got {
		if out.got[i] != vp.Predicted[i] {
			t.Fatalf("row %d: query %s, direct %s", i, out.got[i], vp.Predicted[i])
		}
	}
}

func TestLateralErrors(t *testing.T) {
	scan := shelfScan(t)
	rt := New(Config{})
	lit := logical.NewLateralModel(scan, fashionModel(), "classify", []expr.Expr{&expr.Literal{Value: int64(1), DataType: arrow.PrimitiveTypes.Int64}}, "c", labelScore, logical.Pos{})
	if _, _, err := rt.Lateral(lit, scan.Schema()); !errors.Is(err, ErrModel) {
		t.Errorf("literal argument: %v", err)
	}
	img := []expr.Expr{&expr.Column{Index: 1, Name: "image", DataType: scan.Schema().Field(1).Type}}
	emb := logical.NewLateralModel(scan, fashionModel(), "classify", img, "c",
		[]arrow.Field{ml.TensorField("vec", []int64{3})}, logical.Pos{})
	if _, _, err := rt.Lateral(emb, scan.Schema()); !errors.Is(err, ml.ErrSchema) || !strings.Contains(err.Error(), "classify") {
		t.Errorf("output the model lacks: %v", err)
	}
}
