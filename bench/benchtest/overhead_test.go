package benchtest_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tierflow/tierflow/bench/inference"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
)

func TestMeasureOverheadRows(t *testing.T) {
	e := testEnv(t)
	m := modelzoo.NewMLP([]int{784, 32, 10}, nil, 3)
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := m.Graph("m", 28).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var progress []string
	rows, err := inference.MeasureOverhead(e, inference.OverheadConfig{Variant: "m", Model: path, Batches: []int{1, 4}, Iters: 20,
		Progress: func(s string) { progress = append(progress, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].Batch != 4 || rows[0].Variant != "m" || len(progress) != 2 {
		t.Fatalf("rows %+v progress %v", rows, progress)
	}
	for _, r := range rows {
		if r.EngineMS <= 0 || r.BareMS <= 0 {
			t.Errorf("row %+v", r)
		}
	}
}

// BenchmarkOverhead reports the ML operator's per-batch overhead over a bare ONNX
// Runtime call for the checked-in fashion variants (see `tierflow bench inference`).
func BenchmarkOverhead(b *testing.B) {
	e := testEnv(b)
	for _, v := range []string{"logreg", "mlp-small", "mlp-large"} {
		path := filepath.Join("..", "..", "examples", "fashion", "models", v+".onnx")
		for _, batch := range []int{1, 8, 32, 64} {
			b.Run(v+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				rows, err := inference.MeasureOverhead(e, inference.OverheadConfig{Variant: v, Model: path, Batches: []int{batch}, Iters: max(b.N, 50)})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(rows[0].EngineMS, "engine-ms")
				b.ReportMetric(rows[0].BareMS, "bare-ms")
				b.ReportMetric(100*rows[0].Overhead, "overhead-%")
			})
		}
	}
}

// testEnv is the process's ONNX Runtime (the setup cache's library).
func testEnv(t testing.TB) *onnx.Env {
	t.Helper()
	e, err := onnx.Open("")
	if err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	return e
}
