package dataflow

import (
	"runtime/metrics"
	"sync"
)

// newGoIdle is a reader of whether Go has a processor idle: GOMAXPROCS
// less the processors running goroutines and the goroutines waiting in a
// run queue for one (runtime/metrics, Go 1.26's scheduler counts; a
// reading locks the scheduler for a moment, no stop of the world). nil
// where the runtime does not offer the counts: the CPU then holds no
// query alone (see CPU).
func newGoIdle() func() bool {
	samples := []metrics.Sample{
		{Name: "/sched/gomaxprocs:threads"},
		{Name: "/sched/goroutines/running:goroutines"},
		{Name: "/sched/goroutines/runnable:goroutines"},
	}
	metrics.Read(samples)
	for _, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return nil
		}
	}
	var mu sync.Mutex
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		metrics.Read(samples)
		procs, running, runnable := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
		return running+runnable < procs
	}
}
