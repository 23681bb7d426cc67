package onnx

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// testEnv opens the process's environment; the setup step (scripts/setup.sh) must
// have cached the library, as for the rest of the suite.
func testEnv(t testing.TB) *Env {
	t.Helper()
	e, err := Open("")
	if err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	return e
}

// tinyModel writes a 6 -> 4 -> 3 MLP taking [N,6] and returns it with its path.
func tinyModel(t testing.TB) (*modelzoo.MLP, string) {
	t.Helper()
	m := modelzoo.NewMLP([]int{6, 4, 3}, []string{"a", "b", "c"}, 7)
	for i := range m.Layers[0].B {
		m.Layers[0].B[i] = 0.1 * float32(i)
	}
	path := filepath.Join(t.TempDir(), "tiny.onnx")
	if err := m.Graph("tiny", 0).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return m, path
}

func TestSessionSignatureAndRun(t *testing.T) {
	e := testEnv(t)
	m, path := tinyModel(t)
	s, err := e.Session(path, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Inputs(); len(got) != 1 || got[0].String() != "image float32[N,6]" {
		t.Fatalf("inputs = %v", got)
	}
	if got := s.Outputs(); len(got) != 2 || got[0].String() != "probs float32[N,3]" || got[1].String() != "embedding float32[N,4]" {
		t.Fatalf("outputs = %v", got)
	}
	if s.Provider() != "cpu" || s.IntraOpThreads() != 1 {
		t.Errorf("provider %q threads %d", s.Provider(), s.IntraOpThreads())
	}
	if v, ok := s.Metadata(modelzoo.MetaLabels); !ok || v != "a,b,c" {
		t.Errorf("labels metadata = %q, %v", v, ok)
	}

	const n = 5
	x := make([]float32, n*6)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	probs := make([]float32, n*3)
	outs := []ml.Tensor{
		{DType: ml.Float32, Shape: []int64{n, 3}, F32: probs}, // preallocated
		{DType: ml.Float32}, // allocated by ORT
	}
	if err := s.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{n, 6}, F32: x}}, outs); err != nil {
		t.Fatal(err)
	}
	want := m.Predict(x, n)
	for i := range want {
		if math.Abs(float64(want[i]-probs[i])) > 1e-5 {
			t.Fatalf("probs[%d] = %v, Go forward pass says %v", i, probs[i], want[i])
		}
	}
	if got := outs[1].Shape; len(got) != 2 || got[0] != n || got[1] != 4 || len(outs[1].F32) != n*4 {
		t.Fatalf("embedding shape %v len %d", got, len(outs[1].F32))
	}
}

func TestSessionCachedPerPathAndDevice(t *testing.T) {
	e := testEnv(t)
	_, path := tinyModel(t)
	a, err := e.Session(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Session(path, Options{Device: CPU})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("same path and device must share one session")
	}
	c, err := e.Session(path, Options{IntraOpThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Error("a different thread count needs its own session")
	}
	e2 := testEnv(t)
	if e2 != e {
		t.Error("Open must return the process's one environment")
	}
}

func TestConcurrentRuns(t *testing.T) {
	e := testEnv(t)
	m, path := tinyModel(t)
	s, err := e.Session(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			x := make([]float32, 6)
			x[g%6] = 1
			want := m.Predict(x, 1)
			for i := 0; i < 50; i++ {
				p := make([]float32, 3)
				if err := s.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{1, 6}, F32: x}},
					[]ml.Tensor{{DType: ml.Float32, Shape: []int64{1, 3}, F32: p}, {DType: ml.Float32}}); err != nil {
					errs <- err
					return
				}
				if math.Abs(float64(p[0]-want[0])) > 1e-5 {
					errs <- errors.New("wrong result under concurrency")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestRunChecksShapes(t *testing.T) {
	e := testEnv(t)
	_, path := tinyModel(t)
	s, err := e.Session(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]ml.Tensor{
		"wrong width": {{DType: ml.Float32, Shape: []int64{1, 5}, F32: make([]float32, 5)}},
		"short data":  {{DType: ml.Float32, Shape: []int64{2, 6}, F32: make([]float32, 6)}},
		"wrong dtype": {{DType: ml.Int64, Shape: []int64{1, 6}, I64: make([]int64, 6)}},
		"wrong rank":  {{DType: ml.Float32, Shape: []int64{6}, F32: make([]float32, 6)}},
		"input count": {},
	}
	for name, in := range cases {
		err := s.Run(in, make([]ml.Tensor, 2))
		if !errors.Is(err, ml.ErrSchema) {
			t.Errorf("%s: want ErrSchema, got %v", name, err)
		}
	}
}

func TestCUDAFallsBackToCPU(t *testing.T) {
	e := testEnv(t)
	_, path := tinyModel(t)
	// No GPU in the inventory: the CPU provider, and the report says why.
	s, err := e.Session(path, Options{Device: CUDA, Inventory: func() devices.Inventory { return devices.Inventory{CPUs: 2} }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider() != "cpu (no GPU)" {
		t.Errorf("provider = %q", s.Provider())
	}
	// A GPU in the inventory but a CPU-only library: CPU with the library's reason.
	// On a machine with a real GPU and a CUDA build this is the CUDA path.
	gpu := func() devices.Inventory {
		return devices.Inventory{CPUs: 2, GPUs: []devices.GPU{{Name: "fake"}}}
	}
	s2, err := e.Session(path, Options{Device: Auto, Inventory: gpu})
	if err != nil {
		t.Fatal(err)
	}
	if p := s2.Provider(); p != "cuda:0" && !strings.HasPrefix(p, "cpu (CUDA unavailable") {
		t.Errorf("provider = %q", p)
	}
	if p := s2.Provider(); strings.Contains(p, "onnxruntime_src") {
		t.Errorf("the reason keeps ONNX Runtime's source paths: %q", p)
	}
	// A second session does not try CUDA again: same provider, same reason.
	_, path3 := tinyModel(t)
	s3, err := e.Session(path3, Options{Device: Auto, Inventory: gpu})
	if err != nil {
		t.Fatal(err)
	}
	if s3.Provider() != s2.Provider() {
		t.Errorf("second session on %q, first on %q", s3.Provider(), s2.Provider())
	}
	t.Logf("with a GPU listed: %s", s2.Provider())
	probs := make([]float32, 3)
	if err := s2.Run([]ml.Tensor{{DType: ml.Float32, Shape: []int64{1, 6}, F32: make([]float32, 6)}},
		[]ml.Tensor{{DType: ml.Float32, Shape: []int64{1, 3}, F32: probs}, {DType: ml.Float32}}); err != nil {
		t.Fatal(err)
	}
}

func TestBadModelAndDevice(t *testing.T) {
	e := testEnv(t)
	if _, err := e.Session(filepath.Join(t.TempDir(), "missing.onnx"), Options{}); !errors.Is(err, ErrModel) {
		t.Errorf("missing file: want ErrModel, got %v", err)
	}
	_, path := tinyModel(t)
	if _, err := e.Session(path, Options{Device: "tpu"}); !errors.Is(err, ErrModel) {
		t.Errorf("unknown device: want ErrModel, got %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "other.so")); !errors.Is(err, ErrLibrary) {
		t.Errorf("second library: want ErrLibrary, got %v", err)
	}
}

func TestThreadsForShare(t *testing.T) {
	for _, c := range []struct {
		cpus     float64
		sessions int
		want     int
	}{{8, 1, 8}, {8, 3, 2}, {0.5, 1, 1}, {2, 4, 1}, {16, 0, 16}} {
		if got := ThreadsForShare(c.cpus, c.sessions); got != c.want {
			t.Errorf("ThreadsForShare(%v, %d) = %d, want %d", c.cpus, c.sessions, got, c.want)
		}
	}
}

// Inputs reads a model's inputs and keeps no session: the coordinator only
// checks calls against model files, and held every file's weights that any
// query named, for as long as it ran. A cached session answers when there is one.
func TestInputsKeepNoSession(t *testing.T) {
	e := testEnv(t)
	_, path := tinyModel(t)
	before := e.Cached()
	ins, err := e.Inputs(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 1 || ins[0].String() != "image float32[N,6]" {
		t.Fatalf("inputs = %v", ins)
	}
	if got := e.Cached(); got != before {
		t.Fatalf("%d sessions cached after reading inputs, want %d", got, before)
	}
	if _, err := e.Inputs(filepath.Join(t.TempDir(), "none.onnx")); !errors.Is(err, ErrModel) {
		t.Errorf("a missing file: %v, want ErrModel", err)
	}
}
