//go:build !linux

package dataflow

import "time"

// threadCPU: no per-thread CPU clock is read off Linux; steps are charged
// wall time there (threadCPUWorks is false).
func threadCPU() (time.Duration, int) { return 0, 0 }

func threadCPUOf(int) time.Duration { return 0 }

func threadCPUWorks() bool { return false }
