package dataflow

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time (user and system, the
// kernel's per-thread clock: a system call with no vDSO path, well under a
// microsecond) and its thread id, for threadCPUOf. The id is read first
// and the clock of that thread by its id, so the two always name one
// thread: a goroutine not locked to its thread (a step begun while its
// query was alone) may move to another thread between two system calls,
// and the calling thread's clock read before the id of the thread it then
// ran on was one thread's time against another's clock - a step's CPU so
// far read 447 ms after 138 ms of wall time, its query's virtual time fell
// by 310 ms when the step ended, and a small query levelled with it before
// the fall waited at the gate for that "lead" (#25: 209 ms, and 889 ms in
// an earlier session, with 1-2 ms of steps).
func threadCPU() (time.Duration, int) {
	tid := unix.Gettid()
	return threadCPUOf(tid), tid
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
