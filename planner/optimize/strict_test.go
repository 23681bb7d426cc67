package optimize_test

import (
	"math"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// TestStrictModel: PrototypeModel{Strict: true} prices a worker at its own price
// whatever its tier's TCoeff, and traffic between locations of one tier as
// free, where tierflow's default charges TCoeff x price and the tier's own link.
func TestStrictModel(t *testing.T) {
	p := &optimize.Problem{
		Tiers:   []optimize.Tier{{Name: "edge", Locations: 2}, {Name: "cloud"}},
		Sources: []optimize.Source{{Name: "cam", Rate: 10, Tier: "edge", Location: "a"}},
		Workers: []optimize.Worker{
			{Name: "ea", Tier: "edge", Location: "a", Price: 1},
			{Name: "eb", Tier: "edge", Location: "b", Price: 1},
		},
		Operators: []optimize.Operator{
			{Name: "A", Variants: []optimize.Variant{{Name: "v", LatencyMs: map[string]float64{"ea": 10, "eb": 10}}}},
			{Name: "B", Variants: []optimize.Variant{{Name: "v", LatencyMs: map[string]float64{"ea": 10, "eb": 10}}}},
		},
		Edges:      []optimize.Edge{{From: "cam", To: "A", KB: 1}, {From: "A", To: "B", KB: 1024}},
		TierLinks:  []optimize.TierLink{{From: "edge", To: "edge", Multiplier: 1}},
		Objectives: optimize.Objectives{Sink: "B"},
	}
	a := optimize.Assignment{{Operator: "A", Variant: "v", Workers: []string{"ea"}}, {Operator: "B", Variant: "v", Workers: []string{"eb"}}}
	def, err := optimize.Evaluate(p, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := optimize.Evaluate(p, a, optimize.PrototypeModel{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	// Edge TCoeff 2: two machines per worker by default, one when strict.
	if def.ComputeCost != 4 || strict.ComputeCost != 2 {
		t.Errorf("compute: default %v (want 4), strict %v (want 2)", def.ComputeCost, strict.ComputeCost)
	}
	// 10 MB/s from location a to b at 1 per GB costs 35.15625 per hour by default.
	if math.Abs(def.NetworkCost-10*3600.0/1024) > 1e-9 || strict.NetworkCost != 0 {
		t.Errorf("network: default %v (want %v), strict %v (want 0)", def.NetworkCost, 10*3600.0/1024, strict.NetworkCost)
	}
}
