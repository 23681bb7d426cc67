package cluster

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestStatCPUReadsUserAndSystemTicks(t *testing.T) {
	// A command name with a space and a ')' of its own: the fields count
	// from the last ')'.
	line := "4242 (tier flow) x) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 9 0 100 0 0\n"
	d, err := statCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; d != want {
		t.Fatalf("statCPU = %v, want %v (250 + 75 ticks of 10 ms)", d, want)
	}
	for _, bad := range []string{"4242 tierflow S 1", "4242 (tierflow) S 1 2 3", "4242 (tierflow) S 1 4242 4242 0 -1 4194304 100 0 0 0 x 75 0"} {
		if _, err := statCPU([]byte(bad)); err == nil {
			t.Errorf("statCPU(%q): no error", bad)
		}
	}
}

// TestProcessCPUFollowsRusage burns CPU in this process and reads it back
// through /proc: it counts CPU, not wall time, so it holds beside CPU hogs.
func TestProcessCPUFollowsRusage(t *testing.T) {
	self := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	start := self()
	x := 0
	for self()-start < 200*time.Millisecond {
		for i := range 100000 {
			x += i
		}
	}
	burnt := self() - start
	after, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in 10 ms ticks, sampled: allow a few either way
	// (other goroutines of the test binary, the GC, also run).
	if got := after - before; got < burnt-50*time.Millisecond || got > burnt+500*time.Millisecond {
		t.Fatalf("/proc says %v of CPU, getrusage %v (x=%d)", got, burnt, x)
	}
	if _, err := processCPU(1 << 30); err == nil {
		t.Fatal("no error for a pid that does not exist")
	}
}
