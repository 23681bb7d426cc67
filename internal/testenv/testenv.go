// Package testenv holds the switches tests share: which tests are long (soak
// runs, sweeps, full-size benchmarks answered as tests) and run only under
// `make test-long`, which CI also runs after `make test` when time allows.
//
// A long test is not a skipped failure: it runs in `make test-long`, and its
// short form (a smaller input, fewer repetitions) should stay in `make test`
// wherever one exists, so coverage does not depend on the long run.
package testenv

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// LongEnv is the variable `make test-long` sets.
const LongEnv = "TIERFLOW_TEST_LONG"

// IsLong reports whether long tests run in this process.
func IsLong() bool { return os.Getenv(LongEnv) == "1" }

// Long skips t unless long tests run (`make test-long`), naming why the test
// is long so that a reader of `go test -v` sees what was left for later.
func Long(t testing.TB, why string) {
	t.Helper()
	if !IsLong() {
		t.Skipf("long test (%s): runs under `make test-long` (%s=1)", why, LongEnv)
	}
}

// WaitingParallel raises go test's -parallel (by default GOMAXPROCS: two on
// CI's two cores) to n for a package whose parallel tests mostly wait (on
// rate-limited streams, shaped links, heartbeats, restarts) rather than
// compute: at two at a time their waits ran one after another and made the
// package the suite's long pole. An explicit -parallel wins. Call it from
// TestMain, after the package's own flags are defined, before m.Run.
func WaitingParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && n > runtime.GOMAXPROCS(0) {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: -parallel stays at its default: %v\n", err)
		}
	}
}

// Allocated is the Go heap allocated while f ran (runtime.MemStats'
// TotalAlloc): what a test that bounds a call's memory measures. Other
// goroutines' allocations count too, so a bound is a ceiling with room.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
