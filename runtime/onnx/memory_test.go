package onnx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// wideModel is an MLP whose hidden layer (4,096 wide) makes its
// intermediate tensor 256 times its input: 16 KiB a row of 64 bytes.
func wideModel(t *testing.T) string {
	t.Helper()
	m := modelzoo.NewMLP([]int{16, 4096, 16}, nil, 7)
	path := filepath.Join(t.TempDir(), "wide.onnx")
	if err := m.Graph("wide", 0).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runRows runs s on a batch of n rows.
func runRows(s *Session, n int) error {
	x := make([]float32, n*16)
	outs := make([]ml.Tensor, len(s.Outputs()))
	return s.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(n), 16}, F32: x}}, outs)
}

// rss is the process's resident memory.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm: resident memory unread here")
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		t.Fatal(err)
	}
	return res * int64(os.Getpagesize())
}

// TestMemoryBoundRefusesAHugeCall: under BoundMemory, a call whose
// intermediate tensor would pass the bound (10,000 rows through the wide
// model: 164 MB of it, from a 640 KB input) fails as a memory limit
// naming the model and the bound, the process's resident memory stays
// within the bound, and calls that fit, at changing sizes, still run. Without the bound the
// same call runs (the parent process), so the bound is what refused it.
// A model whose weights do not fit the bound is refused before it opens.
// The bound is the process's, for good, so the bound side runs in a child.
func TestMemoryBoundRefusesAHugeCall(t *testing.T) {
	const huge, bound = 10000, 64 << 20
	if os.Getenv("TIERFLOW_TEST_MODEL_BOUND") != "" {
		boundChild(t, huge, bound)
		return
	}
	e := testEnv(t)
	path := wideModel(t)
	free, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := runRows(free, huge); err != nil {
		t.Fatalf("%d rows without a bound: %v", huge, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryBoundRefusesAHugeCall$", "-test.v")
	cmd.Env = append(os.Environ(), "TIERFLOW_TEST_MODEL_BOUND=1")
	out, err := cmd.CombinedOutput()
	t.Logf("the bounded child:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the bounded child: %v", err)
	}
}

func boundChild(t *testing.T, huge int, bound int64) {
	if err := BoundMemory(bound); err != nil {
		t.Fatal(err)
	}
	e := testEnv(t)
	path := wideModel(t)
	s, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Calls at changing sizes, each well within the bound, are served
	// one after the other (the arena's regions serve the larger after
	// the smaller).
	for _, n := range []int{100, 400, 1000, 250, 1000, 600, 1000} {
		if err := runRows(s, n); err != nil {
			t.Fatalf("%d rows (%s of intermediate tensor) under a bound of %s: %v", n, dataflow.Bytes(16<<10*int64(n)), dataflow.Bytes(bound), err)
		}
	}
	debug.FreeOSMemory()
	before := rss(t)
	err = runRows(s, huge)
	grew := rss(t) - before
	t.Logf("%d rows: %v; resident memory grew %s", huge, err, dataflow.Bytes(grew))
	var ae *ArenaError
	if !errors.As(err, &ae) || !errors.Is(err, dataflow.ErrMemory) || ae.Bound != bound || ae.Want < 16<<10*int64(huge) ||
		ae.Free >= ae.Want || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--max-model-memory") {
		t.Fatalf("%d rows under a bound of %s: %v, want a memory limit naming the model, the flag and the ask", huge, dataflow.Bytes(bound), err)
	}
	if grew > bound {
		t.Errorf("resident memory grew %s over a refused call, more than the bound %s", dataflow.Bytes(grew), dataflow.Bytes(bound))
	}
	if err := runRows(s, 100); err != nil {
		t.Errorf("100 rows after the refusal: %v", err)
	}
	// A model whose weights, twice its file, do not fit beside the open
	// session's is refused before it opens: ONNX Runtime would run it on
	// an allocator of its own, unbounded.
	big := modelzoo.NewMLP([]int{16, 3000, 3000, 16}, nil, 7) // 36 MB
	bigPath := filepath.Join(t.TempDir(), "big.onnx")
	if err := big.Graph("big", 0).WriteFile(bigPath); err != nil {
		t.Fatal(err)
	}
	_, err = e.Session(bigPath, Options{IntraOpThreads: 1})
	t.Logf("opening a model of 36 MB under the bound: %v", err)
	if !errors.As(err, &ae) || !ae.Weights || ae.Model != bigPath || ae.Want < 72e6 || !strings.Contains(err.Error(), "--max-model-memory") {
		t.Errorf("opening a model whose weights do not fit the bound: %v, want refused for its weights", err)
	}
	if err := BoundMemory(2 * bound); err == nil {
		t.Error("the bound changed after the arena was made")
	}
}
