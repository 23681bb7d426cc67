package deploy_test

import (
	"strings"
	"testing"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestPlaceFusedAggregateExchanges: a plan stage spread over two workers
// balances its rows among them; the keyed aggregate fused into it must see
// all of a group's rows, so its instances exchange by the group columns
// (before, each counted its share and the result had partial rows).
func TestPlaceFusedAggregateExchanges(t *testing.T) {
	s := streamingScript(t)
	q, plan, err := s.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := deploy.Nodes(q.Graph(), plan)
	if err != nil {
		t.Fatal(err)
	}
	var scan, filter, agg logical.Node
	for _, n := range nodes {
		switch x := n.(type) {
		case *logical.Scan:
			if x.Stream != nil {
				scan = n
			}
		case *logical.Filter:
			filter = n
		case *logical.Aggregate:
			agg = n
		}
	}
	lo := &lower.Result{Stages: []*lower.Stage{
		{Name: "readings", Kind: "source", Node: scan},
		{Name: "clean", Kind: "relational", Node: filter, Fused: []logical.Node{agg}},
	}}
	phys := &physical.Plan{
		Sources:   []physical.Source{{Name: "readings", Tier: "edge"}},
		Operators: []physical.Operator{{Name: "clean", Workers: []physical.Worker{{Name: "h1", Tier: "hub", Share: 0.5}, {Name: "h2", Tier: "hub", Share: 0.5}}}},
	}
	ws := append(threeTiers, deploy.Worker{Name: "h2", Tier: "hub"})
	p, err := deploy.Place("q1", q.Graph(), plan, ws, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}, Physical: phys, Lowered: lo})
	if err != nil {
		t.Fatal(err)
	}
	desc := p.Describe()
	for _, want := range []string{"filter @hub h1,h2", "aggregate @hub h1,h2", "exchange keys="} {
		if !strings.Contains(desc, want) {
			t.Errorf("placement lacks %q:\n%s", want, desc)
		}
	}
	if err := p.Apply(q.Graph()); err != nil {
		t.Fatal(err)
	}
}
