package devices

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeNVML drives the GPU path without a GPU.
type fakeNVML struct {
	initRet  nvml.Return
	devices  []nvml.Device
	shutdown int
}

func (f *fakeNVML) Init() nvml.Return                             { return f.initRet }
func (f *fakeNVML) Shutdown() nvml.Return                         { f.shutdown++; return nvml.SUCCESS }
func (f *fakeNVML) SystemGetDriverVersion() (string, nvml.Return) { return "550.54", nvml.SUCCESS }
func (f *fakeNVML) DeviceGetCount() (int, nvml.Return)            { return len(f.devices), nvml.SUCCESS }
func (f *fakeNVML) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return f.devices[i], nvml.SUCCESS
}

func fakeGPU(name string, total, used uint64, util uint32) *mock.Device {
	return &mock.Device{
		GetNameFunc:       func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUUIDFunc:       func() (string, nvml.Return) { return "GPU-" + name, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: total, Used: used}, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: util, Memory: util / 2}, nvml.SUCCESS
		},
	}
}

func TestTakeWithFakeGPUs(t *testing.T) {
	f := &fakeNVML{initRet: nvml.SUCCESS, devices: []nvml.Device{
		fakeGPU("H100", 80<<30, 1<<30, 40),
		fakeGPU("T4", 16<<30, 0, 0),
	}}
	inv := TakeWith(f)
	if !inv.HasGPU() || len(inv.GPUs) != 2 {
		t.Fatalf("want 2 GPUs, got %+v", inv)
	}
	g := inv.GPUs[0]
	if g.Name != "H100" || g.MemoryTotal != 80<<30 || g.MemoryUsed != 1<<30 || g.UtilGPU != 40 || g.UtilMemory != 20 {
		t.Errorf("GPU 0 = %+v", g)
	}
	if inv.GPUs[1].Index != 1 || inv.DriverVersion != "550.54" || inv.NoGPUReason != "" {
		t.Errorf("inventory = %+v", inv)
	}
	if f.shutdown != 1 {
		t.Errorf("NVML shut down %d times, want 1", f.shutdown)
	}
	if inv.CPUs < 1 {
		t.Errorf("CPUs = %d", inv.CPUs)
	}
}

func TestTakeWithoutDriverIsNoGPU(t *testing.T) {
	inv := TakeWith(&fakeNVML{initRet: nvml.ERROR_LIBRARY_NOT_FOUND})
	if inv.HasGPU() || !strings.Contains(inv.NoGPUReason, "library not found") {
		t.Fatalf("inventory = %+v", inv)
	}
	inv = TakeWith(&fakeNVML{initRet: nvml.SUCCESS})
	if inv.HasGPU() || inv.NoGPUReason != "NVML found no device" {
		t.Fatalf("inventory with zero devices = %+v", inv)
	}
}

// TestTakeRealMachine runs the real NVML path: on a machine without a driver it must
// come back as "no GPU", not crash; on a GPU machine it must list the GPUs.
func TestTakeRealMachine(t *testing.T) {
	inv := Take()
	if inv.HasGPU() {
		for _, g := range inv.GPUs {
			if g.Name == "" || g.MemoryTotal == 0 {
				t.Errorf("GPU without name or memory: %+v", g)
			}
		}
		t.Logf("GPUs: %+v", inv.GPUs)
		return
	}
	if inv.NoGPUReason == "" {
		t.Fatal("no GPU and no reason given")
	}
	// On a GPU machine TIERFLOW_REQUIRE_GPU=1 turns a missed GPU into a failure.
	if os.Getenv("TIERFLOW_REQUIRE_GPU") == "1" {
		t.Fatalf("TIERFLOW_REQUIRE_GPU=1 but no GPU: %s", inv.NoGPUReason)
	}
	t.Logf("no GPU: %s", inv.NoGPUReason)
}

func TestParseMemTotal(t *testing.T) {
	in := "MemFree:  10 kB\nMemTotal:       16318480 kB\n"
	if got := parseMemTotal(bufio.NewScanner(strings.NewReader(in))); got != 16318480*1024 {
		t.Errorf("got %d", got)
	}
	if got := parseMemTotal(bufio.NewScanner(strings.NewReader("nothing\n"))); got != 0 {
		t.Errorf("got %d", got)
	}
}
