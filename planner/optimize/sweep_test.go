package optimize_test

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/tierflow/tierflow/planner/optimize"
)

// TestSweepAutoIsExact: over the bench-planner target sweep of every Table-4
// setup, auto proves its plan optimal (or that none exists), agrees with
// exhaustive, and is never worse than jellybean.
func TestSweepAutoIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("160 cases x 3 strategies")
	}
	ctx := context.Background()
	setups := loadSetups(t)
	names := make([]string, 0, len(setups))
	for n := range setups {
		names = append(names, n)
	}
	sort.Strings(names)
	infeasible := 0
	for _, name := range names {
		for _, p := range sweep(name, setups[name]) {
			au, err := optimize.Auto{}.Optimize(ctx, p, optimize.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if au.GaveUp {
				t.Errorf("%s: auto gave up: %s", p.Name, au.Note)
				continue
			}
			if !au.Feasible {
				infeasible++
				if au.Reason == "" {
					t.Errorf("%s: infeasible without a reason", p.Name)
				}
				continue
			}
			if !au.Optimal {
				t.Errorf("%s: auto plan not proven optimal", p.Name)
			}
			ex, err := optimize.Exhaustive{}.Optimize(ctx, p, optimize.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !ex.Optimal || math.Abs(ex.TotalCost-au.TotalCost) > 1e-9 {
				t.Errorf("%s: auto %v, exhaustive %v (optimal %v)", p.Name, au.TotalCost, ex.TotalCost, ex.Optimal)
			}
			jb, err := optimize.JellyBean{}.Optimize(ctx, p, optimize.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if jb.Feasible && au.TotalCost > jb.TotalCost+1e-9 {
				t.Errorf("%s: auto %v worse than jellybean %v", p.Name, au.TotalCost, jb.TotalCost)
			}
		}
	}
	// One vqa-xlarge target (1.5x throughput, +1 accuracy) is out of reach.
	if infeasible > 2 {
		t.Errorf("%d sweep cases infeasible for auto", infeasible)
	}
}
