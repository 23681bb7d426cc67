package optimize_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/optimize"
)

func TestExhaustiveGivesUpAtBudget(t *testing.T) {
	p := vqaXLarge(refProblem(t), 100, 57)
	pl, err := optimize.Exhaustive{}.Optimize(context.Background(), p, optimize.Options{TimeBudget: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.GaveUp || pl.Optimal || !strings.Contains(pl.Note, "gave up after") {
		t.Fatalf("gave up %v optimal %v note %q", pl.GaveUp, pl.Optimal, pl.Note)
	}
	// Auto under the same budget still returns jellybean's plan at worst.
	au, err := optimize.Auto{}.Optimize(context.Background(), p, optimize.Options{TimeBudget: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	jb, err := optimize.JellyBean{}.Optimize(context.Background(), p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !au.Feasible || !au.GaveUp || au.TotalCost > jb.TotalCost+1e-9 {
		t.Fatalf("auto feasible %v gave up %v cost %v, jellybean %v", au.Feasible, au.GaveUp, au.TotalCost, jb.TotalCost)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (optimize.Exhaustive{}).Optimize(ctx, vqaXLarge(refProblem(t), 100, 57), optimize.Options{}); err == nil {
		t.Fatal("cancelled search returned no error")
	}
}

func TestTCoeffScalesCapacityAndPrice(t *testing.T) {
	p := &optimize.Problem{
		Tiers:      []optimize.Tier{{Name: "edge", Locations: 5}, {Name: "hub", Locations: 2}, {Name: "cloud"}},
		Workers:    []optimize.Worker{{Name: "e", Tier: "edge", Price: 1}, {Name: "h", Tier: "hub", Price: 1}, {Name: "c", Tier: "cloud", Price: 1}},
		Sources:    []optimize.Source{{Name: "s", Rate: 1, Tier: "edge"}},
		Operators:  []optimize.Operator{{Name: "op", Variants: []optimize.Variant{{Name: "v", LatencyMs: map[string]float64{"e": 1000, "h": 1000, "c": 1000}}}}},
		Edges:      []optimize.Edge{{From: "s", To: "op"}},
		Objectives: optimize.Objectives{Sink: "op"},
	}
	for w, want := range map[string]float64{"e": 10, "h": 2, "c": 1} {
		pl, err := optimize.Evaluate(p, optimize.Assignment{{Operator: "op", Variant: "v", Workers: []string{w}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := pl.Operators[0].Workers[0].Capacity; got != want || pl.ComputeCost != want {
			t.Errorf("%s: capacity %v price %v, want TCoeff %v for both", w, got, pl.ComputeCost, want)
		}
	}
	if _, err := optimize.Evaluate(&optimize.Problem{}, nil, nil); !errors.Is(err, optimize.ErrInvalidProblem) {
		t.Errorf("empty problem: %v, want ErrInvalidProblem", err)
	}
}

func TestRegistry(t *testing.T) {
	reg := optimize.DefaultRegistry()
	want := []string{"auto", "best-fit", "exhaustive", "first-fit", "jellybean", "most-accurate", "ptc", "pte", "spc"}
	if got := reg.Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("names %v", got)
	}
	if s, err := reg.Lookup(""); err != nil || s.Name() != optimize.DefaultStrategy {
		t.Fatalf("default: %v %v", s, err)
	}
	if _, err := reg.Lookup("greedy"); !errors.Is(err, optimize.ErrUnknownStrategy) {
		t.Fatal("unknown strategy accepted")
	}
	for _, n := range reg.Names() {
		s, _ := reg.Lookup(n)
		if whole := n == "ptc" || n == "pte" || n == "spc"; optimize.IsWholeWorkflow(s) != whole {
			t.Errorf("%s: whole workflow %v, want %v", n, optimize.IsWholeWorkflow(s), whole)
		}
	}
}
