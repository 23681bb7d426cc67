package dataflow

import "golang.org/x/sys/unix"

// osYield gives the calling thread's core to the threads waiting for it
// (sched_yield: under a round-robin real-time policy the thread goes to
// the back of its priority's queue; under the default one the scheduler
// prefers another runnable thread once). It returns at once when none
// waits.
func osYield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
