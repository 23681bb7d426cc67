package dataaware_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/tierflow/tierflow/runtime/dataaware"
)

func TestPenalties(t *testing.T) {
	for _, tc := range []struct {
		p    dataaware.Penalty
		d, e float64
		want float64
	}{
		{dataaware.Step, 10, 10, 0}, {dataaware.Step, 10, 10.1, 1},
		{dataaware.Linear, 10, 15, 0.5}, {dataaware.Linear, 10, 40, 1}, {dataaware.Linear, 10, 9, 0},
		{dataaware.Sigmoid, 10, 15, 0.5}, {dataaware.Sigmoid, 10, 20, 1}, {dataaware.Sigmoid, 10, 11, 1 / (1 + math.Pow(1.0/9, -3))},
	} {
		if got := tc.p.Gamma(tc.d, tc.e); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s.Gamma(%v, %v) = %v, want %v", tc.p, tc.d, tc.e, got, tc.want)
		}
	}
	if _, err := dataaware.ParsePenalty("cubic"); err == nil {
		t.Error("cubic accepted")
	}
	if u := dataaware.Linear.Utility(0.9, 10, 15); math.Abs(u-0.45) > 1e-12 {
		t.Errorf("utility %v", u)
	}
}

// window: two applications alike, whose fast model is good on class 0 and
// bad on class 1 and whose slow model is good on both; eight requests
// alternating between the applications, half of each class, with deadlines
// that leave time for two slow batches, or two fast and two slow ones,
// but not for a slow call each.
func window() *dataaware.Problem {
	p := &dataaware.Problem{}
	for _, name := range []string{"a", "b"} {
		fast := &dataaware.Model{Name: "fast", Accuracy: 0.70, Recall: []float64{0.98, 0.42}, Fixed: 1, PerItem: 0.1}
		slow := &dataaware.Model{Name: "slow", Accuracy: 0.90, Recall: []float64{0.80, 0.99}, Fixed: 4, PerItem: 0.2}
		sc := &dataaware.Model{Name: "sneakpeek", Accuracy: 0.6, ShortCircuit: true}
		p.Apps = append(p.Apps, &dataaware.App{Name: name, Models: []*dataaware.Model{fast, slow, sc}, Penalty: dataaware.Step})
	}
	for i := 0; i < 8; i++ {
		votes := []float64{5, 0}
		if i/2%2 == 1 {
			votes = []float64{0, 5}
		}
		p.Requests = append(p.Requests, &dataaware.Request{App: i % 2, Arrival: 0, Deadline: 12 + 0.01*float64(i), Votes: votes})
	}
	return p
}

func TestSchedulersOnAWindow(t *testing.T) {
	p := window()
	u := map[string]float64{}
	for _, s := range []dataaware.Scheduler{dataaware.MaxAccEDF{}, dataaware.LOEDF{}, dataaware.Grouped{Threshold: 5}, dataaware.Grouped{Threshold: 5, Aware: true}} {
		sch := s.Schedule(p)
		n := 0
		for _, b := range sch {
			n += len(b.Requests)
		}
		if n != len(p.Requests) {
			t.Fatalf("%s scheduled %d of %d requests: %+v", s.Name(), n, len(p.Requests), sch)
		}
		u[s.Name()] = dataaware.ExpectedUtility(p, sch, true)
	}
	// MaxAcc-EDF: slow one by one (4.2 each: two of eight meet 12).
	// LO-EDF: slow while it fits, then fast. Grouped: one slow batch per
	// application (4.8 + 4.8 <= 12). SneakPeek: class-1 requests on slow,
	// class-0 ones on fast (1.2 + 1.2 + 4.4 + 4.4 <= 12).
	t.Logf("utilities %v", u)
	if !(u["maxacc-edf"] < u["lo-edf"] && u["lo-edf"] <= u["grouped"] && u["grouped"] < u["sneakpeek"]) {
		t.Fatalf("utilities %v: want maxacc-edf < lo-edf <= grouped < sneakpeek", u)
	}
	sp := dataaware.Grouped{Threshold: 5, Aware: true}.Schedule(p)
	models := map[string]map[int]bool{}
	for _, b := range sp {
		cls := 0
		if p.Requests[b.Requests[0]].Votes[1] > 0 {
			cls = 1
		}
		name := p.Apps[b.App].Models[b.Model].Name
		if models[name] == nil {
			models[name] = map[int]bool{}
		}
		models[name][cls] = true
	}
	if len(sp) != 4 || models["slow"][0] || models["fast"][1] {
		t.Fatalf("sneakpeek schedule %+v: want class 0 on fast, class 1 on slow", sp)
	}
	// The greedy path (threshold 0) still schedules every request.
	g := dataaware.Grouped{Threshold: 0, Aware: true}.Schedule(p)
	if dataaware.ExpectedUtility(p, g, true) <= 0 {
		t.Fatalf("greedy grouped schedule %+v has no utility", g)
	}
}

// TestShortCircuitSavesHopelessDeadlines: when no model can finish in time,
// SneakPeek answers with the estimator's own labels (latency 0).
func TestShortCircuitSavesHopelessDeadlines(t *testing.T) {
	p := window()
	for _, r := range p.Requests {
		r.Deadline = 0.5
	}
	sp := dataaware.Grouped{Threshold: 5, Aware: true}.Schedule(p)
	for _, b := range sp {
		if !p.Apps[b.App].Models[b.Model].ShortCircuit {
			t.Fatalf("schedule %+v runs a model that cannot make 0.5", sp)
		}
	}
	if u := dataaware.ExpectedUtility(p, sp, true); math.Abs(u-0.6) > 1e-9 {
		t.Fatalf("utility %v, want the short-circuit accuracy 0.6", u)
	}
	if u := dataaware.ExpectedUtility(p, dataaware.Grouped{Threshold: 5}.Schedule(p), false); u != 0 {
		t.Fatalf("grouped without short-circuit: utility %v, want 0", u)
	}
}

// TestSneakPeekKeepsTheProfiledPlanWithinMargin: with time for the slow
// model everywhere, a class split that the recalls favour by a hair
// (0.801 against 0.80) is noise and SneakPeek runs dataaware.Grouped's plan; by 18
// points it is not, and SneakPeek splits.
func TestSneakPeekKeepsTheProfiledPlanWithinMargin(t *testing.T) {
	for _, tc := range []struct {
		fast0 float64
		same  bool
	}{{0.801, true}, {0.98, false}} {
		p := window()
		for _, r := range p.Requests {
			r.Deadline = 100
		}
		for _, a := range p.Apps {
			a.Models[0].Recall = []float64{tc.fast0, 0.42}
		}
		g := dataaware.Grouped{Threshold: 5}.Schedule(p)
		sp := dataaware.Grouped{Threshold: 5, Aware: true}.Schedule(p)
		if same := fmt.Sprint(g) == fmt.Sprint(sp); same != tc.same {
			t.Errorf("fast recall %v on class 0: grouped %v, sneakpeek %v: same plan %v, want %v", tc.fast0, g, sp, same, tc.same)
		}
	}
}

// TestCalibrationSpreadsVotes: votes for a class the estimator confuses
// spread over the classes found behind it; the total stays.
func TestCalibrationSpreadsVotes(t *testing.T) {
	var votes [][]float64
	var truth []int
	for i := 0; i < 100; i++ {
		votes = append(votes, []float64{5, 0}) // called 0: 60 are, 40 are 1
		truth = append(truth, map[bool]int{true: 0, false: 1}[i < 60])
		votes = append(votes, []float64{0, 5}) // called 1: all are
		truth = append(truth, 1)
	}
	cb := dataaware.NewCalibration(votes, truth, 2)
	got := cb.Votes([]float64{5, 0})
	if math.Abs(got[0]+got[1]-5) > 1e-9 || math.Abs(got[0]/5-0.6) > 0.02 {
		t.Fatalf("calibrated %v: want about 3 and 2", got)
	}
	if got := cb.Votes([]float64{0, 5}); got[1] < 4.9 {
		t.Fatalf("calibrated %v: class 1 is never confused", got)
	}
}
