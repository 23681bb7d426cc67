package optimize_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tierflow/tierflow/planner/optimize"
)

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a
// loaded machine wall time measures the other processes as much as the
// optimizer.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	_, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// sweep is the target sweep of `tierflow bench planner`: throughput 0.5-1.5x
// and accuracy -2..+1 points around the setup's own targets. Scaling the
// sink's throughput target is what lowering a scaled input rate gives.
func sweep(name string, p *optimize.Problem) []*optimize.Problem {
	var out []*optimize.Problem
	for _, tf := range []float64{0.5, 0.75, 1, 1.25, 1.5} {
		for _, da := range []float64{-2, -1, 0, 1} {
			q := *p
			q.Objectives.Throughput = p.Objectives.Throughput * tf
			q.Objectives.MinAccuracy = optimize.Float(*p.Objectives.MinAccuracy + da)
			q.Name = fmt.Sprintf("%s@%gx%+g", name, tf, da)
			out = append(out, &q)
		}
	}
	return out
}

// BenchmarkSweep runs a strategy over the whole target sweep of each Table-4
// setup and reports the p50/p95 of the per-case optimizer CPU time (thread
// clock, the goroutine locked to its thread).
func BenchmarkSweep(b *testing.B) {
	setups := loadSetups(b)
	names := make([]string, 0, len(setups))
	for n := range setups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, strategy := range []string{"auto", "exhaustive"} {
		for _, name := range names {
			cases := sweep(name, setups[name])
			b.Run(strategy+"/"+name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var times []float64
				gaveUp := 0
				for b.Loop() {
					for _, p := range cases {
						t0 := threadCPU()
						pl, err := optimize.DefaultRegistry().Optimize(context.Background(), strategy, p, optimize.Options{})
						if err != nil {
							b.Fatal(err)
						}
						times = append(times, float64(threadCPU()-t0)/1e6)
						if pl.GaveUp {
							gaveUp++
						}
					}
				}
				slices.Sort(times)
				q := func(f float64) float64 {
					return times[max(0, min(len(times)-1, int(math.Ceil(f*float64(len(times))))-1))]
				}
				b.ReportMetric(q(0.5), "p50-cpu-ms")
				b.ReportMetric(q(0.95), "p95-cpu-ms")
				b.ReportMetric(times[len(times)-1], "max-cpu-ms")
				b.ReportMetric(float64(gaveUp), "gaveup")
			})
		}
	}
}
