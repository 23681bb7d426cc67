package worker

import (
	"testing"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// An exchange over n instances sends each batch as n messages, so the
// relay's window (counted in messages) grows n-fold for a part that
// exchanges, up to four times the default; a part with only pipelines,
// broadcasts or balances keeps the default, and RowsInFlight, when the
// deployment sets it, decides instead (applyLimits).
func TestExchangeWindowGrowsWithTheFanOut(t *testing.T) {
	ops := func(instances ...int) []deploy.OperatorPlan {
		var out []deploy.OperatorPlan
		for _, n := range instances {
			out = append(out, deploy.OperatorPlan{Name: "op", Workers: make([]int, n)})
		}
		return out
	}
	cases := []struct {
		name string
		p    *deploy.Placement
		want int
	}{
		{"none", nil, 0},
		{"pipelines only", &deploy.Placement{Operators: ops(2, 2), Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "pipeline"}}}, 0},
		{"a balance over 3", &deploy.Placement{Operators: ops(1, 3), Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "balance"}}}, 0},
		{"an exchange into 1", &deploy.Placement{Operators: ops(2, 1), Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "exchange"}}}, 0},
		{"an exchange over 2", &deploy.Placement{Operators: ops(2, 2, 1), Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "exchange"}, {From: 1, To: 2, Kind: "pipeline"}}}, 2 * relay.DefaultWindow},
		{"the widest of two exchanges", &deploy.Placement{Operators: ops(3, 3, 2), Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "exchange"}, {From: 1, To: 2, Kind: "exchange"}}}, 3 * relay.DefaultWindow},
		{"an exchange over 16, capped", &deploy.Placement{Operators: ops(16, 16), Edges: []deploy.EdgePlan{{From: 0, To: 1, Kind: "exchange"}}}, maxExchangeWindow},
		{"an edge to no operator", &deploy.Placement{Operators: ops(2), Edges: []deploy.EdgePlan{{From: 0, To: 5, Kind: "exchange"}}}, 0},
	}
	for _, c := range cases {
		if got := exchangeWindow(c.p); got != c.want {
			t.Errorf("%s: window %d, want %d", c.name, got, c.want)
		}
	}
	if maxExchangeWindow != 4*relay.DefaultWindow {
		t.Fatalf("the cap is %d, want four default windows", maxExchangeWindow)
	}
}
