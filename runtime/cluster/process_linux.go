package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dieWithParent has the kernel kill a worker child when this process dies,
// however it dies (SIGKILL, a crash): Close's SIGINT and kill cover every
// exit this process lives through, Pdeathsig the ones it does not.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processCPU is the CPU time (user and system, every thread, the dead
// included) process pid has used so far: fields 14 and 15 of
// /proc/PID/stat, in clock ticks of 1/100 s (USER_HZ, 100 on every Linux
// architecture Go runs on).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := statCPU(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// statCPU reads utime and stime out of a /proc/PID/stat line.
func statCPU(b []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields after it start after the last ')'.
	at := bytes.LastIndexByte(b, ')')
	if at < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	f := strings.Fields(string(b[at+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want 13 or more", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("CPU ticks %q: not a count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// userHZ is the unit of /proc's CPU times (sysconf(_SC_CLK_TCK)).
const userHZ = 100
