package slo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/tierflow/tierflow/relay"
)

// TraceKinds are the shapes the trace generator draws (GenerateTrace), so a
// policy is judged on many links, not the six shipped ones:
//
//	steps     random steps of 0.5-4 s between 150 and 2400 kbit/s
//	fades     a link at 500-1800 kbit/s that fades to 80-300 for 0.5-4 s
//	walk      a random walk in log space, a step every 0.25 s, 200-2000
//	flapping  a link that flaps every 0.2-1 s between two levels
//	square    blocks of 1-5 s alternating between two levels
var TraceKinds = []string{"steps", "fades", "walk", "flapping", "square"}

// GenerateTrace draws a trace of kind, about length long, from seed: the
// same kind and seed give the same trace.
func GenerateTrace(kind string, seed uint64, length time.Duration) (*relay.Trace, error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed^uint64(len(kind))))
	logU := func(lo, hi float64) float64 { return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo))) }
	u := func(lo, hi float64) float64 { return lo + r.Float64()*(hi-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, seed %d\nt_s,kbit_s\n", kind, seed)
	end := length.Seconds()
	step := func(at, kbit float64) { fmt.Fprintf(&b, "%.2f,%.0f\n", at, kbit) }
	switch kind {
	case "steps":
		for at := 0.0; at < end; at += u(0.5, 4) {
			step(at, logU(150, 2400))
		}
	case "fades":
		base := logU(500, 1800)
		for at := 0.0; at < end; {
			good := u(1, 5)
			step(at, base*u(0.85, 1.15))
			at += good
			if at >= end {
				break
			}
			step(at, logU(80, 300))
			at += u(0.5, 4)
		}
	case "walk":
		x := math.Log(logU(300, 1500))
		for at := 0.0; at < end; at += 0.25 {
			x = min(math.Log(2000), max(math.Log(200), x+r.NormFloat64()*0.12))
			step(at, math.Exp(x))
		}
	case "flapping":
		hi, lo := logU(800, 2000), logU(150, 350)
		for at, k := 0.0, 0; at < end; at, k = at+u(0.2, 1), k+1 {
			step(at, map[bool]float64{true: hi, false: lo}[k%2 == 0])
		}
	case "square":
		hi, lo := logU(600, 1500), logU(150, 400)
		for at, k := 0.0, 0; at < end; at, k = at+u(1, 5), k+1 {
			step(at, map[bool]float64{true: hi, false: lo}[k%2 == 0])
		}
	default:
		return nil, fmt.Errorf("unknown trace kind %q: want %s", kind, strings.Join(TraceKinds, ", "))
	}
	return relay.ParseTrace(fmt.Sprintf("%s-%d", kind, seed), strings.NewReader(b.String()))
}
