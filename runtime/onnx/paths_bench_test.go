package onnx

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/tierflow/tierflow/operators/ml"
)

// BenchmarkPaths splits the engine's per-batch time for logreg at batch 8 into
// its layers, as P50s of thread CPU time with the paths interleaved: the bare
// onnxruntime_go Run (bare: outputs made by onnxruntime_go; bare-own-out: over
// a Go slice, as the operator's scratch), Session.Run (the shared value cache
// under its mutex), a fork's Run (what a Model calls), Model.Infer (Arrow in
// and out) and, inside Infer, the session call alone (infer-inner-run, which
// pays for two more clock reads), and Infer with a session that does nothing
// (infer-nop: the Arrow side alone, run after the other paths' ONNX Runtime
// calls have taken the caches, as it is in the engine).
//
//	go test ./runtime/onnx -run x -bench Paths -benchtime 20000x
func BenchmarkPaths(b *testing.B) {
	e := testEnv(b)
	path := filepath.Join("..", "..", "examples", "fashion", "models", "logreg.onnx")
	s, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 8
	rowShape := s.Inputs()[0].Shape[1:]
	data := make([]float32, batch*784)
	for i := range data {
		data[i] = float32(i%13) / 13
	}
	mem := memory.NewGoAllocator()
	col, _ := ml.NewTensorColumn(mem, rowShape, data)
	schema := arrow.NewSchema([]arrow.Field{ml.TensorField("x", rowShape)}, nil)
	rec := array.NewRecord(schema, []arrow.Array{col}, batch)
	vals, _, _ := ml.TensorValues(rec.Column(0))
	bare, err := newBareRun(s, vals, batch)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.destroy()
	out := make([]float32, batch*10)
	inShape := append([]int64{batch}, rowShape...)
	ins := []ml.Tensor{{DType: ml.Float32, Shape: inShape, F32: vals}}
	outs := []ml.Tensor{{DType: ml.Float32, Shape: []int64{batch, 10}, F32: out}}
	now, _ := clockFunc("thread")
	tw := &timedSession{Session: s.Fork(), now: now}
	m, err := ml.Bind(tw, schema, ml.Config{Input: "x", Heads: []ml.Head{{Kind: ml.Classify, Output: s.Outputs()[0].Name}}, MaxBatch: 64})
	if err != nil {
		b.Fatal(err)
	}
	bare2, err := newBareRun(s, vals, batch)
	if err != nil {
		b.Fatal(err)
	}
	defer bare2.destroy()
	ti, _ := ort.NewTensor(ort.Shape(inShape), vals)
	to, _ := ort.NewTensor(ort.Shape{batch, 10}, out)
	bare3 := &bareRun{s: s, vals: []ort.Value{ti, to}}
	defer bare3.destroy()
	fk := s.Fork()
	nm, err := ml.Bind(nopSession{s}, schema, ml.Config{Input: "x", Heads: []ml.Head{{Kind: ml.Classify, Output: s.Outputs()[0].Name}}, MaxBatch: 64})
	if err != nil {
		b.Fatal(err)
	}
	paths := []func() error{
		bare.run,
		func() error {
			o, err := nm.Infer(mem, rec)
			if err == nil {
				o.Release()
			}
			return err
		},
		bare3.run,
		func() error { return s.Run(ins, outs) },
		func() error { return fk.Run(ins, outs) },
		func() error {
			o, err := m.Infer(mem, rec)
			if err == nil {
				o.Release()
			}
			return err
		},
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ts := make([][]time.Duration, len(paths))
	for i := 0; i < b.N+20; i++ {
		for k := range paths {
			k := (k + i) % len(paths)
			t0 := now()
			if err := paths[k](); err != nil {
				b.Fatal(err)
			}
			if i >= 20 {
				ts[k] = append(ts[k], now()-t0)
			}
		}
	}
	for k, name := range []string{"bare-ns", "infer-nop-ns", "bare-own-out-ns", "session-ns", "fork-ns", "infer-ns"} {
		b.ReportMetric(float64(p50(ts[k])), name)
	}
	b.ReportMetric(float64(p50(tw.ts)), "infer-inner-run-ns")
}

type timedSession struct {
	ml.Session
	now func() time.Duration
	ts  []time.Duration
}

func (t *timedSession) Run(in, out []ml.Tensor) error {
	t0 := t.now()
	err := t.Session.Run(in, out)
	t.ts = append(t.ts, t.now()-t0)
	return err
}

// nopSession has the model's signature and does nothing (no Fork: Bind
// must not run the model through it).
type nopSession struct{ s *Session }

func (n nopSession) Inputs() []ml.TensorInfo     { return n.s.Inputs() }
func (n nopSession) Outputs() []ml.TensorInfo    { return n.s.Outputs() }
func (nopSession) Run(in, out []ml.Tensor) error { return nil }
