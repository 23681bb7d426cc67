package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// A Top-N fused into a stage of several instances (here a partitioned
// stream's source, one instance per file) must see every row of its
// PARTITION BY keys: its instances exchange by them. Before, each instance
// ranked its own partition's rows and the result had a top row per
// partition.
func TestPlaceFusedTopNExchangesByItsKeys(t *testing.T) {
	dir := t.TempDir()
	for k := 0; k < 2; k++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r-%d.csv", k)), []byte("sensor,ts,temperature\n1,2026-01-01 00:00:00,21\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := deploy.Script{Filename: "p.sql", BaseDir: dir, Source: `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM FILE 'r-*.csv' FORMAT CSV;
SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY sensor ORDER BY temperature DESC) AS rn FROM readings) WHERE rn <= 2;
`}
	q, plan, err := s.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := deploy.Nodes(q.Graph(), plan)
	if err != nil {
		t.Fatal(err)
	}
	var scan logical.Node
	var fused []logical.Node
	for _, n := range nodes {
		if x, ok := n.(*logical.Scan); ok && x.Stream != nil {
			scan = n
		} else if _, sink := n.(*logical.Sink); !sink && n != nil && !slices.Contains(fused, n) {
			fused = append(fused, n)
		}
	}
	lo := &lower.Result{Stages: []*lower.Stage{{Name: "readings", Kind: "source", Node: scan, Fused: fused}}}
	phys := &physical.Plan{Sources: []physical.Source{{Name: "readings", Tier: "edge"}}}
	ws := []deploy.Worker{{Name: "e1", Tier: "edge"}, {Name: "e2", Tier: "edge"}}
	p, err := deploy.Place("q1", q.Graph(), plan, ws, deploy.Options{Tiers: []string{"edge"}, Physical: phys, Lowered: lo})
	if err != nil {
		t.Fatal(err)
	}
	desc := p.Describe()
	for _, want := range []string{"scan readings @edge e1,e2", "window @edge e1,e2", "exchange keys=[0]"} {
		if !strings.Contains(desc, want) {
			t.Errorf("placement lacks %q:\n%s", want, desc)
		}
	}
	if err := p.Apply(q.Graph()); err != nil {
		t.Fatal(err)
	}
}
