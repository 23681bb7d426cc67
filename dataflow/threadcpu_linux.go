package dataflow

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time (user and system, the
// kernel's per-thread clock: a system call with no vDSO path, well under a
// microsecond) and its thread id, for threadCPUOf.
func threadCPU() (time.Duration, int) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, 0
	}
	return time.Duration(ts.Nano()), unix.Gettid()
}

// threadCPUOf is the CPU time of thread tid of this process, read from any
// thread: Linux numbers a thread's CPU clock ((^tid)<<3 | CPUCLOCK_SCHED |
// CPUCLOCK_PERTHREAD_MASK, as glibc's pthread_getcpuclockid makes it). 0
// for a thread that is gone.
func threadCPUOf(tid int) time.Duration {
	if tid <= 0 {
		return 0
	}
	const sched, perThread = 2, 4
	var ts unix.Timespec
	if unix.ClockGettime(int32(^tid)<<3|sched|perThread, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// threadCPUWorks: the clocks answer here (a sandbox may refuse them; the
// share then charges wall time, as it did before the clocks).
func threadCPUWorks() bool {
	cpu, tid := threadCPU()
	return cpu > 0 && threadCPUOf(tid) >= cpu
}
