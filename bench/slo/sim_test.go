package slo

import (
	"path/filepath"
	"testing"
	"time"
)

// The side rule judged in virtual time on the six shipped traces and 20
// seeded random ones of every kind (bench slo --simulate), on a sender that
// blocks until the link carried a batch (the relay's shaped one) and on one
// that queues on the wire (a real link's): within a point
// of the per-second bound on average, as the issue asks. The verdicts
// (every trace at least the best static choice, misses within 2% or the
// smallest's) are printed: the engine run is their judge of record, and
// docs/benchmarks.md has the traces where the simulated rule fails them.
func TestSimulatedSideRule(t *testing.T) {
	o := sloOptions{catalog: filepath.Join("..", "..", "examples", "fashion", "sizes.yaml"), model: "classify_sized", workerType: "x2",
		clients: 4, rate: 15, slo: 100 * time.Millisecond, random: 20, seed: 1, kinds: TraceKinds}
	for _, n := range []string{"flapping", "step-heavy", "lte-like", "deep-dips", "slow-ramp", "synthetic"} {
		o.traces = append(o.traces, filepath.Join("..", "..", "examples", "traces", n+".csv"))
	}
	trs, err := sloTraces(o)
	if err != nil {
		t.Fatal(err)
	}
	variants, err := sloVariants(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sender := range []string{"blocking", "queued"} {
		o.simSender = sender
		_, _, verdicts := simulateTraces(o, variants, trs, nil)
		var gap float64
		pass := 0
		for _, v := range verdicts {
			gap += v.Gap
			if v.Verdict == "pass" {
				pass++
			}
			t.Logf("%s %-12s adaptive %5.2f%% %5.2f | best static %s %.2f%% %.2f | per-second %.2f | %s", sender, v.Trace, 100*v.AdaptiveMiss, v.AdaptiveByVariant, v.BestStatic, 100*v.StaticMiss, v.StaticAcc, v.PerSecondAcc, v.Verdict)
		}
		gap /= float64(len(verdicts))
		t.Logf("%s: %d of %d pass; %.2f points under the per-second bound on average", sender, pass, len(verdicts), gap)
		t.Logf("%s: by kind: %s", sender, formatKindGaps(gapByKind(verdicts)))
		if gap > 1 {
			t.Errorf("%s: %.2f points under the per-second bound on average, want at most 1", sender, gap)
		}
	}
}
