package ocr

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/pixels"
	"github.com/tierflow/tierflow/operators/sinks"
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

// BenchmarkEngineVsBareOnnxRuntime measures the engine's added time per
// frame on the scene-text workflow, side by side in one process: each
// iteration reads the first eight scenes once through the bare ONNX
// Runtime pipeline (Reference: decode, resize, the detector, the DB
// decode, crops cut from the decoded frame, the recogniser, CTC) and once
// through the engine's executor running ci.sql over them (the Arrow
// source, the filter, the model operators with their decode/resize and
// post steps, crop_image as a SQL function that cuts each crop as raw
// pixels and the recogniser's step that reads them, the JSON sink). Both
// make the same calls: the detector on one frame, the recogniser on one
// crop (max batch 1, one intra-op thread), so what differs is the engine.
//
// A query's set-up (planning, opening the two sessions, the detector's
// probe call: about 0.4 s, once per deployment, not per frame) is measured
// in the same iteration by the same query over no scene (WHERE s.id < 0)
// and taken off: the engine's time per frame is the difference over the
// frames. It reports the wall and CPU time per frame of each, their
// ratios over all iterations (engine/bare: 1.05 is 5% added), the median,
// least and greatest of the iterations' own ratios (-benchtime 9x gives
// nine), and the set-up. Variants:
// det-<side>, rec-<width> of OCR_BENCH_DET and OCR_BENCH_REC (default
// det-320, rec-160, the cheapest pair, where a fixed per-frame cost
// weighs most).
//
//	go test ./examples/ocr -run '^$' -bench EngineVsBare -benchtime 5x
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
	bare := func() int {
		n := 0
		for _, s := range sc {
			img, boxes, err := ref.Detect(s.Bytes)
			if err != nil {
				b.Fatal(err)
			}
			for i := range boxes {
				if _, _, err := ref.Recognise(img, boxes[i:i+1]); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		return n
	}
	cat, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range cat.Models {
		m.MaxBatch = 1
	}
	src, err := os.ReadFile("ci.sql")
	if err != nil {
		b.Fatal(err)
	}
	query := func(n int) string {
		q := strings.Replace(string(src), "WHERE s.id < 4", fmt.Sprintf("WHERE s.id < %d", n), 1)
		if q == string(src) {
			b.Fatal("ci.sql no longer ends in WHERE s.id < 4")
		}
		return q
	}
	full, none := query(frames), query(0)
	rt := inference.New(inference.Config{Device: onnx.CPU, IntraOpThreads: 1, FixedBatch: true,
		Batch:    ml.BatchConfig{MaxBatch: 1, MaxDelay: time.Nanosecond},
		Variants: map[string]string{"detect": fmt.Sprintf("det-%d", det), "recognize": fmt.Sprintf("rec-%d", rec)}})
	engine := func(script string) int {
		// The frames are new to the engine each time, as a camera's are:
		// the worker's frame cache would otherwise hand it the last
		// iteration's decoded frames, which the bare pipeline decodes.
		pixels.Shared.Reset()
		var out bytes.Buffer
		err := exec.RunScript(context.Background(), "ci.sql", script, exec.ScriptOptions{
			Options: exec.Options{Allocator: memory.NewGoAllocator(), BaseDir: ".", Lateral: rt.Lateral, BatchSize: 1},
			Catalog: cat,
			NewOutput: func() (sinks.Writer, error) {
				return sinks.New("json", &out)
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		return bytes.Count(out.Bytes(), []byte("\n"))
	}
	// Warm both (sessions opened, the detector's dynamic sides probed) and
	// check they read the same number of boxes.
	if n, m := bare(), engine(full); n != m || n == 0 {
		b.Fatalf("bare ONNX Runtime reads %d boxes, the engine %d", n, m)
	}
	if n := engine(none); n != 0 {
		b.Fatalf("the set-up query read %d boxes", n)
	}
	var bareWall, engWall, setWall, bareCPU, engCPU, setCPU time.Duration
	timed := func(wall, cpu *time.Duration, f func()) func() {
		return func() {
			w, c := time.Now(), cpuTime()
			f()
			*wall += time.Since(w)
			*cpu += cpuTime() - c
		}
	}
	runs := []func(){
		timed(&bareWall, &bareCPU, func() { bare() }),
		timed(&engWall, &engCPU, func() { engine(full) }),
		timed(&setWall, &setCPU, func() { engine(none) }),
	}
	// Each iteration's own ratios: on a shared machine one slow moment
	// moves one iteration, and the median of the iterations' ratios is
	// what the engine adds, their spread how far to trust it.
	var wallRatios, cpuRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bw, ew, sw, bc, ec, sc := bareWall, engWall, setWall, bareCPU, engCPU, setCPU
		// Rotate which goes first: a loaded machine's drift then falls
		// on all alike.
		for j := range runs {
			runs[(i+j)%len(runs)]()
		}
		wallRatios = append(wallRatios, float64((engWall-ew)-(setWall-sw))/float64(bareWall-bw))
		if bareCPU > bc {
			cpuRatios = append(cpuRatios, float64((engCPU-ec)-(setCPU-sc))/float64(bareCPU-bc))
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N*frames) }
	b.ReportMetric(per(bareWall), "bare-ms/frame")
	b.ReportMetric(per(engWall-setWall), "engine-ms/frame")
	b.ReportMetric(float64(setWall.Microseconds())/1000/float64(b.N), "setup-ms/query")
	b.ReportMetric(float64(engWall-setWall)/float64(bareWall), "wall-engine/bare")
	if bareCPU > 0 {
		b.ReportMetric(float64(engCPU-setCPU)/float64(bareCPU), "cpu-engine/bare")
	}
	for _, r := range []struct {
		name string
		xs   []float64
	}{{"wall", wallRatios}, {"cpu", cpuRatios}} {
		if len(r.xs) == 0 {
			continue
		}
		slices.Sort(r.xs)
		b.ReportMetric(r.xs[len(r.xs)/2], r.name+"-median")
		b.ReportMetric(r.xs[0], r.name+"-min")
		b.ReportMetric(r.xs[len(r.xs)-1], r.name+"-max")
	}
}
