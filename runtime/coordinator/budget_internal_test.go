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
