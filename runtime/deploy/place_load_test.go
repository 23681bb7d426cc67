package deploy_test

import (
	"strings"
	"testing"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestPlaceStartsAtTheLeastLoadedWorker: by the rules, what runs once (a
// file's scan, the sink) goes to the first worker of its tier, and a
// keyed aggregate's first instance to the first of the next. First is
// the worker the cluster's other queries load least (Options.Load), then
// by name: before, it was by name alone, and every query of a shared
// cluster ran its scans and sink on the same worker.
func TestPlaceStartsAtTheLeastLoadedWorker(t *testing.T) {
	q, plan, err := streamingScript(t).Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := append(threeTiers, deploy.Worker{Name: "e2", Tier: "edge"}, deploy.Worker{Name: "c2", Tier: "cloud"})
	place := func(load map[string]int) string {
		t.Helper()
		p, err := deploy.Place("q1", q.Graph(), plan, ws, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}, Load: load})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(q.Graph()); err != nil {
			t.Fatal(err)
		}
		return p.Describe()
	}
	for _, c := range []struct {
		name string
		load map[string]int
		want []string
	}{
		{"idle", nil, []string{"@edge e1\n", "aggregate @hub h1,h2", "sink @cloud c1"}},
		{"equal loads keep name order", map[string]int{"e1": 2, "e2": 2, "h1": 1, "h2": 1}, []string{"@edge e1\n", "aggregate @hub h1,h2", "sink @cloud c1"}},
		{"loaded", map[string]int{"e1": 3, "h1": 2, "c1": 1}, []string{"@edge e2\n", "aggregate @hub h2,h1", "sink @cloud c2"}},
	} {
		got := place(c.load)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: placement lacks %q:\n%s", c.name, w, got)
			}
		}
	}
}
