package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/runtime/devices"
)

func runDevices(t *testing.T, inv devices.Inventory, format string) string {
	t.Helper()
	var out bytes.Buffer
	a := &app{out: &out, err: &out}
	a.g.format = format
	c := newDevicesCmdWith(a, func() devices.Inventory { return inv })
	c.SetArgs(nil)
	c.SetOut(&out)
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestDevicesNoGPU(t *testing.T) {
	out := runDevices(t, devices.Inventory{CPUs: 2, MemoryTotal: 8 << 30, NoGPUReason: "NVML: library not found"}, "")
	for _, want := range []string{"2 cores", "8.0 GiB", "no GPU: NVML: library not found"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDevicesGPUTableAndJSON(t *testing.T) {
	inv := devices.Inventory{CPUs: 16, GPUs: []devices.GPU{{Index: 0, Name: "NVIDIA H100", MemoryTotal: 80 << 30, MemoryUsed: 1 << 30, UtilGPU: 37}}, DriverVersion: "550.54"}
	out := runDevices(t, inv, "")
	for _, want := range []string{"gpu 0", "NVIDIA H100", "80.0 GiB", "37%", "driver 550.54"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var got devices.Inventory
	if err := json.Unmarshal([]byte(runDevices(t, inv, "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.GPUs) != 1 || got.GPUs[0].Name != "NVIDIA H100" || got.CPUs != 16 {
		t.Errorf("json = %+v", got)
	}
}
