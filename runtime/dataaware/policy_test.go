package dataaware_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/dataaware"
)

// TestPolicyAsksOnceTheMixSettles: no decision before MinRows or MinAge,
// none while the estimate still moves, one (with the mix) when it has
// settled away from the base, none again until it moves once more.
func TestPolicyAsksOnceTheMixSettles(t *testing.T) {
	ev := dataaware.Predicted{Labels: []string{"no fall", "fall"}}
	est, err := dataaware.NewEstimator(ev, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	p := &dataaware.Policy{Model: "detect", Estimator: est, MinRows: 20, MinAge: time.Second, Drift: 0.2,
		Base: map[string]float64{"no fall": 1, "fall": 1}}
	in := control.PolicyInput{Query: "q1", Age: 5 * time.Second}
	feed := func(label float32, n int) {
		rows := make([]float32, n)
		for i := range rows {
			rows[i] = label
		}
		if err := est.Observe("", rows); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, 10)
	if d := p.Decide(in); d != nil {
		t.Fatalf("decided on 10 rows: %+v", d)
	}
	feed(0, 90)
	if d := p.Decide(control.PolicyInput{Query: "q1", Age: 500 * time.Millisecond}); d != nil {
		t.Fatalf("decided on a plan younger than MinAge: %+v", d)
	}
	// The first look only records the estimate: it may still be moving.
	if d := p.Decide(in); d != nil {
		t.Fatalf("decided at the first look: %+v", d)
	}
	feed(0, 5)
	d := p.Decide(in)
	if d == nil || d.ClassMix["detect"]["no fall"] < 0.9 || !strings.Contains(d.Reason, "no fall") {
		t.Fatalf("decision %+v: want a re-plan with a mix of mostly no fall", d)
	}
	feed(0, 5)
	if d := p.Decide(in); d != nil {
		t.Fatalf("asked again for the same mix: %+v", d)
	}
	// A shift half way through the window is not settled yet.
	feed(1, 30)
	if d := p.Decide(in); d != nil {
		t.Fatalf("decided while the mix moves: %+v", d)
	}
	feed(1, 200)
	p.Decide(in)
	if d := p.Decide(in); d == nil || d.ClassMix["detect"]["fall"] < 0.9 {
		t.Fatalf("decision %+v: want a re-plan to mostly fall", d)
	}
	if got := dataaware.Distance(map[string]float64{"a": 1}, map[string]float64{"b": 3}); got != 1 {
		t.Fatalf("distance of disjoint mixes %v", got)
	}
}
