package inference

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/runtime/inference/sched"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// latencyCall runs the fashion size zoo's fit-28 as a LATENCY-bound model
// call (the runtime's Lateral, a real ONNX Runtime session) over recs, in
// that order, through a dataflow, and returns every row's class and the
// operator's counters. The bound is loose so that no batch is dropped.
func latencyCall(t *testing.T, mem memory.Allocator, recs []arrow.Record) ([]int64, map[string]int64) {
	t.Helper()
	scan := shelfScan(t)
	lat := logical.NewLateralModel(scan, sizedZoo(), "classify",
		[]expr.Expr{&expr.Column{Index: 1, Name: "image", DataType: scan.Schema().Field(1).Type}}, "c", classScore, logical.Pos{})
	rt := New(Config{Variants: map[string]string{"classify": "fit-28"}, Device: onnx.CPU, IntraOpThreads: 1,
		Batch: ml.BatchConfig{MaxBatch: 64}, Tenant: sched.Tenant{Query: "q", Latency: time.Minute}})
	newOp, _, err := rt.Lateral(lat, recs[0].Schema())
	if err != nil {
		t.Fatal(err)
	}
	var op dataflow.Operator
	var got builtin.Captured
	defer got.Release()
	batches := make([]dataflow.Batch, len(recs))
	for i, r := range recs {
		r.Retain()
		batches[i] = dataflow.Batch{Epoch: dataflow.Epoch(i + 1), Record: r}
	}
	g := &dataflow.Graph{Query: "aligned"}
	src := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewSliceSource(batches), nil }})
	call := g.AddOperator(dataflow.OperatorSpec{Name: "classify", Inputs: 1, Outputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) {
			var err error
			op, err = newOp()
			return op, err
		}})
	sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{0},
		New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(&got, 0), nil }})
	g.Connect(src, 0, call, 0)
	g.Connect(call, 0, sink, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	var labels []int64
	for _, b := range got.Batches() {
		col := b.Record.Column(2).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			labels = append(labels, col.Value(i))
		}
	}
	return labels, op.(dataflow.Counting).Counters()
}

// slicesOf cuts rec into records of at most n rows (each its own reference).
func slicesOf(rec arrow.Record, n int64) []arrow.Record {
	var out []arrow.Record
	for i := int64(0); i < rec.NumRows(); i += n {
		out = append(out, rec.NewSlice(i, min(i+n, rec.NumRows())))
	}
	return out
}

// TestLatencyCallRunsRowsOnTheVariantOfTheirSide: under a LATENCY bound
// the source sends frames at 28, 20 or 14 as its link allows; a fit-28
// call runs the rows sent at 14x14 on fit-14 (the zoo's variant trained on
// them), not on fit-28 with the rows resized up (Jellyfish 2.3). On the
// Fashion-MNIST test frames the call's classes are then fit-14's on the
// 14x14 frames, row for row, and more often right than fit-28's on them
// upscaled; full-side rows in the same batches still get fit-28's. The
// operator counts the rows each variant ran.
func TestLatencyCallRunsRowsOnTheVariantOfTheirSide(t *testing.T) {
	z := openZoo(t, 2000)
	mem, env, images, acc := z.mem, z.env, z.images, z.accuracy
	n := len(z.labels)
	full := ml.TensorField("image", []int64{1, 28, 28})
	variable := ml.VariableField(full, []int{28, 20, 14})

	native := sidesRecord(t, mem, images, 14, ml.TensorField("image", []int64{1, 14, 14}))
	want14 := classify(t, env, mem, "fit-14.onnx", native)
	native.Release()
	fixed := sidesRecord(t, mem, images, 28, full)
	want28 := classify(t, env, mem, "fit-28.onnx", fixed)
	fixed.Release()
	sent14 := sidesRecord(t, mem, images, 14, variable)
	defer sent14.Release()
	upscaled := classify(t, env, mem, "fit-28.onnx", sent14) // the model call without side variants

	recs := slicesOf(sent14, 50)
	got, counters := latencyCall(t, mem, recs)
	for _, r := range recs {
		r.Release()
	}
	if len(got) != n {
		t.Fatalf("%d rows answered, want %d", len(got), n)
	}
	for i := range got {
		if got[i] != want14[i] {
			t.Fatalf("row %d: the call says %d, fit-14 on the 14x14 frame %d", i, got[i], want14[i])
		}
	}
	if counters["ran_fit-14"] != int64(n) || counters["ran_fit-28"] != 0 {
		t.Errorf("counters %v, want all %d rows on fit-14", counters, n)
	}
	if a, up := acc(got), acc(upscaled); a <= up {
		t.Errorf("accuracy on 14x14 frames: %.2f%% on fit-14, %.2f%% on fit-28 upscaled", a, up)
	} else {
		t.Logf("%d Fashion-MNIST test frames sent at 14x14 to a fit-28 call: %.2f%% right (run on fit-14), %.2f%% upscaled on fit-28", n, a, up)
	}

	// Batches that mix sides: even rows at 28, odd ones at 14.
	m := min(n, 400)
	b := array.NewRecordBuilder(mem, sent14.Schema())
	var buf []float32
	for i := 0; i < m; i++ {
		side := 28
		if i%2 == 1 {
			side = 14
		}
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		buf = ml.ResizeArea(buf, images[i*784:(i+1)*784], 28, side)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues(buf, nil)
	}
	mixed := b.NewRecord()
	b.Release()
	recs = slicesOf(mixed, 30)
	mixed.Release()
	got, counters = latencyCall(t, mem, recs)
	for _, r := range recs {
		r.Release()
	}
	if len(got) != m {
		t.Fatalf("%d mixed rows answered, want %d", len(got), m)
	}
	for i := range got {
		want, by := want28[i], "fit-28 on the 28x28 frame"
		if i%2 == 1 {
			want, by = want14[i], "fit-14 on the 14x14 frame"
		}
		if got[i] != want {
			t.Fatalf("mixed row %d: the call says %d, %s %d", i, got[i], by, want)
		}
	}
	if counters["ran_fit-14"] != int64(m/2) || counters["ran_fit-28"] != int64(m-m/2) {
		t.Errorf("mixed counters %v, want %d rows on each", counters, m/2)
	}
}
