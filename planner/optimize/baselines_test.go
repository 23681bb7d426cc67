package optimize_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// e2eProblem is small enough to price by hand: camera (edge) -> A -> B, 1 MB
// per item from the camera, 0.1 per GB from the edge to the cloud. A has a fast
// inaccurate variant and the accurate one every end-to-end baseline must use.
// Whole-workflow load per item/s (A's + B's latency): g1 20+30 ms (price 3),
// g2 10+10 ms (price 4), c1 a cloud CPU (no GPU), e1 an edge CPU.
func e2eProblem(rate float64) *optimize.Problem {
	return &optimize.Problem{
		Tiers:   []optimize.Tier{{Name: "edge"}, {Name: "cloud"}},
		Sources: []optimize.Source{{Name: "camera", Rate: rate, Tier: "edge"}},
		Workers: []optimize.Worker{
			{Name: "e1", Tier: "edge", Price: 1},
			{Name: "c1", Tier: "cloud", Price: 0.5},
			{Name: "g1", Tier: "cloud", Price: 3, GPU: "V100"},
			{Name: "g2", Tier: "cloud", Price: 4, GPU: "V100"},
		},
		Operators: []optimize.Operator{
			{Name: "A", Variants: []optimize.Variant{
				{Name: "small", Accuracy: optimize.Float(70), LatencyMs: map[string]float64{"e1": 5, "c1": 5, "g1": 1, "g2": 1}},
				{Name: "big", Accuracy: optimize.Float(90), LatencyMs: map[string]float64{"e1": 50, "c1": 40, "g1": 20, "g2": 10}},
			}},
			{Name: "B", Variants: []optimize.Variant{
				{Name: "default", LatencyMs: map[string]float64{"e1": 50, "c1": 40, "g1": 30, "g2": 10}},
			}},
		},
		Edges: []optimize.Edge{
			{From: "camera", To: "A", KB: 1024},
			{From: "A", To: "B", KB: 1},
		},
		TierLinks:  []optimize.TierLink{{From: "edge", To: "cloud", Multiplier: 0.1}},
		Objectives: optimize.Objectives{Sink: "B", MinAccuracy: optimize.Float(60)},
	}
}

// shipped is the hourly cost of carrying rate MB/s from the edge to the cloud
// at 0.1 per GB.
func shipped(rate float64) float64 { return rate * 3600 / 1024 * 0.1 }

func workersOf(op optimize.OperatorPlan) string {
	var ws []string
	for _, w := range op.Workers {
		ws = append(ws, w.Name)
	}
	return strings.Join(ws, ",")
}

func TestEndToEndBaselines(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		strategy string
		rate     float64
		workers  string // of every operator
		compute  float64
		network  float64
	}{
		// g2 costs 4 x 0.2 = 0.8 per unit of workflow throughput at 10/s, g1
		// 3 x 0.5 = 1.5: PTC takes g2 alone.
		{"ptc", 10, "g2", 4, shipped(10)},
		// PTE pretends copies of PTC's cheapest GPU at the edge: no network.
		{"pte", 10, "g2", 4, 0},
		// SPC keeps every cloud GPU (not the CPU c1).
		{"spc", 10, "g1,g2", 7, shipped(10)},
		// At 60/s g2 carries 1/1.2 of the items, g1 the rest.
		{"ptc", 60, "g2,g1", 7, shipped(60)},
		// Two pretended copies of g2 (load 1.2).
		{"pte", 60, "g2#1,g2#2", 8, 0},
		{"spc", 60, "g1,g2", 7, shipped(60)},
	} {
		pl, err := optimize.DefaultRegistry().Optimize(ctx, c.strategy, e2eProblem(c.rate), optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !pl.Feasible {
			t.Errorf("%s at %g/s: infeasible: %s", c.strategy, c.rate, pl.Reason)
			continue
		}
		if math.Abs(pl.ComputeCost-c.compute) > 1e-9 || math.Abs(pl.NetworkCost-c.network) > 1e-9 {
			t.Errorf("%s at %g/s: compute %v network %v, want %v %v", c.strategy, c.rate, pl.ComputeCost, pl.NetworkCost, c.compute, c.network)
		}
		if pl.Accuracy != 90 || pl.Operators[0].Variant != "big" {
			t.Errorf("%s at %g/s: %s with accuracy %v, want the most accurate (big, 90)", c.strategy, c.rate, pl.Operators[0].Variant, pl.Accuracy)
		}
		for _, op := range pl.Operators {
			if got := workersOf(op); got != c.workers {
				t.Errorf("%s at %g/s: %s on %s, want %s", c.strategy, c.rate, op.Name, got, c.workers)
			}
		}
	}
}

func TestEndToEndBaselinesSayWhyNot(t *testing.T) {
	ctx := context.Background()
	// At 100/s the whole-workflow loads are 2 (g2) and 5 (g1): both GPUs
	// together carry 1/2 + 1/5 = 0.7 of the demand.
	for _, s := range []string{"ptc", "spc"} {
		pl, err := optimize.DefaultRegistry().Optimize(ctx, s, e2eProblem(100), optimize.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if pl.Feasible || !strings.Contains(pl.Reason, "carry 70 of the 100 items/s") {
			t.Errorf("%s at 100/s: feasible %v, reason %q", s, pl.Feasible, pl.Reason)
		}
	}
	// PTE is not bound by what the cloud has: at 100/s (g2 load 2) two pretended g2.
	pl, err := optimize.PTE{}.Optimize(ctx, e2eProblem(100), optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Feasible || pl.ComputeCost != 8 || pl.NetworkCost != 0 {
		t.Errorf("pte at 100/s: feasible %v compute %v network %v, want two pretended g2 (8, 0)", pl.Feasible, pl.ComputeCost, pl.NetworkCost)
	}
	// The most accurate variants miss a target above them.
	p := e2eProblem(10)
	p.Objectives.MinAccuracy = optimize.Float(95)
	pl, err = optimize.PTC{}.Optimize(ctx, p, optimize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Feasible || !strings.Contains(pl.Reason, "accuracy") {
		t.Errorf("accuracy 95: feasible %v, reason %q", pl.Feasible, pl.Reason)
	}
}
