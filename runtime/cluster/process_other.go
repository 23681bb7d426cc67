//go:build !linux

package cluster

import (
	"errors"
	"os/exec"
	"time"
)

// dieWithParent: only Linux has a parent-death signal; elsewhere the
// children end with Close (every exit path this process lives through).
func dieWithParent(*exec.Cmd) {}

// processCPU: a child's CPU time is read from /proc, which only Linux has.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("a worker process's CPU time is read on Linux only")
}
