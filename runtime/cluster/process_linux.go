package cluster

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a worker child when this process dies,
// however it dies (SIGKILL, a crash): Close's SIGINT and kill cover every
// exit this process lives through, Pdeathsig the ones it does not.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
