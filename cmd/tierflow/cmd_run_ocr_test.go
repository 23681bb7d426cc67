package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/examples/ocr"
	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// TestRunOCRProcesses runs the scene-text workflow (examples/ocr) with
// --processes: each worker of its infra.yaml (an edge box, two cloud
// workers) is a child process, the frames are read and the crops cut on
// the edge, and the crops cross to the recogniser over NATS. Its rows are
// the same networks' run straight through ONNX Runtime without the engine,
// row for row, for the variants the planner chose (as the run reports
// them). The normal suite reads the first two scenes; the long suite runs
// examples/ocr/ci.sql (four).
func TestRunOCRProcesses(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("ONNX Runtime library not set up (scripts/setup.sh): %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(root, ocr.CacheDir)
	if _, err := os.Stat(filepath.Join(models, ocr.DetectorFile)); err != nil {
		t.Skipf("PaddleOCR models not in the setup cache (%v): run scripts/setup.sh", err)
	}
	dir := filepath.Join(root, "examples", "ocr")
	query, n := filepath.Join(dir, "ci.sql"), 4
	if !testenv.IsLong() {
		src, err := os.ReadFile(query)
		if err != nil {
			t.Fatal(err)
		}
		n = 2
		small := strings.Replace(string(src), "WHERE s.id < 4", fmt.Sprintf("WHERE s.id < %d", n), 1)
		if small == string(src) {
			t.Fatal("examples/ocr/ci.sql no longer ends in WHERE s.id < 4")
		}
		query = filepath.Join(t.TempDir(), "ci.sql")
		if err := os.WriteFile(query, []byte(small), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(childEnv, "real")
	// Liveness is not what this test is about: at the default heartbeat a
	// worker silent for 1.5 s is dropped, and beside two CPU hogs the edge
	// worker, busy in its detector, was dropped again and again until the
	// run timed out.
	code, out, errs := runCLI(t, "", "--catalog", filepath.Join(dir, "catalog.yaml"), "--infra", filepath.Join(dir, "infra.yaml"),
		"run", "--processes", "--heartbeat", "3s", "--format", "jsonl", query)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "cluster of worker processes: 3 workers") {
		t.Errorf("not a cluster of worker processes:\n%s", errs)
	}
	// The variants that ran, as the model operators report them.
	variant := func(model, prefix string) int {
		m := regexp.MustCompile(`-- model ` + model + `: variant ` + prefix + `-(\d+)`).FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("no %s variant on stderr:\n%s", model, errs)
		}
		var x int
		fmt.Sscan(m[1], &x)
		return x
	}
	det, rec := variant("detect", "det"), variant("recognize", "rec")
	got, err := ocr.ParseReads([]byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gen, err := ocr.Generate(ocr.Seed, n)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ocr.ReferenceReads(models, gen, det, rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("the reference reads nothing in %d scenes", n)
	}
	for _, d := range ocr.DiffReads(got, want) {
		t.Errorf("det-%d rec-%d over worker processes: %s", det, rec, d)
	}
}
