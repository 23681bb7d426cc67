package bench

import (
	"math"
	"sort"
	"syscall"
	"time"
)

// Percentile is the q-quantile of xs by the nearest-rank rule (0 for none).
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ProcessCPU is the CPU time (user and system) this process has used so
// far: what a benchmark divides by its work where wall time shows the
// host's other load too (0 where it cannot be read).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
