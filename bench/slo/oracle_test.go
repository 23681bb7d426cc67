package slo

import (
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/bench/slo/harness"
	"github.com/tierflow/tierflow/relay"
)

// oracleZoo is the size family as the oracle weighs it: float32 frames.
func oracleZoo() []oracleVariant {
	return []oracleVariant{
		{Name: "fit-14", Bytes: 14*14*4 + frameOverhead, ComputeMs: 1, Accuracy: 86},
		{Name: "fit-20", Bytes: 20*20*4 + frameOverhead, ComputeMs: 1, Accuracy: 87},
		{Name: "fit-28", Bytes: 28*28*4 + frameOverhead, ComputeMs: 1, Accuracy: 88},
	}
}

func trace(t *testing.T, csv string) *relay.Trace {
	t.Helper()
	tr, err := relay.ParseTrace("test", strings.NewReader("t_s,kbit_s\n"+csv))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The oracle's bounds: on a fast link every variant keeps the SLO and the
// largest is best; on a slow one the larger frames queue and only the
// smallest keeps it; on a link that alternates, the per-second choice
// beats every static one (it sends 28x28 in the fast seconds) and keeps
// the SLO.
func TestOracleBounds(t *testing.T) {
	slo := 100 * time.Millisecond
	static, best, perSec := oracleBounds(trace(t, "0,2000\n1,2000\n"), 2, 150, 15, slo, oracleZoo())
	if len(static) != 3 || static[2].SLOMissRate != 0 || best.Accuracy != 88 || perSec.Accuracy != 88 || perSec.SLOMissRate != 0 {
		t.Fatalf("2000 kbit/s: static %+v, best %+v, per second %+v", static, best, perSec)
	}
	static, best, _ = oracleBounds(trace(t, "0,200\n1,200\n"), 2, 150, 15, slo, oracleZoo())
	if static[0].SLOMissRate != 0 || static[1].SLOMissRate < 0.5 || static[2].SLOMissRate < 0.9 || !strings.Contains(best.Name, "fit-14") {
		t.Fatalf("200 kbit/s: static %+v, best %+v", static, best)
	}
	static, best, perSec = oracleBounds(trace(t, "0,2000\n5,200\n"), 2, 300, 15, slo, oracleZoo())
	if !strings.Contains(best.Name, "fit-14") || perSec.Accuracy <= best.Accuracy || perSec.SLOMissRate > MaxMissRate {
		t.Fatalf("2000/200 kbit/s: static %+v, best %+v, per second %+v: want the per-second choice above the best static one", static, best, perSec)
	}
}

// The generator: the same kind and seed give the same trace, another seed
// another; every kind gives a valid trace of about the length asked; an
// unknown kind is an error that names the kinds.
func TestGenerateTrace(t *testing.T) {
	for _, kind := range TraceKinds {
		a, err := GenerateTrace(kind, 7, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		b, _ := GenerateTrace(kind, 7, 30*time.Second)
		c, _ := GenerateTrace(kind, 8, 30*time.Second)
		if len(a.Steps) < 2 || a.Period < 25*time.Second || a.Period > 40*time.Second {
			t.Errorf("%s: %d steps over %v", kind, len(a.Steps), a.Period)
		}
		if a.Name != kind+"-7" || len(a.Steps) != len(b.Steps) || a.Steps[1] != b.Steps[1] {
			t.Errorf("%s: seed 7 twice gave %+v and %+v", kind, a.Steps[:2], b.Steps[:2])
		}
		if len(a.Steps) == len(c.Steps) && a.Steps[0] == c.Steps[0] && a.Steps[1] == c.Steps[1] {
			t.Errorf("%s: seeds 7 and 8 gave the same trace", kind)
		}
		for _, s := range a.Steps {
			if s.KbitS < 50 || s.KbitS > 3000 {
				t.Errorf("%s: step %+v out of range", kind, s)
			}
		}
	}
	if _, err := GenerateTrace("bursts", 1, 30*time.Second); err == nil || !strings.Contains(err.Error(), "flapping") {
		t.Errorf("unknown kind: %v", err)
	}
}

// The verdict weighs the adaptive run's frames at the accuracy of the
// variant that answered each, as its static run measured it: a run that
// sent a third of its frames at 28x28 and the rest at 20x20 is judged
// above static-middle even when its answers, scored one by one, came out
// under it by the luck of which frames went where; one that sent too many
// at 14x14 is judged under it, whatever its answers scored.
func TestJudgeWeighsTheAdaptiveRunByItsVariants(t *testing.T) {
	o := sloOptions{clients: 2, rate: 15, slo: 100 * time.Millisecond, duration: 10 * time.Second}
	variants := []harness.Variant{{Name: "fit-14", Side: 14, Accuracy: 0.86}, {Name: "fit-20", Side: 20, Accuracy: 0.87}, {Name: "fit-28", Side: 28, Accuracy: 0.88}}
	statics := []*harness.Result{
		{Policy: "static-smallest", Accuracy: 86.5},
		{Policy: "static-middle", Accuracy: 87.6},
		{Policy: "static-largest", SLOMissRate: 0.3, Accuracy: 88.4},
	}
	tr := trace(t, "0,600\n1,600\n")
	cases := []struct {
		name    string
		ran     map[string]int64
		scored  float64
		want    float64
		verdict string
	}{
		{"a third at 28x28", map[string]int64{"fit-28": 100, "fit-20": 200}, 87.3, 87.87, "pass"},
		{"a third at 14x14", map[string]int64{"fit-14": 100, "fit-20": 200}, 87.9, 87.23, "FAIL: 0.37 points under static-middle"},
		{"no counts", nil, 87.7, 87.7, "pass"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adaptive := &harness.Result{Policy: "adaptive", Accuracy: c.scored, Ran: c.ran}
			_, v := judge(o, tr, variants, append([]*harness.Result{adaptive}, statics...))
			if v.AdaptiveAcc != c.scored || v.AdaptiveByVariant != c.want || v.BestStatic != "static-middle" || v.Verdict != c.verdict {
				t.Fatalf("verdict %+v, want by variant %v and %q against static-middle", v, c.want, c.verdict)
			}
		})
	}
}

// The gap to the per-second bound per kind of trace: the mean over all
// traces can pass while one kind stays over a point under the bound.
func TestGapByKind(t *testing.T) {
	vs := []sloVerdictRow{
		{Trace: "fades-2", Gap: 1.2, Verdict: "pass"},
		{Trace: "flapping-4", Gap: -0.4, Verdict: "pass"},
		{Trace: "fades-7", Gap: 1.0, Verdict: "FAIL: misses 2.1%"},
		{Trace: "step-heavy", Gap: 0.3, Verdict: "pass"},
		{Trace: "fades-x", Gap: 0.5, Verdict: "pass"},
		{Trace: "walk-3", Gap: 9, Verdict: "no adaptive run"},
	}
	got := formatKindGaps(gapByKind(vs))
	if want := "fades 1.10 (2), flapping -0.40 (1), other 0.40 (2)"; got != want {
		t.Errorf("gapByKind = %q, want %q", got, want)
	}
	for name, want := range map[string]string{"steps-201": "steps", "walk-2103": "walk", "deep-dips": "other", "square-": "other", "lte-like-3": "other"} {
		if got := traceKind(name); got != want {
			t.Errorf("traceKind(%q) = %q, want %q", name, got, want)
		}
	}
}
