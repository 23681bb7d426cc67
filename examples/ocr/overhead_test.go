package ocr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/pixels"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// cpuTime is the process's user and system time so far: ONNX Runtime's
// threads included, so the work of a pipeline that overlaps its stages
// counts in full.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// frameFeed is the source of a running query that the benchmark hands one
// frame at a time, as a camera's frames come to a stream source: Next
// waits for the next record, and ends the stream when the feed is closed.
type frameFeed struct {
	schema *arrow.Schema
	in     chan arrow.Record
	done   chan struct{}
}

func (f *frameFeed) Schema() *arrow.Schema { return f.schema }

func (f *frameFeed) Next(memory.Allocator) (arrow.Record, error) {
	select {
	case r := <-f.in:
		return r, nil
	case <-f.done:
		return nil, nil
	}
}

func (f *frameFeed) Close() error { return nil }

// frame builds the stream's record of one scene at event time ts (the
// declared columns: id, ts, image, truth).
func (f *frameFeed) frame(mem memory.Allocator, s *Scene, ts time.Time) arrow.Record {
	b := array.NewRecordBuilder(mem, f.schema)
	defer b.Release()
	for i, fd := range f.schema.Fields() {
		switch fb := b.Field(i).(type) {
		case *array.Int64Builder:
			fb.Append(s.ID)
		case *array.TimestampBuilder:
			unit := fd.Type.(*arrow.TimestampType).Unit
			v, _ := arrow.TimestampFromTime(ts, unit)
			fb.Append(v)
		case *array.BinaryBuilder:
			fb.Append(s.Bytes)
		case *array.StringBuilder:
			fb.Append(s.Truth())
		default:
			fb.AppendNull()
		}
	}
	return b.NewRecord()
}

// frameSink is the query's output (JSON lines, what a stream's sink
// sends), counting the rows written and telling the
// benchmark each advance of the sink's frontier, past which every row of
// the earlier epochs has been written (a frame without text gives no row,
// and is done all the same).
type frameSink struct {
	sinks.Writer
	rows     atomic.Int64
	frontier chan dataflow.Epoch
}

func (w *frameSink) WriteEpoch(_ int, _ dataflow.Epoch, rec arrow.Record) error {
	w.rows.Add(rec.NumRows())
	return w.Writer.Write(rec)
}

func (w *frameSink) Commit(_ int, frontier dataflow.Epoch) error {
	w.frontier <- frontier
	return nil
}

// BenchmarkEngineVsBareOnnxRuntime measures the engine's added time per
// frame on the scene-text workflow, side by side in one process. The bare
// side is the ONNX Runtime pipeline of Reference (decode, resize, the
// detector, the DB decode, crops cut from the decoded frame, the
// recogniser, CTC). The engine's side is ci.sql's query, running for the
// whole benchmark over a stream source the benchmark feeds (the source,
// the model operators with their decode/resize and post steps, crop_image
// as a SQL function cutting each crop as raw pixels, the recogniser's step
// reading them, the JSON sink): a frame's time there is from handing it to
// the source to its last row written. Both make the same calls: the
// detector on one frame, the recogniser on one crop (max batch 1, one
// intra-op thread, the same session options).
//
// The two sides alternate frame by frame (A/B, then B/A for the next
// frame), so a loaded machine's slow moments fall on both alike; a round
// is every frame once on each side, and its ratio is engine/bare over the
// round (1.05 is 5% added). The benchmark reports the median, least and
// greatest of the rounds' ratios, of wall time and of the process's CPU
// time. One warm-up round runs first, unmeasured (sessions open, the
// detector's dynamic sides probed, buffers grown). The engine's frame
// cache is emptied before each of its frames: a camera's frames are new
// to it, and the bare side decodes every frame. No set-up is subtracted:
// the query is deployed once, as a stream's query is. Variants:
// det-<side>, rec-<width> of OCR_BENCH_DET and OCR_BENCH_REC (default
// det-320, rec-160, the cheapest pair, where a fixed per-frame cost
// weighs most). CPU profiles split the sides by the pprof label side
// (-tagfocus side=engine).
//
//	go test ./examples/ocr -run '^$' -bench EngineVsBare -benchtime 9x
func BenchmarkEngineVsBareOnnxRuntime(b *testing.B) {
	dir := modelDir(b)
	det, rec := 320, 160
	if s := os.Getenv("OCR_BENCH_DET"); s != "" {
		fmt.Sscan(s, &det)
	}
	if s := os.Getenv("OCR_BENCH_REC"); s != "" {
		fmt.Sscan(s, &rec)
	}
	const frames = 8
	sc := scenes(b)[:frames]
	ref, err := NewReference(dir, det, rec, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	bare := func(s *Scene) int {
		img, boxes, err := ref.Detect(s.Bytes)
		if err != nil {
			b.Fatal(err)
		}
		for i := range boxes {
			if _, _, err := ref.Recognise(img, boxes[i:i+1]); err != nil {
				b.Fatal(err)
			}
		}
		return len(boxes)
	}

	cat, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range cat.Models {
		m.MaxBatch = 1
	}
	// The scenes come from a stream the benchmark feeds, not the file.
	st := cat.Stream("scenes")
	if st == nil {
		b.Fatal("catalog.yaml declares no stream scenes")
	}
	st.Source = "nats"
	src, err := os.ReadFile("ci.sql")
	if err != nil {
		b.Fatal(err)
	}
	// Its rows go to a stream's sink, as a stream query's do: the sink
	// operator writes them, and tells the frontier, to frameSink.
	cat.Sinks = append(cat.Sinks, &catalog.Sink{Name: "reads", Kind: "nats", Target: "ocr.reads", Format: "json"})
	script := bytes.Replace(src, []byte("WHERE s.id < 4"), []byte("WHERE s.id >= 0"), 1)
	script = bytes.Replace(script, []byte("SELECT s.id"), []byte("INSERT INTO reads SELECT s.id"), 1)
	if !bytes.Contains(script, []byte("INSERT INTO reads SELECT s.id")) || !bytes.Contains(script, []byte("WHERE s.id >= 0")) {
		b.Fatal("ci.sql no longer selects s.id first and ends in WHERE s.id < 4")
	}
	feed := &frameFeed{in: make(chan arrow.Record), done: make(chan struct{})}
	out := &frameSink{frontier: make(chan dataflow.Epoch, 1024)}
	rt := inference.New(inference.Config{Device: onnx.CPU, IntraOpThreads: 1, FixedBatch: true,
		Batch:    ml.BatchConfig{MaxBatch: 1, MaxDelay: time.Nanosecond},
		Variants: map[string]string{"detect": fmt.Sprintf("det-%d", det), "recognize": fmt.Sprintf("rec-%d", rec)}})
	mem := memory.NewGoAllocator()
	opts := exec.Options{Allocator: mem, BaseDir: ".", Lateral: rt.Lateral, BatchSize: 1,
		Stream: func(_ *catalog.Stream, schema *arrow.Schema, _ []int, et sources.EventTime, report *sources.Report) (func() (dataflow.Operator, error), error) {
			feed.schema = schema
			return func() (dataflow.Operator, error) { return sources.NewSource(feed, et, report), nil }, nil
		},
		Sink: func(_ *catalog.Sink, _ *arrow.Schema) (sinks.Writer, error) {
			var err error
			out.Writer, err = sinks.New("json", io.Discard)
			return out, err
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	// The engine's goroutines inherit the label of the one that starts them.
	go pprof.Do(ctx, pprof.Labels("side", "engine"), func(ctx context.Context) {
		ran <- exec.RunScript(ctx, "ci.sql", string(script), exec.ScriptOptions{
			Options: opts, Catalog: cat,
		})
	})
	defer func() {
		close(feed.done)
		if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
			b.Error(err)
		}
	}()
	ts := StreamEpoch
	// engine hands s to the source and waits for the sink's frontier to
	// pass its epoch: the source sends a frame at the watermark of the
	// frames before it (their latest event time, in microseconds) and then
	// moves its own to the frame's, so the sink's frontier reaching the
	// frame's event time says every row of the frame has been written.
	engine := func(s *Scene) int {
		// The frames are new to the engine each time, as a camera's are:
		// the worker's frame cache would otherwise hand it the last
		// round's decoded frame, which the bare pipeline decodes.
		pixels.Shared.Reset()
		ts = ts.Add(FrameInterval)
		before := out.rows.Load()
		r := feed.frame(mem, s, ts)
		select {
		case feed.in <- r:
		case err := <-ran:
			b.Fatalf("the query ended before its frames: %v", err)
		}
		for want := dataflow.Epoch(ts.UnixMicro()); ; {
			select {
			case f := <-out.frontier:
				if f >= want {
					return int(out.rows.Load() - before)
				}
			case err := <-ran:
				b.Fatalf("the query ended before scene %d was through: %v", s.ID, err)
			case <-time.After(time.Minute):
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
				b.Fatalf("scene %d not through after a minute (%d rows written, the sink's frontier short of %d)", s.ID, out.rows.Load()-before, want)
			}
		}
	}
	bareCtx := pprof.WithLabels(ctx, pprof.Labels("side", "bare"))

	// Warm-up, and the boxes each frame gives (the engine must give as many
	// rows: the row-for-row check is TestEngineMatchesBareOnnxRuntime's).
	pprof.SetGoroutineLabels(bareCtx)
	for _, s := range sc {
		if n, m := bare(s), engine(s); n != m {
			b.Fatalf("scene %d: bare ONNX Runtime reads %d boxes, the engine %d", s.ID, n, m)
		}
	}

	type side struct{ wall, cpu time.Duration }
	var bareAll, engAll side
	var wallRatios, cpuRatios, wallPairs, cpuPairs []float64
	timed := func(acc *side, f func()) side {
		w, c := time.Now(), cpuTime()
		f()
		d := side{time.Since(w), cpuTime() - c}
		acc.wall += d.wall
		acc.cpu += d.cpu
		return d
	}
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		var br, er side
		for i, s := range sc {
			var bd, ed side
			runs := []func(){
				func() { bd = timed(&br, func() { bare(s) }) },
				func() { ed = timed(&er, func() { engine(s) }) },
			}
			// A/B then B/A: neither side always follows the other.
			first := (round + i) % 2
			runs[first]()
			runs[1-first]()
			wallPairs = append(wallPairs, float64(ed.wall)/float64(bd.wall))
			if bd.cpu > 0 {
				cpuPairs = append(cpuPairs, float64(ed.cpu)/float64(bd.cpu))
			}
		}
		wallRatios = append(wallRatios, float64(er.wall)/float64(br.wall))
		if br.cpu > 0 {
			cpuRatios = append(cpuRatios, float64(er.cpu)/float64(br.cpu))
		}
		bareAll.wall, bareAll.cpu = bareAll.wall+br.wall, bareAll.cpu+br.cpu
		engAll.wall, engAll.cpu = engAll.wall+er.wall, engAll.cpu+er.cpu
	}
	b.StopTimer()
	pprof.SetGoroutineLabels(ctx)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N*frames) }
	b.ReportMetric(per(bareAll.wall), "bare-ms/frame")
	b.ReportMetric(per(engAll.wall), "engine-ms/frame")
	b.ReportMetric(per(bareAll.cpu), "bare-cpu-ms/frame")
	b.ReportMetric(per(engAll.cpu), "engine-cpu-ms/frame")
	if l, ok := loadAverage(); ok {
		// What the machine was doing meanwhile: above its cores, wall
		// times say more about the scheduler than about the engine.
		b.ReportMetric(l, "load-avg")
	}
	b.ReportMetric(float64(engAll.wall)/float64(bareAll.wall), "wall-engine/bare")
	if bareAll.cpu > 0 {
		b.ReportMetric(float64(engAll.cpu)/float64(bareAll.cpu), "cpu-engine/bare")
	}
	for _, r := range []struct {
		name string
		xs   []float64
	}{{"wall", wallRatios}, {"cpu", cpuRatios}} {
		if len(r.xs) == 0 {
			continue
		}
		slices.Sort(r.xs)
		b.ReportMetric(median(r.xs), r.name+"-median")
		b.ReportMetric(r.xs[0], r.name+"-min")
		b.ReportMetric(r.xs[len(r.xs)-1], r.name+"-max")
	}
	// The same frame's two runs, next to each other in time: the median of
	// these ratios is the least moved by a load that comes and goes.
	for _, r := range []struct {
		name string
		xs   []float64
	}{{"wall", wallPairs}, {"cpu", cpuPairs}} {
		if len(r.xs) > 0 {
			slices.Sort(r.xs)
			b.ReportMetric(median(r.xs), r.name+"-frame-median")
		}
	}
}

// loadAverage is the machine's load average over the last minute (Linux).
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return 0, false
	}
	return l, true
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
