package coordinator

import (
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/policy"
)

// asked records the decisions its policy would take, at what time the
// coordinator asked, and asks for no re-plan (the test has no cluster).
type asked struct {
	p     control.Policy
	now   *time.Time
	calls []time.Time
	made  map[time.Time]*control.Decision
}

func (a *asked) Decide(in control.PolicyInput) *control.Decision {
	a.calls = append(a.calls, *a.now)
	if a.p != nil {
		if d := a.p.Decide(in); d != nil {
			a.made[*a.now] = d
		}
	}
	return nil
}

// withZoo is the Jellyfish policy's cadence (every report) for a query
// whose zoo is given, as policy.Jellyfish builds it from a placement.
type withZoo struct {
	rule control.Policy
	in   *control.LatencyInput
}

func (withZoo) Name() string                           { return "slo" }
func (withZoo) Cadence() policy.Cadence                { return policy.Jellyfish{}.Cadence() }
func (w withZoo) Attach(*policy.Placed) control.Policy { return w }
func (w withZoo) Decide(in control.PolicyInput) *control.Decision {
	in.Latency = w.in
	return w.rule.Decide(in)
}

// TestSLOPolicyDecidesAtTheNextStatus: the Jellyfish policy is asked at
// every status report of a LATENCY query, so when a link's ack estimate
// drops half a second after the last decision, the step down is decided
// at that report (before, the coordinator asked at most once a second and
// the frames queued behind the slower link meanwhile); the other policies
// are still asked at most once a second.
func TestSLOPolicyDecidesAtTheNextStatus(t *testing.T) {
	var now time.Time
	slo := &asked{p: control.DefaultJellyfish, now: &now, made: map[time.Time]*control.Decision{}}
	other := &asked{now: &now, made: map[time.Time]*control.Decision{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zoo := []control.JFVariant{}
	for i, side := range []int{14, 20, 28} {
		zoo = append(zoo, control.JFVariant{Name: []string{"fit-14", "fit-20", "fit-28"}[i], Side: side, Bytes: float64(side*side*4 + 64),
			Accuracy: []float64{0.84, 0.87, 0.89}[i], BatchMs: []float64{1, 1.2, 1.4, 1.6}})
	}
	zooIn := &control.LatencyInput{SLOMs: 100, Calls: []control.LatencyCall{{Call: "classify", Variant: "fit-28", Variants: zoo}}}
	c := &Coordinator{cfg: Config{Policies: []policy.Policy{withZoo{rule: slo, in: zooIn}, policy.Rule("other", policy.EverySecond, other)}},
		queries: map[string]*supervisor{}}
	qs := &supervisor{info: deploy.QueryInfo{Query: "q", Generation: 1, Workers: []string{"e1", "h1"}, State: deploy.StateRunning, Started: t0},
		c: c, state: genRunning, replayable: true, planned: t0}
	qs.attach(&policy.Placed{Query: "q"})
	link := func(kbit float64) *control.Estimates {
		return &control.Estimates{Samples: 3, Operators: []control.OperatorEstimate{{Operator: "model classify", InputRate: 15}},
			Links: []control.LinkEstimate{{Link: relay.LinkID{Query: "q", Edge: 1}, From: "e1", To: "h1", AckBandwidthBps: kbit * 1000 / 8}}}
	}
	// Status reports every half second; the link carries fit-28's 15
	// frames a second until 3.5 s, then drops to 400 kbit/s.
	var down time.Time
	for k := 2; k <= 8; k++ {
		now = t0.Add(time.Duration(k) * 500 * time.Millisecond)
		qs.info.Estimates = link(800)
		if k >= 7 {
			qs.info.Estimates = link(400)
		}
		qs.decide(now, nil)
		if d := slo.made[now]; d != nil && down.IsZero() {
			down = now
			if d.Variants["classify"] != "fit-20" {
				t.Fatalf("at %v: %+v, want a step down to fit-20", now.Sub(t0), d)
			}
		}
	}
	if want := t0.Add(3500 * time.Millisecond); !down.Equal(want) {
		t.Fatalf("step down decided at %v, want at the first report after the drop (3.5s); asked at %v", down.Sub(t0), slo.calls)
	}
	if len(slo.calls) != 7 {
		t.Errorf("SLO policy asked %d times for 7 status reports", len(slo.calls))
	}
	for i := 1; i < len(other.calls); i++ {
		if gap := other.calls[i].Sub(other.calls[i-1]); gap < time.Second {
			t.Errorf("the other policy was asked %v after the last time, want at most once a second", gap)
		}
	}
	if len(other.calls) != 4 {
		t.Errorf("other policy asked at %v, want 4 times in 3.5 s", other.calls)
	}
}
