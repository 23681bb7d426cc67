package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/examples/ocr"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// TestProfileImageModel profiles the OCR workflow's detector, a model called
// on encoded images (a BLOB input), at two batch sizes and two thread
// counts: each call decodes and resizes real frames, runs PaddleOCR's DB
// network and decodes its map into box rows, as the model operator does.
// The profile of the first thread count is the variant's latency, the other
// its by_threads entry; without --data it says what it needs.
func TestProfileImageModel(t *testing.T) {
	// Beside the drills (see "Drills run in parallel"): an in-process CLI over
	// its own files with no bound on time. Serial, its whole run added to the
	// package's wall time: the parallel tests start after the last serial one.
	t.Parallel()
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("ONNX Runtime library not set up (scripts/setup.sh): %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ocr.CacheDir, ocr.DetectorFile)); err != nil {
		t.Skipf("PaddleOCR models not in the setup cache (%v): run scripts/setup.sh", err)
	}
	dir := t.TempDir()
	// The checked-in catalog's detector with its smallest variant (the
	// others cost the same code, more time), its model file made absolute,
	// beside a three-scene stream.
	src, err := os.ReadFile(filepath.Join(root, "examples", "ocr", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text, _, ok := strings.Cut(string(src), "      - name: det-480")
	if !ok {
		t.Fatal("examples/ocr/catalog.yaml has no det-480 variant")
	}
	cat := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(cat, []byte(strings.ReplaceAll(text, "../../.cache/", root+"/.cache/")), 0o644); err != nil {
		t.Fatal(err)
	}
	scenes, err := ocr.Generate(ocr.Seed, 3)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "scenes.arrow")
	if err := ocr.WriteStream(data, filepath.Join(dir, "labels.json"), scenes, 3); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "profiled.yaml")
	code, stdout, errs := runCLI(t, "", "--catalog", cat, "profile", "--model", "detect", "--data", data,
		"--batch", "1,2", "--at-batch", "1", "--iterations", "1", "--warmup", "0", "--threads", "1,2", "--worker-type", "probe", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	if !strings.Contains(stdout, "THREADS") || !strings.Contains(errs, "det-320, 2 threads") {
		t.Errorf("no thread column or progress:\n%s\n%s", stdout, errs)
	}
	got, err := catalog.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	was, err := catalog.LoadFile(cat)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Model("detect").Variants); n != 1 {
		t.Fatalf("%d detector variants", n)
	}
	for _, v := range got.Model("detect").Variants {
		l, ok := v.Latency["probe"]
		if !ok {
			t.Errorf("%s: no latency for the probe type", v.Name)
			continue
		}
		if l.Threads != 1 || l.P50 <= 0 || len(l.ByBatch) != 2 || l.ByBatch[2].P50 <= 0 {
			t.Errorf("%s: 1-thread profile %+v", v.Name, l)
		}
		l2, ok := l.ByThreads[2]
		if !ok || l2.P50 <= 0 || len(l2.ByBatch) != 2 {
			t.Errorf("%s: 2-thread profile %+v", v.Name, l.ByThreads)
		}
		// A box row is five numbers; the detector's accuracy (lines found)
		// needs the labels, which a BLOB column does not carry: kept.
		if v.OutputKB <= 0 || v.OutputKB > 0.05 {
			t.Errorf("%s: %g KB a box row", v.Name, v.OutputKB)
		}
		if v.Accuracy != was.Model("detect").Variant(v.Name).Accuracy {
			t.Errorf("%s: accuracy %g, the catalog's %g", v.Name, v.Accuracy, was.Model("detect").Variant(v.Name).Accuracy)
		}
	}
	if m := got.Model("detect"); m.Image == nil || m.Decode == nil {
		t.Errorf("the written catalog lost the detector's image/decode recipe")
	}
	code, _, errs = runCLI(t, "", "--catalog", cat, "profile", "--model", "detect", "--batch", "1", "--iterations", "1")
	if code != exitBadInput || !strings.Contains(errs, "give --data") {
		t.Errorf("without --data: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "--catalog", cat, "profile", "--model", "detect", "--data", data, "--threads", "1,x")
	if code != exitBadInput || !strings.Contains(errs, `"x" is not a thread count`) {
		t.Errorf("--threads 1,x: exit %d: %s", code, errs)
	}
}
