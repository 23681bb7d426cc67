package inference

import (
	"context"
	"path/filepath"
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

// sizedModel is examples/fashion/sizes.yaml's zoo: one classifier per input
// size.
func sizedModel() *catalog.Model {
	pos := catalog.Pos{File: filepath.Join(fashionDir, "sizes.yaml")}
	return &catalog.Model{Name: "classify_sized", Variants: []*catalog.Variant{
		{Name: "fit-14", File: "models/fit-14.onnx", Accuracy: 84.31, InputSize: []int{14, 14}, Pos: pos},
		{Name: "fit-28", File: "models/fit-28.onnx", Accuracy: 89, InputSize: []int{28, 28}, Pos: pos},
	}}
}

var classScore = []arrow.Field{{Name: "label", Type: arrow.PrimitiveTypes.Int64}, {Name: "score", Type: arrow.PrimitiveTypes.Float32}}

// classes collects the class index column of the results.
type classes struct{ got []int64 }

func (l *classes) Write(rec arrow.Record) error {
	col := rec.Column(int(rec.NumCols()) - 2).(*array.Int64)
	for i := 0; i < col.Len(); i++ {
		l.got = append(l.got, col.Value(i))
	}
	return nil
}
func (l *classes) Close() error { return nil }

func sizedLabels(t *testing.T, variant string) []int64 {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	scan := shelfScan(t)
	lat := logical.NewLateralModel(scan, sizedModel(), "classify",
		[]expr.Expr{&expr.Column{Index: 1, Name: "image", DataType: scan.Schema().Field(1).Type}}, "c", classScore, logical.Pos{})
	rt := New(Config{Variants: map[string]string{"classify": variant}, Batch: ml.BatchConfig{MaxBatch: 16}})
	out := &classes{}
	q, err := exec.Build(&logical.Plan{Root: &logical.Sink{Input: lat}}, exec.Options{Allocator: mem, Output: out, Lateral: rt.Lateral, BatchSize: 300})
	if err != nil {
		t.Fatalf("variant %s: %v", variant, err)
	}
	if _, err := q.Run(context.Background()); err != nil {
		t.Fatalf("variant %s: %v", variant, err)
	}
	return out.got
}

// A variant with a smaller input size than the column's images (fit-14 on
// a 28x28 stream) runs on the images area-resized to its size, as it was
// trained: it agrees with the full-size variant on most rows. Without the
// resize the call would not even bind (14x14 input, 28x28 column).
func TestLateralResizesToTheVariantsInputSize(t *testing.T) {
	small, full := sizedLabels(t, "fit-14"), sizedLabels(t, "fit-28")
	if len(small) != 2000 || len(full) != 2000 {
		t.Fatalf("%d and %d rows, want 2000", len(small), len(full))
	}
	same := 0
	for i := range small {
		if small[i] == full[i] {
			same++
		}
	}
	// Both are right on 84-89% of rows; resizing wrongly (or not at all)
	// gives chance agreement.
	if same < 1500 {
		t.Fatalf("fit-14 agrees with fit-28 on %d of 2000 rows", same)
	}
	t.Logf("fit-14 agrees with fit-28 on %d of 2000 rows", same)
}
