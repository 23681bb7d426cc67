// Package devices takes the inventory of the compute a worker has: CPU cores and
// memory, and NVIDIA GPUs through NVML (go-nvml), with their memory and
// utilisation.
//
// A machine without an NVIDIA driver is a normal case, not an error: NVML is opened
// with dlopen, and when libnvidia-ml is absent (or has no device) the inventory says
// "no GPU" and carries the reason. It must not import anything above runtime.
package devices

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GPU is one NVIDIA device as NVML reports it.
type GPU struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	UUID        string `json:"uuid,omitempty"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
	MemoryUsed  uint64 `json:"memory_used_bytes"`
	UtilGPU     uint32 `json:"util_gpu_pct"`
	UtilMemory  uint32 `json:"util_memory_pct"`
}

// Inventory is what this machine offers to operators.
type Inventory struct {
	CPUs          int    `json:"cpus"`
	MemoryTotal   uint64 `json:"memory_total_bytes"` // 0 when /proc/meminfo is unreadable
	GPUs          []GPU  `json:"gpus"`
	DriverVersion string `json:"driver_version,omitempty"`
	// NoGPUReason says why GPUs is empty ("NVML library not found", ...).
	NoGPUReason string `json:"no_gpu_reason,omitempty"`
}

// HasGPU reports whether at least one NVIDIA GPU is usable.
func (inv Inventory) HasGPU() bool { return len(inv.GPUs) > 0 }

// NVML is the part of go-nvml the inventory uses; nvml.New() satisfies it, and
// tests pass a fake so the GPU path runs without a GPU.
type NVML interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
}

// Take returns the inventory of this machine using the system NVML library.
func Take() Inventory {
	return TakeWith(nvml.New())
}

// TakeWith returns the inventory using lib for the GPU part. A failing NVML call
// never fails the inventory: it becomes NoGPUReason (or skips the one field).
func TakeWith(lib NVML) Inventory {
	inv := Inventory{CPUs: runtime.NumCPU(), MemoryTotal: memTotal()}
	inv.GPUs, inv.DriverVersion, inv.NoGPUReason = gpus(lib)
	return inv
}

func gpus(lib NVML) (out []GPU, driver, reason string) {
	if lib == nil {
		return nil, "", "no NVML"
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, "", "NVML: " + retString(ret)
	}
	defer lib.Shutdown()
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		driver = v
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, driver, "NVML device count: " + retString(ret)
	}
	if n == 0 {
		return nil, driver, "NVML found no device"
	}
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		g := GPU{Index: i}
		if s, ret := d.GetName(); ret == nvml.SUCCESS {
			g.Name = s
		}
		if s, ret := d.GetUUID(); ret == nvml.SUCCESS {
			g.UUID = s
		}
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryTotal, g.MemoryUsed = m.Total, m.Used
		}
		if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
			g.UtilGPU, g.UtilMemory = u.Gpu, u.Memory
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, driver, fmt.Sprintf("NVML listed %d device(s) but none could be opened", n)
	}
	return out, driver, ""
}

// retString names an NVML return code without calling into the library, which may
// not be loaded (nvml.ErrorString needs it).
func retString(r nvml.Return) string {
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "library not found (no NVIDIA driver)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_NOT_FOUND:
		return "not found"
	default:
		return "error code " + strconv.Itoa(int(r))
	}
}

// memTotal reads MemTotal from /proc/meminfo (Linux); other systems report 0.
func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseMemTotal(bufio.NewScanner(f))
}

func parseMemTotal(sc *bufio.Scanner) uint64 {
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
