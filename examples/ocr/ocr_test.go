package ocr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/pixels"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// modelDir is the setup cache's OCR models; the test is skipped without
// them (scripts/setup.sh fetches them).
func modelDir(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", CacheDir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, DetectorFile)); err != nil {
		t.Skipf("PaddleOCR models not in the setup cache (%v): run scripts/setup.sh", err)
	}
	return p
}

// scenes are the checked-in labels with the images of the checked-in stream.
func scenes(t testing.TB) []*Scene {
	t.Helper()
	sc, err := ReadLabels(filepath.Join("data", "labels.json"))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := Generate(Seed, len(sc))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc {
		sc[i].Bytes = gen[i].Bytes
	}
	return sc
}

// reads turns a query's JSON rows into reads.
func reads(t testing.TB, rows []map[string]any) []Read {
	t.Helper()
	var out []Read
	num := func(r map[string]any, k string) float64 {
		v, ok := r[k].(float64)
		if !ok {
			t.Fatalf("row %v: %s is %T", r, k, r[k])
		}
		return v
	}
	for _, r := range rows {
		text, _ := r["text"].(string)
		out = append(out, Read{ID: int64(num(r, "id")), X0: int(num(r, "x0")), Y0: int(num(r, "y0")), X1: int(num(r, "x1")), Y1: int(num(r, "y1")),
			Score: float32(num(r, "score")), Text: text, Confidence: float32(num(r, "confidence"))})
	}
	SortReads(out)
	return out
}

// sameReads checks the engine's reads against the reference's, row for row.
func sameReads(t *testing.T, what string, got, want []Read) {
	t.Helper()
	for _, d := range DiffReads(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

// refReads are the reference pipeline's reads of a scene by a variant pair
// (det, rec, scene ID), read once per test binary: the engine, cluster and
// shaped-link tests compare with the same scenes, and the reference (bare
// ONNX Runtime on one thread) reads a scene the same every time.
var refReads = struct {
	sync.Mutex
	m map[[3]int64][]Read
}{m: map[[3]int64][]Read{}}

// referenceReads runs the reference pipeline over the scenes with id < n,
// as ReferenceReads does, reading only the scenes no test read before.
func referenceReads(t *testing.T, sc []*Scene, n int, det, rec int) []Read {
	t.Helper()
	refReads.Lock()
	defer refReads.Unlock()
	key := func(s *Scene) [3]int64 { return [3]int64{int64(det), int64(rec), s.ID} }
	var missing []*Scene
	for _, s := range sc[:n] {
		if _, ok := refReads.m[key(s)]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		ref, err := NewReference(modelDir(t), det, rec, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		for _, s := range missing {
			rs, err := ref.Read(s.ID, s.Bytes)
			if err != nil {
				t.Fatalf("scene %d: %v", s.ID, err)
			}
			refReads.m[key(s)] = rs
		}
	}
	var want []Read
	for _, s := range sc[:n] {
		want = append(want, refReads.m[key(s)]...)
	}
	SortReads(want)
	return want
}

// runLocal runs a script on the local executor with the given variants.
func runLocal(t *testing.T, script string, variants map[string]string) []map[string]any {
	t.Helper()
	return runLocalWith(t, script, inference.New(inference.Config{Device: onnx.CPU, IntraOpThreads: 1, Variants: variants}))
}

// runLocalWith runs a script on the local executor with runtime rt.
func runLocalWith(t *testing.T, script string, rt *inference.Runtime) []map[string]any {
	t.Helper()
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	return runSourceLocal(t, "catalog.yaml", script, string(src), rt)
}

// runSourceLocal runs src (named script in messages) on the local executor
// with runtime rt and the catalog at catalogPath, its rows as JSON objects.
func runSourceLocal(t *testing.T, catalogPath, script, src string, rt *inference.Runtime) []map[string]any {
	t.Helper()
	cat, err := catalog.LoadFile(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var out bytes.Buffer
	err = exec.RunScript(context.Background(), script, src, exec.ScriptOptions{
		Options: exec.Options{Allocator: mem, BaseDir: ".", Lateral: rt.Lateral, BatchSize: 4},
		Catalog: cat,
		NewOutput: func() (sinks.Writer, error) {
			return sinks.New("json", &out)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return decodeRows(t, &out)
}

func decodeRows(t testing.TB, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var rows []map[string]any
	dec := json.NewDecoder(b)
	for dec.More() {
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows
}

// TestEngineMatchesBareOnnxRuntime: the CI case (ci.sql, the first four
// scenes) through the engine's local executor gives, row for row, the
// boxes, texts and scores of the same two networks run straight through
// ONNX Runtime (det-480 with rec-320; the long suite adds det-320 with
// rec-160 and det-640 with rec-320); and the reads are right against the
// labels.
func TestEngineMatchesBareOnnxRuntime(t *testing.T) {
	modelDir(t)
	sc := scenes(t)
	pairs := []struct{ det, rec int }{{480, 320}}
	if testenv.IsLong() {
		pairs = append(pairs, struct{ det, rec int }{320, 160}, struct{ det, rec int }{640, 320})
	}
	for _, v := range pairs {
		variants := map[string]string{"detect": fmt.Sprintf("det-%d", v.det), "recognize": fmt.Sprintf("rec-%d", v.rec)}
		hits, misses := pixels.Shared.Stats()
		got := reads(t, runLocal(t, "ci.sql", variants))
		want := referenceReads(t, sc, 4, v.det, v.rec)
		sameReads(t, fmt.Sprintf("det-%d rec-%d", v.det, v.rec), got, want)
		// Each frame is decoded once: by the detector's step; crop_image
		// finds it in the worker's frame cache.
		h, m := pixels.Shared.Stats()
		if h-hits < 4 || m-misses > 4 {
			t.Errorf("det-%d rec-%d: the frame cache had %d hits and %d misses over 4 frames: want every frame decoded once (4 misses) and found again by crop_image", v.det, v.rec, h-hits, m-misses)
		}
		if v.det == 480 {
			// det-480 with rec-320 reads all but one of the nine lines of the
			// first four scenes (scene 1's "river" on a busy background is the
			// miss).
			if s := Match(sc[:4], got); s.Correct < s.Lines-1 {
				t.Errorf("det-480 rec-320 read %d of %d lines right: %+v", s.Correct, s.Lines, s)
			}
		}
	}
}

// TestEmbeddedClusterMatchesBareOnnxRuntime: the same on the embedded
// cluster (NATS, coordinator, a worker per tier): the crops cross from the
// detector's worker to the recogniser's as Arrow over NATS.
func TestEmbeddedClusterMatchesBareOnnxRuntime(t *testing.T) {
	modelDir(t)
	sc := scenes(t)
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: "catalog.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src, err := os.ReadFile("ci.sql")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := sinks.New("json", &out)
	if err != nil {
		t.Fatal(err)
	}
	script := deploy.Script{Filename: "ci.sql", Source: string(src), BaseDir: ".", Catalog: "catalog.yaml"}
	info, err := c.Run(ctx, script, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The variants that ran, as the model operators report them.
	var det, rec int
	for _, op := range info.Operators {
		v := op.Attributes["variant"]
		fmt.Sscanf(v, "det-%d", &det)
		fmt.Sscanf(v, "rec-%d", &rec)
	}
	if det == 0 || rec == 0 {
		t.Fatalf("no detector and recogniser variants among the operators %+v", info.Operators)
	}
	sameReads(t, "embedded cluster", reads(t, decodeRows(t, &out)), referenceReads(t, sc, 4, det, rec))
}
