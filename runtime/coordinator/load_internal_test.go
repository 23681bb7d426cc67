package coordinator

import (
	"maps"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestLeastLoadedSwapsOnlyWhatCostsTheSame: the optimizer's plan is moved
// onto the least loaded workers only among those the cost model cannot
// tell apart (tier, location, type and reserved capacity); the worker the
// plan uses most gets the least loaded one, and nothing moves where the
// plan already sits on the least loaded or uses every worker of a class.
func TestLeastLoadedSwapsOnlyWhatCostsTheSame(t *testing.T) {
	ws := []deploy.Worker{
		{Name: "e1", Tier: "edge", Type: "x4"}, {Name: "e2", Tier: "edge", Type: "x4"}, {Name: "e3", Tier: "edge", Type: "x4"},
		{Name: "g1", Tier: "edge", Type: "gpu"}, {Name: "g2", Tier: "edge", Type: "gpu"},
		{Name: "h1", Tier: "hub", Type: "x4"}, {Name: "h2", Tier: "hub", Type: "x4"},
		{Name: "c1", Tier: "cloud", Type: "x4", Location: "a"}, {Name: "c2", Tier: "cloud", Type: "x4", Location: "b"},
	}
	plan := func(parts ...[]string) *physical.Plan {
		p := &physical.Plan{}
		for _, names := range parts {
			op := physical.Operator{}
			for _, n := range names {
				op.Workers = append(op.Workers, physical.Worker{Name: n})
			}
			p.Operators = append(p.Operators, op)
		}
		return p
	}
	for _, c := range []struct {
		name     string
		plan     *physical.Plan
		load     map[string]int
		reserved []optimize.Reservation
		want     map[string]string
	}{
		{"idle", plan([]string{"e1"}, []string{"h1"}), nil, nil, map[string]string{}},
		{"the busy worker's part moves to the idle one", plan([]string{"e1"}, []string{"e1"}, []string{"g1"}),
			map[string]int{"e1": 4, "e2": 1, "g1": 3, "g2": 3}, nil, map[string]string{"e1": "e3"}},
		{"the most used part gets the least loaded", plan([]string{"e1"}, []string{"e2"}, []string{"e2"}),
			map[string]int{"e1": 5, "e2": 5, "e3": 1}, nil, map[string]string{"e2": "e3"}},
		{"a class the plan uses whole stays", plan([]string{"h1", "h2"}), map[string]int{"h1": 9}, nil, map[string]string{}},
		{"not across locations", plan([]string{"c1"}), map[string]int{"c1": 9}, nil, map[string]string{}},
		{"not onto a worker with capacity reserved", plan([]string{"h1"}), map[string]int{"h1": 9},
			[]optimize.Reservation{{Worker: "h2", Busy: 0.5}}, map[string]string{}},
	} {
		got := leastLoaded(c.plan, ws, c.load, c.reserved)
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
