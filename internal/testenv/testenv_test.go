package testenv

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

func TestLongFollowsTheEnvironment(t *testing.T) {
	t.Setenv(LongEnv, "")
	if IsLong() {
		t.Fatal("IsLong with the variable unset")
	}
	t.Setenv(LongEnv, "1")
	if !IsLong() {
		t.Fatal("not IsLong with the variable set to 1")
	}
	ran := false
	t.Run("long", func(t *testing.T) {
		Long(t, "checks Long itself")
		ran = true
	})
	if !ran {
		t.Fatal("Long skipped a test with the variable set")
	}
}

func TestWaitingParallelRaisesTheDefault(t *testing.T) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		t.Skip("-parallel given on the command line: WaitingParallel leaves it")
	}
	p := flag.Lookup("test.parallel")
	was := p.Value.String()
	defer p.Value.Set(was) // read once, at the start: restored for tidiness
	WaitingParallel(runtime.GOMAXPROCS(0) + 3)
	if got, want := p.Value.String(), strconv.Itoa(runtime.GOMAXPROCS(0)+3); got != want {
		t.Fatalf("-parallel %s after WaitingParallel, want %s", got, want)
	}
}
