package inference

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// sidesRecord is the images (28x28 each) area-resized to side, as the
// column field f carries them: a fixed-size tensor of side x side, or a
// variable-side list (rows at side, resized by the model call to f's
// shape).
func sidesRecord(t *testing.T, mem memory.Allocator, images []float32, side int, f arrow.Field) arrow.Record {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, f}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var buf []float32
	for i := 0; i < len(images)/784; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		buf = ml.ResizeArea(buf, images[i*784:(i+1)*784], 28, side)
		switch fb := b.Field(1).(type) {
		case *array.FixedSizeListBuilder:
			fb.Append(true)
			fb.ValueBuilder().(*array.Float32Builder).AppendValues(buf, nil)
		case *array.ListBuilder:
			fb.Append(true)
			fb.ValueBuilder().(*array.Float32Builder).AppendValues(buf, nil)
		}
	}
	return b.NewRecord()
}

// classify runs variant file over rec (its image column) and returns the
// class of every row (-1 where the row failed).
func classify(t *testing.T, env *onnx.Env, mem memory.Allocator, file string, rec arrow.Record) []int64 {
	t.Helper()
	sess, err := env.Session(filepath.Join(fashionDir, "models", file), onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	heads, err := ml.PlanHeads(sess, classScore)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ml.Bind(sess, rec.Schema(), ml.Config{Input: "image", Heads: heads, MaxBatch: 64})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out, err := m.Infer(mem, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	labels := out.Column(2).(*array.Int64)
	got := make([]int64, labels.Len())
	for i := range got {
		got[i] = -1
		if labels.IsValid(i) {
			got[i] = labels.Value(i)
		}
	}
	return got
}

// zooRun is what the size zoo's tests share: a checked allocator, ONNX
// Runtime and the first n Fashion-MNIST test frames with their labels.
type zooRun struct {
	mem    *memory.CheckedAllocator
	env    *onnx.Env
	images []float32
	labels []uint8
}

// openZoo skips the test without ONNX Runtime; n 0 takes every frame.
func openZoo(t *testing.T, n int) *zooRun {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	env, err := onnx.Open("")
	if err != nil {
		t.Skipf("no ONNX Runtime: %v", err)
	}
	sub, err := fashion.LoadSubset(fashionDir)
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 || n > len(sub.Labels) {
		n = len(sub.Labels)
	}
	return &zooRun{mem: mem, env: env, images: sub.Images[:n*784], labels: sub.Labels[:n]}
}

// accuracy is the percentage of got that are the frames' labels.
func (z *zooRun) accuracy(got []int64) float64 {
	ok := 0
	for i, c := range got {
		if c == int64(z.labels[i]) {
			ok++
		}
	}
	return 100 * float64(ok) / float64(len(got))
}

// TestVariableSidesOnTheZoo runs the fashion size zoo's real ONNX models
// on the Fashion-MNIST test set. Full-side rows of a variable-side column
// (what a LATENCY query's adaptation sends while its link is fast) get
// fit-28's predictions of the fixed-size column, row for row. Rows sent
// at 20 or 14 are resized back up to 28 by the model call (by area); the
// table holds fit-28's accuracy on them (and on bilinear upscaling, for
// comparison) next to fit-20's and fit-14's on the frames they were
// trained for.
func TestVariableSidesOnTheZoo(t *testing.T) {
	n := 0 // all of them
	if testing.Short() {
		n = 2000
	}
	z := openZoo(t, n)
	mem, env, images, acc := z.mem, z.env, z.images, z.accuracy
	full := ml.TensorField("image", []int64{1, 28, 28})
	variable := ml.VariableField(full, []int{28, 20, 14})

	fixedRec := sidesRecord(t, mem, images, 28, full)
	defer fixedRec.Release()
	fullRec := sidesRecord(t, mem, images, 28, variable)
	defer fullRec.Release()
	want, got := classify(t, env, mem, "fit-28.onnx", fixedRec), classify(t, env, mem, "fit-28.onnx", fullRec)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: fit-28 says %d on the full-side variable row, %d on the fixed-size one", i, got[i], want[i])
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d Fashion-MNIST test frames, accuracy %%:\n%-6s %-10s %-18s %-18s\n", n, "side", "native", "fit-28 area up", "fit-28 bilinear up")
	fmt.Fprintf(&table, "%-6d %-10.2f %-18s %-18s\n", 28, acc(want), "-", "-")
	for _, side := range []int{20, 14} {
		small := sidesRecord(t, mem, images, side, ml.TensorField("image", []int64{1, int64(side), int64(side)}))
		native := acc(classify(t, env, mem, fmt.Sprintf("fit-%d.onnx", side), small))
		small.Release()
		rec := sidesRecord(t, mem, images, side, variable)
		area := acc(classify(t, env, mem, "fit-28.onnx", rec))
		rec.Release()
		// Bilinear upscaling: the rows resized up to 28 before the call.
		up := make([]float32, 0, len(images))
		var down []float32
		buf := make([]float32, 784)
		for i := 0; i < n; i++ {
			down = ml.ResizeArea(down, images[i*784:(i+1)*784], 28, side)
			ml.ResizeBilinear(buf, down, side, 28)
			up = append(up, buf...)
		}
		rec = sidesRecord(t, mem, up, 28, full)
		bilinear := acc(classify(t, env, mem, "fit-28.onnx", rec))
		rec.Release()
		fmt.Fprintf(&table, "%-6d %-10.2f %-18.2f %-18.2f\n", side, native, area, bilinear)
		// A broken resize (a transposed or shifted image) falls to chance.
		if area < 60 {
			t.Errorf("fit-28 on %dx%d frames resized up: %.2f%%", side, side, area)
		}
	}
	t.Log(table.String())
}
