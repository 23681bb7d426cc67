package coordinator

import (
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/optimize"
)

// A submitted script's SET planner.time_budget lowers the optimizer's
// budget but never raises it past the optimizer's default: the compile
// holds one of the coordinator's compilers until it is answered.
func TestSubmittedBudgetIsAtMostTheDefault(t *testing.T) {
	for set, want := range map[time.Duration]time.Duration{
		0:                      0, // the strategy's own default
		500 * time.Millisecond: 500 * time.Millisecond,
		1000 * time.Hour:       optimize.DefaultTimeBudget,
		-time.Second:           -time.Second, // as zero: the default
	} {
		if got := submittedBudget(set); got != want {
			t.Errorf("SET planner.time_budget = %s: planned with %s, want %s", set, got, want)
		}
	}
}

// A submitted script's SET planner.topo_orders and beam widths reach at
// most maxSubmittedSearch times the optimizer's defaults; below that, and
// unset (the defaults), they are as SET.
func TestSubmittedSearchIsBounded(t *testing.T) {
	got := submittedSearch(optimize.Options{TopoOrders: 1_000_000_000, BeamModelSelection: 2_000_000_000, BeamWorkerAssignment: 1 << 40})
	if got.TopoOrders != maxSubmittedSearch*optimize.DefaultTopoOrders || got.BeamModelSelection != maxSubmittedSearch*optimize.DefaultBeam ||
		got.BeamWorkerAssignment != maxSubmittedSearch*optimize.DefaultBeam {
		t.Errorf("planned with %+v", got)
	}
	if got := submittedSearch(optimize.Options{TopoOrders: 50, BeamWorkerAssignment: 3}); got.TopoOrders != 50 || got.BeamWorkerAssignment != 3 || got.BeamModelSelection != 0 {
		t.Errorf("planned with %+v, want the values SET", got)
	}
}
