package dataflow

import (
	"testing"

	"golang.org/x/sys/unix"
)

// niceOf is thread tid's nice value.
func niceOf(t *testing.T, tid int) int {
	t.Helper()
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		t.Fatal(err)
	}
	return 20 - prio
}

// A step of a query more than a slice ahead of another runs its thread at
// the lowest priority, and the thread is back at its own as the step ends
// (Go gives it to other goroutines after); the query behind, and a query
// alone, step at their own priority.
func TestCPUStepOfTheQueryAheadRunsAtTheLowestPriority(t *testing.T) {
	c := NewCPU(0)
	if !c.lock || !c.nice {
		t.Skip("this process may not lower a thread's priority and raise it back (CAP_SYS_NICE or RLIMIT_NICE): steps keep theirs")
	}
	step := func(s *CPUShare) (during, after int) {
		t.Helper()
		st := s.begin(false) // not through the gate: it would hold the query ahead
		_, tid := threadCPU()
		during = niceOf(t, tid)
		s.exit(st)
		return during, niceOf(t, tid)
	}
	a := c.Join("a")
	defer a.Leave()
	c.mu.Lock()
	a.used += 2 * c.slice
	c.mu.Unlock()
	if during, _ := step(a); during != c.baseNice {
		t.Errorf("a query alone stepped at nice %d, want its own %d", during, c.baseNice)
	}
	b := c.Join("b") // starts level with the least with work: a is idle
	defer b.Leave()
	c.mu.Lock()
	b.used = 0
	c.mu.Unlock()
	if during, after := step(a); during != backgroundNice || after != c.baseNice {
		t.Errorf("the query two slices ahead stepped at nice %d and left its thread at %d, want %d then %d", during, after, backgroundNice, c.baseNice)
	}
	if during, after := step(b); during != c.baseNice || after != c.baseNice {
		t.Errorf("the query behind stepped at nice %d (after: %d), want its own %d", during, after, c.baseNice)
	}
}
