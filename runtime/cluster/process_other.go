//go:build !linux

package cluster

import "os/exec"

// dieWithParent: only Linux has a parent-death signal; elsewhere the
// children end with Close (every exit path this process lives through).
func dieWithParent(*exec.Cmd) {}
