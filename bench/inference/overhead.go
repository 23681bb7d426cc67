package inference

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	ort "github.com/yalue/onnxruntime_go"
	"golang.org/x/sys/unix"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// OverheadRow is one line of the inference overhead benchmark: the per-batch P50 of
// the ML operator path (Arrow record in -> tensor -> session -> Arrow record out)
// against a bare onnxruntime_go Run of the same session on the same batch with
// tensors made once in advance. Overhead = engine/bare - 1.
type OverheadRow struct {
	Variant  string  `json:"variant"`
	Batch    int     `json:"batch"`
	EngineMS float64 `json:"engine_ms"`
	BareMS   float64 `json:"bare_ms"`
	Overhead float64 `json:"overhead"`
}

// OverheadConfig says what to measure.
type OverheadConfig struct {
	Variant string // name in the rows
	Model   string // ONNX file with one float32 input [N, ...] and a class output
	Batches []int
	Iters   int // timed iterations per batch size and path (default 200)
	Threads int // intra-op threads (default 1: steadier on shared machines)
	// Heads map outputs to columns; nil: a Classify head on the first output.
	Heads    []ml.Head
	Progress func(msg string)
	// Clock is "thread" (default: CPU time of the measuring OS thread, which on
	// a shared machine leaves out the time other processes hold the core; with
	// one intra-op thread ONNX Runtime computes on the calling thread) or "wall".
	Clock string
}

// MeasureOverhead runs the benchmark. The two paths alternate iteration by
// iteration so that drift in machine load hits both alike. Both run the same
// record every iteration: the bare path on tensors made once, the engine on the
// ONNX Runtime values its Session cached for the record's buffer on the first
// call. A stream of fresh input buffers also pays for making the input value
// each batch (a cgo call and a few ONNX Runtime allocations, 1-2 µs).
func MeasureOverhead(e *onnx.Env, cfg OverheadConfig) ([]OverheadRow, error) {
	if cfg.Iters <= 0 {
		cfg.Iters = 200
	}
	if cfg.Threads == 0 {
		cfg.Threads = 1
	}
	now, err := clockFunc(cfg.Clock)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := e.Session(cfg.Model, onnx.Options{IntraOpThreads: cfg.Threads})
	if err != nil {
		return nil, err
	}
	in := s.Inputs()[0]
	rowShape := slices.Clone(in.Shape[1:])
	rowSize := 1
	for _, d := range rowShape {
		if d < 0 {
			return nil, fmt.Errorf("%w: %s: input %s has a dynamic non-batch dimension", onnx.ErrModel, cfg.Model, in)
		}
		rowSize *= int(d)
	}
	// The baseline is a session of its own on the same model file with the
	// same threads, run by onnxruntime_go directly.
	bs, err := newBareSession(s)
	if err != nil {
		return nil, err
	}
	defer bs.Destroy()
	heads := cfg.Heads
	if heads == nil {
		heads = []ml.Head{{Kind: ml.Classify, Output: s.Outputs()[0].Name}}
	}
	schema := arrow.NewSchema([]arrow.Field{ml.TensorField("x", rowShape)}, nil)
	model, err := ml.Bind(s, schema, ml.Config{Input: "x", Heads: heads, MaxBatch: slices.Max(cfg.Batches), NoErrorColumn: true})
	if err != nil {
		return nil, err
	}
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []OverheadRow
	for _, batch := range cfg.Batches {
		data := make([]float32, batch*rowSize)
		for i := range data {
			data[i] = rng.Float32()
		}
		col, err := ml.NewTensorColumn(mem, rowShape, data)
		if err != nil {
			return nil, err
		}
		rec := array.NewRecord(schema, []arrow.Array{col}, int64(batch))
		col.Release()

		// The bare call reads the very same memory as the operator: the record's
		// tensor column buffer.
		vals, _, err := ml.TensorValues(rec.Column(0))
		if err != nil {
			rec.Release()
			return nil, err
		}
		bare, err := newBareRun(bs, s, vals, batch)
		if err != nil {
			rec.Release()
			return nil, err
		}
		engine := func() error {
			out, err := model.Infer(mem, rec)
			if err != nil {
				return err
			}
			if failed, why := model.Failed(); failed > 0 {
				out.Release()
				return fmt.Errorf("%d rows failed in the benchmark: %s", failed, why)
			}
			out.Release()
			return nil
		}
		// Warm up both paths (first runs allocate arenas and caches).
		for i := 0; i < 10; i++ {
			if err := engine(); err != nil {
				bare.destroy()
				rec.Release()
				return nil, err
			}
			if err := bare.run(); err != nil {
				bare.destroy()
				rec.Release()
				return nil, err
			}
		}
		te := make([]time.Duration, 0, cfg.Iters)
		tb := make([]time.Duration, 0, cfg.Iters)
		for i := 0; i < cfg.Iters; i++ {
			// Alternate which path goes first, so that whatever the first call
			// after the other one pays (caches, branch predictors) falls on both.
			var de, db time.Duration
			var err1, err2 error
			if i%2 == 0 {
				t0 := now()
				err1 = engine()
				t1 := now()
				err2 = bare.run()
				de, db = t1-t0, now()-t1
			} else {
				t0 := now()
				err2 = bare.run()
				t1 := now()
				err1 = engine()
				db, de = t1-t0, now()-t1
			}
			if err1 != nil || err2 != nil {
				bare.destroy()
				rec.Release()
				return nil, fmt.Errorf("batch %d: %v %v", batch, err1, err2)
			}
			te = append(te, de)
			tb = append(tb, db)
		}
		bare.destroy()
		rec.Release()
		pe, pb := p50(te), p50(tb)
		r := OverheadRow{Variant: cfg.Variant, Batch: batch, EngineMS: ms(pe), BareMS: ms(pb), Overhead: float64(pe)/float64(pb) - 1}
		rows = append(rows, r)
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf("%s batch %d: engine %.4f ms, bare %.4f ms, overhead %+.1f%%", cfg.Variant, batch, r.EngineMS, r.BareMS, 100*r.Overhead))
		}
	}
	return rows, nil
}

// bareRun is the baseline: a bare onnxruntime_go session's Run with input
// and output tensors created once, outside the timed loop.
type bareRun struct {
	s    *ort.DynamicAdvancedSession
	vals []ort.Value
}

// newBareSession opens the model of s again as a bare onnxruntime_go
// session with the same inputs, outputs and intra-op threads (the CPU
// provider, as s's default options).
func newBareSession(s *onnx.Session) (*ort.DynamicAdvancedSession, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	if n := s.IntraOpThreads(); n > 0 {
		if err := opts.SetIntraOpNumThreads(n); err != nil {
			return nil, err
		}
	}
	var in, out []string
	for _, t := range s.Inputs() {
		in = append(in, t.Name)
	}
	for _, t := range s.Outputs() {
		out = append(out, t.Name)
	}
	return ort.NewDynamicAdvancedSession(s.Path(), in, out, opts)
}

func newBareRun(bs *ort.DynamicAdvancedSession, s *onnx.Session, data []float32, batch int) (*bareRun, error) {
	b := &bareRun{s: bs}
	in := s.Inputs()[0]
	shape := slices.Clone(in.Shape)
	shape[0] = int64(batch)
	t, err := ort.NewTensor(ort.Shape(shape), data)
	if err != nil {
		return nil, err
	}
	b.vals = append(b.vals, t)
	for _, o := range s.Outputs() {
		shape := slices.Clone(o.Shape)
		shape[0] = int64(batch)
		t, err := ort.NewEmptyTensor[float32](ort.Shape(shape))
		if err != nil {
			b.destroy()
			return nil, err
		}
		b.vals = append(b.vals, t)
	}
	return b, nil
}

func (b *bareRun) run() error { return b.s.Run(b.vals[:1], b.vals[1:]) }

func (b *bareRun) destroy() {
	for _, v := range b.vals {
		v.Destroy()
	}
}

// clockFunc returns the clock the benchmark reads.
func clockFunc(name string) (func() time.Duration, error) {
	switch name {
	case "", "thread":
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			return nil, fmt.Errorf("thread CPU clock: %w", err)
		}
		return func() time.Duration {
			_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
			return time.Duration(ts.Nano())
		}, nil
	case "wall":
		start := time.Now()
		return func() time.Duration { return time.Since(start) }, nil
	}
	return nil, fmt.Errorf("unknown clock %q: want thread or wall", name)
}

func p50(ds []time.Duration) time.Duration {
	c := slices.Clone(ds)
	slices.Sort(c)
	return c[len(c)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
