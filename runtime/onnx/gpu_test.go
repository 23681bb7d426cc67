package onnx

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// requireGPU is set on a GPU machine (TIERFLOW_REQUIRE_GPU=1) so that a missing GPU
// or a library without CUDA fails the test instead of skipping it.
var requireGPU = os.Getenv("TIERFLOW_REQUIRE_GPU") == "1"

// TestCUDAMatchesCPU runs a convolutional model on the CUDA execution provider
// and on the CPU and holds the two to the same probabilities. Without a GPU, or
// with the CPU-only library the setup step installs, it skips and says why.
func TestCUDAMatchesCPU(t *testing.T) {
	inv := devices.Take()
	if !inv.HasGPU() {
		if requireGPU {
			t.Fatalf("TIERFLOW_REQUIRE_GPU=1 but no GPU: %s", inv.NoGPUReason)
		}
		t.Skipf("no GPU: %s", inv.NoGPUReason)
	}
	e := testEnv(t)
	m := modelzoo.NewCNN(28, 16, 5, []int{64, 10}, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, 11)
	path := filepath.Join(t.TempDir(), "cnn.onnx")
	if err := m.Graph("cnn").WriteFile(path); err != nil {
		t.Fatal(err)
	}
	gpu, err := e.Session(path, Options{Device: CUDA, Inventory: func() devices.Inventory { return inv }})
	if err != nil {
		t.Fatal(err)
	}
	if gpu.Provider() != "cuda:0" {
		if requireGPU {
			t.Fatalf("GPU %s present but provider = %q (library %s, ORT %s)", inv.GPUs[0].Name, gpu.Provider(), e.Library(), e.Version())
		}
		t.Skipf("GPU present, library without CUDA: %s", gpu.Provider())
	}
	cpu, err := e.Session(path, Options{Device: CPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 7, 64} {
		x := make([]float32, n*28*28)
		for i := range x {
			x[i] = float32(0.5 + 0.5*math.Sin(float64(i)*0.37))
		}
		run := func(s *Session) []float32 {
			probs := make([]float32, n*10)
			in := []ml.Tensor{{DType: ml.Float32, Shape: []int64{int64(n), 1, 28, 28}, F32: x}}
			outs := make([]ml.Tensor, len(s.Outputs()))
			outs[0] = ml.Tensor{DType: ml.Float32, Shape: []int64{int64(n), 10}, F32: probs}
			for i := 1; i < len(outs); i++ {
				outs[i] = ml.Tensor{DType: ml.Float32}
			}
			if err := s.Run(in, outs); err != nil {
				t.Fatalf("%s batch %d: %v", s.Provider(), n, err)
			}
			return probs
		}
		g, c := run(gpu), run(cpu)
		for i := range c {
			// TF32 convolutions on the GPU round differently from the CPU's FP32.
			if math.Abs(float64(g[i]-c[i])) > 2e-3 {
				t.Fatalf("batch %d: probs[%d] cuda %v, cpu %v", n, i, g[i], c[i])
			}
		}
	}
	t.Logf("%s on %s (driver %s), ORT %s from %s", gpu.Provider(), inv.GPUs[0].Name, inv.DriverVersion, e.Version(), e.Library())
}

// The reasons are ONNX Runtime's messages as they came back on a GPU machine with
// CUDA hidden and on a machine without the CUDA libraries.
func TestCUDAReasonIsShort(t *testing.T) {
	cases := map[string]string{
		`/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider_info.cc:62 static onnxruntime::CUDAExecutionProviderInfo onnxruntime::CUDAExecutionProviderInfo::FromProviderOptions(const onnxruntime::ProviderOptions&) [ONNXRuntimeError] : 1 : FAIL : provider_options_utils.h:187 Parse Failed to parse provider option "device_id": CUDA failure 100: no CUDA-capable device is detected ; GPU=-1 ; hostname=vm ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider_info.cc ; line=69 ; expr=cudaGetDeviceCount(&num_devices);`: "CUDA failure 100: no CUDA-capable device is detected",
		`/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1988 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library /tmp/ort/libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open shared object file: No such file or directory`:                                                                                                                                                                                                                                                "Failed to load library /tmp/ort/libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open shared object file: No such file or directory",
		"something else": "something else",
	}
	for in, want := range cases {
		if got := cudaReason(errors.New(in)); got != want {
			t.Errorf("cudaReason(%.40q...) = %q, want %q", in, got, want)
		}
	}
}
