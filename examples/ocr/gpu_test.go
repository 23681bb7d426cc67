package ocr

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// TestOCROnCUDA runs the CI case with both networks on the CUDA execution
// provider and holds it to the CPU's rows: the same boxes and texts. The
// model operators must say they ran on cuda:0 (what EXPLAIN ANALYZE shows
// per stage). Without a GPU, or with the CPU-only library, it skips and
// says why; under TIERFLOW_REQUIRE_GPU=1 (make gpu-check) that is a
// failure.
func TestOCROnCUDA(t *testing.T) {
	require := os.Getenv("TIERFLOW_REQUIRE_GPU") == "1"
	inv := devices.Take()
	if !inv.HasGPU() {
		if require {
			t.Fatalf("TIERFLOW_REQUIRE_GPU=1 but no GPU: %s", inv.NoGPUReason)
		}
		t.Skipf("no GPU: %s", inv.NoGPUReason)
	}
	modelDir(t)
	variants := map[string]string{"detect": "det-480", "recognize": "rec-320"}
	rt := inference.New(inference.Config{Device: onnx.CUDA, Variants: variants})
	gpu := reads(t, runLocalWith(t, "ci.sql", rt))
	for _, c := range rt.Choices() {
		if c.Provider != "cuda:0" {
			msg := fmt.Sprintf("model %s ran on %q, not cuda:0", c.Operator, c.Provider)
			if require {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	cpu := reads(t, runLocal(t, "ci.sql", variants))
	if len(gpu) != len(cpu) {
		t.Fatalf("CUDA %d rows, CPU %d:\n%v\n%v", len(gpu), len(cpu), gpu, cpu)
	}
	for i := range gpu {
		g, c := gpu[i], cpu[i]
		if g.Text != c.Text || g.X0 != c.X0 || g.Y0 != c.Y0 || g.X1 != c.X1 || g.Y1 != c.Y1 {
			t.Errorf("row %d: CUDA %+v, CPU %+v", i, g, c)
		}
	}
}

// TestOCRGPUTestSaysWhyItSkips runs TestOCROnCUDA in a child of this test
// binary on a machine without a GPU: it must skip naming why (not pass
// without running anything), and under TIERFLOW_REQUIRE_GPU=1, as make
// gpu-check runs it, fail with the same reason. On a machine with a GPU
// the CUDA test itself runs, and this one has nothing to check.
func TestOCRGPUTestSaysWhyItSkips(t *testing.T) {
	inv := devices.Take()
	if inv.HasGPU() {
		t.Skip("this machine has a GPU: TestOCROnCUDA runs for real")
	}
	child := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestOCROnCUDA$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "TIERFLOW_REQUIRE_GPU="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := child("")
	if err != nil {
		t.Fatalf("without a GPU TestOCROnCUDA failed: %v\n%s", err, out)
	}
	want := "no GPU: " + inv.NoGPUReason
	if !strings.Contains(out, "--- SKIP: TestOCROnCUDA") || !strings.Contains(out, want) {
		t.Fatalf("without a GPU TestOCROnCUDA did not skip saying %q:\n%s", want, out)
	}
	out, err = child("1")
	if err == nil || !strings.Contains(out, "--- FAIL: TestOCROnCUDA") ||
		!strings.Contains(out, "TIERFLOW_REQUIRE_GPU=1 but no GPU: "+inv.NoGPUReason) {
		t.Fatalf("under TIERFLOW_REQUIRE_GPU=1 without a GPU TestOCROnCUDA did not fail naming the reason (%v):\n%s", err, out)
	}
}
