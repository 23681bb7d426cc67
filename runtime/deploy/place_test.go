package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/lower"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

func streamingScript(t *testing.T) deploy.Script {
	t.Helper()
	dir, err := filepath.Abs("../../examples/streaming")
	if err != nil {
		t.Fatal(err)
	}
	return deploy.Script{Filename: "windows.sql", Source: windowsSQL, BaseDir: dir}
}

var threeTiers = []deploy.Worker{
	{Name: "e1", Tier: "edge"}, {Name: "h1", Tier: "hub"}, {Name: "h2", Tier: "hub"}, {Name: "c1", Tier: "cloud"},
}

// windowsSQL is the streaming example's shape within what the binder takes
// today: a filter, a stream-table join and a keyed TUMBLE aggregation.
const windowsSQL = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE 'readings.csv' FORMAT CSV;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 'sensors.csv' FORMAT CSV;
SELECT s.site, count(*) AS n
FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature > 20
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
`

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}

func TestPlaceStreamingThreeTiers(t *testing.T) {
	s := streamingScript(t)
	q, plan, err := s.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := deploy.Place("q1", q.Graph(), plan, threeTiers, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}})
	if err != nil {
		t.Fatal(err)
	}
	desc := p.Describe()
	for _, want := range []string{"scan readings @edge e1", "join @edge e1", "aggregate @hub h1,h2", "sink @cloud c1", "exchange keys="} {
		if !strings.Contains(desc, want) {
			t.Errorf("placement lacks %q:\n%s", want, desc)
		}
	}
}

// TestPlacedRunMatchesLocal runs the placed graph as four workers, each built
// from its own compile of the script as remote workers do, and compares the
// rows with a one-process run.
func TestPlacedRunMatchesLocal(t *testing.T) {
	s := streamingScript(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	var want bytes.Buffer
	q, _, err := s.Build(nil, exec.Options{Allocator: mem, Output: sinks.NewCSV(&want)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	q0, plan, err := s.Build(nil, exec.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	p, err := deploy.Place("q1", q0.Graph(), plan, threeTiers, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	csv := sinks.NewCSV(&got)
	tr := dataflow.NewLocalTransport()
	var ws []*dataflow.Worker
	for i := range p.Workers {
		qi, _, err := s.Build(nil, exec.Options{Allocator: mem, Output: csv})
		if err != nil {
			t.Fatal(err)
		}
		g := qi.Graph()
		if err := p.Apply(g); err != nil {
			t.Fatal(err)
		}
		w, err := dataflow.NewWorker(g, i, dataflow.Config{Allocator: mem, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := dataflow.RunWorkers(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if err := csv.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sortedLines(got.String()), sortedLines(want.String())) {
		t.Fatalf("placed run differs:\n%s\nwant:\n%s", got.String(), want.String())
	}
	if n := len(sortedLines(want.String())); n < 10 {
		t.Fatalf("only %d result lines; the example should give many windows", n)
	}
}

func TestApplyMismatch(t *testing.T) {
	s := streamingScript(t)
	q, plan, err := s.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := deploy.Place("q1", q.Graph(), plan, threeTiers, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Operators = p.Operators[1:]
	if err := p.Apply(q.Graph()); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("Apply of a wrong placement: %v", err)
	}
}

func TestPlaceNoWorkers(t *testing.T) {
	s := streamingScript(t)
	q, plan, err := s.Build(nil, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deploy.Place("q1", q.Graph(), plan, nil, deploy.Options{Tiers: []string{"edge"}}); err == nil {
		t.Fatal("placement without workers succeeded")
	}
}

// TestPlaceFromPhysicalPlan: stages go where the optimizer put them; the
// edge into a stage on several workers is a Balance with the plan's traffic
// shares, or an Exchange by the group keys for an aggregate.
func TestPlaceFromPhysicalPlan(t *testing.T) {
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
		{Name: "clean", Kind: "relational", Node: filter},
		{Name: "count", Kind: "relational", Node: agg},
	}}
	phys := &physical.Plan{
		Sources: []physical.Source{{Name: "readings", Tier: "edge"}},
		Operators: []physical.Operator{
			{Name: "clean", Workers: []physical.Worker{{Name: "h1", Tier: "hub", Share: 0.25}, {Name: "h2", Tier: "hub", Share: 0.75}}},
			{Name: "count", Workers: []physical.Worker{{Name: "c1", Tier: "cloud", Share: 0.5}, {Name: "c2", Tier: "cloud", Share: 0.5}}},
		},
	}
	ws := append(threeTiers, deploy.Worker{Name: "c2", Tier: "cloud"})
	p, err := deploy.Place("q1", q.Graph(), plan, ws, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}, Physical: phys, Lowered: lo})
	if err != nil {
		t.Fatal(err)
	}
	desc := p.Describe()
	for _, want := range []string{"scan readings @edge e1", "join @edge e1", "filter @hub h1,h2", "aggregate @cloud c1,c2", "project @cloud c1,c2", "sink @cloud c1", "balance shares=[0.25 0.75]", "exchange keys="} {
		if !strings.Contains(desc, want) {
			t.Errorf("placement lacks %q:\n%s", want, desc)
		}
	}
	if err := p.Apply(q.Graph()); err != nil {
		t.Fatal(err)
	}
	phys.Operators[0].Workers[0].Name = "gone"
	if _, err := deploy.Place("q1", q.Graph(), plan, ws, deploy.Options{Tiers: []string{"edge", "hub", "cloud"}, Physical: phys, Lowered: lo}); err == nil {
		t.Fatal("a plan naming an unregistered worker was placed")
	}
}

// TestValidNameReserved refuses the protocol's own tokens as names: the
// roles' any-namespace permissions (tierflow.*.ctl...) rely on it.
func TestValidNameReserved(t *testing.T) {
	for _, n := range []string{"ctl", "q", "u", "relay"} {
		if err := deploy.ValidName("query", n); !errors.Is(err, deploy.ErrName) {
			t.Errorf("ValidName(%q): %v, want ErrName", n, err)
		}
	}
	for _, n := range []string{"run-0badc0de", "qa", "relays", "w1"} {
		if err := deploy.ValidName("query", n); err != nil {
			t.Errorf("ValidName(%q): %v", n, err)
		}
	}
}

// A cluster no worker has joined says what to do: "no tiers" told a new
// user nothing.
func TestPlaceWithNoWorkerSaysToStartOne(t *testing.T) {
	_, err := deploy.Place("q", &dataflow.Graph{}, nil, nil, deploy.Options{})
	if !errors.Is(err, deploy.ErrNoWorkers) || !strings.Contains(err.Error(), "tierflow worker --nats") {
		t.Errorf("placed with no worker: %v, want the advice to start one", err)
	}
}
