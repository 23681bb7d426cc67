package dataflow

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// setThreadNice sets the calling thread's nice value (Linux's priority is
// per thread): true when it took.
func setThreadNice(nice int) bool {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), nice) == nil
}

// threadNiceWorks says a thread may lower its priority and raise it back
// (CAP_SYS_NICE, or RLIMIT_NICE): without, a step's thread lowered once
// would stay low when Go gives it to another goroutine. Tried on a thread
// of its own that ends with the goroutine (locked, never unlocked), so
// nothing keeps a changed priority.
func threadNiceWorks(base int) bool {
	if base >= backgroundNice {
		return false
	}
	ok := make(chan bool, 1)
	go func() {
		runtime.LockOSThread()
		ok <- setThreadNice(backgroundNice) && setThreadNice(base)
	}()
	return <-ok
}

// threadNice is the calling thread's nice value (a new thread has its
// creator's), and whether a step may lower its thread's and restore it.
func threadNice() (int, bool) {
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		return 0, false
	}
	// The system call answers 20 - nice (1 to 40), never negative.
	return 20 - prio, threadNiceWorks(20 - prio)
}
