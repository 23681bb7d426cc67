package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

const liveInfra = `tiers:
  - {name: edge, locations: 1}
  - {name: hub}
  - {name: cloud}
worker_types:
  - {name: x2, vcpus: 2, price: 1}
workers:
  - {name: e1, type: x2, tier: edge}
  - {name: h1, type: x2, tier: hub}
  - {name: h2, type: x2, tier: hub}
  - {name: c1, type: x2, tier: cloud}
links:
  - {from: edge, to: hub, cost_per_gb: 0.1, bandwidth_mbps: 3000}
  - {from: hub, to: cloud, cost_per_gb: 0.1, bandwidth_mbps: 25000}
  - {from: edge, to: cloud, cost_per_gb: 0.3, bandwidth_mbps: 3000}
`

// liveCatalog: two variants, both accurate enough, "fast" ten times the
// other's speed per the catalog, on the hub and cloud workers.
const liveCatalog = `models:
  - name: classify
    task: image-classification
    inputs:  [{name: image, type: "TENSOR(FLOAT, 1, 4)"}]
    outputs: [{name: label, type: VARCHAR}]
    variants:
      - {name: small, accuracy: 90, output_kb: 0.02, latency_ms: {h1: {p50: 1, p75: 1, p90: 1}, h2: {p50: 1, p75: 1, p90: 1}, c1: {p50: 1, p75: 1, p90: 1}}}
      - {name: big, accuracy: 95, output_kb: 0.02, latency_ms: {h1: {p50: 10, p75: 10, p90: 10}, h2: {p50: 10, p75: 10, p90: 10}, c1: {p50: 10, p75: 10, p90: 10}}}
streams:
  - {name: frames, source: file, subject: frames.arrow, format: arrow, tier: edge, rate: 400, item_kb: 3,
     columns: [{name: id, type: BIGINT}, {name: image, type: "TENSOR(FLOAT, 1, 4)"}]}
`

const liveQuery = `SELECT f.id, c.label FROM frames AS f CROSS JOIN LATERAL classify(f.image) AS c(label)
WITH (ACCURACY >= 89, THROUGHPUT >= 400 PER SECOND);`

// livePlanner plans liveQuery on liveInfra's workers with the given live
// numbers, as a re-plan does.
func livePlanner(t testing.TB) (func(*control.Overrides) *physical.Plan, []deploy.Worker) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"infra.yaml": liveInfra, "catalog.yaml": liveCatalog} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := infra.LoadFile(filepath.Join(dir, "infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Coordinator{cfg: Config{Infra: inf, Placement: PlaceOptimizer}}
	var ws []deploy.Worker
	for _, m := range inf.Machines() {
		ws = append(ws, deploy.Worker{Name: m.Name, Tier: m.Tier, Location: m.Location, Type: m.Type.Name})
	}
	script := deploy.Script{Filename: filepath.Join(dir, "q.sql"), Source: liveQuery, BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	return func(o *control.Overrides) *physical.Plan {
		bound, cat, err := script.Bind(nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.optimize(context.Background(), bound, cat, ws, c.tiers(ws), nil, nil, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Physical
	}, ws
}

// choice is a plan's model call as "variant@workers".
func choice(p *physical.Plan) string {
	for _, op := range p.Operators {
		if op.Variant != "" {
			var ws []string
			for _, w := range op.Workers {
				ws = append(ws, w.Name)
			}
			return op.Variant + "@" + strings.Join(ws, "+")
		}
	}
	return ""
}

// TestLiveNumbersChangeThePlan: the live numbers a policy measured reach
// the planner in place of the catalog's and the infrastructure's, and move
// the plan the way they should; what the new plan assumes is what was
// measured.
func TestLiveNumbersChangeThePlan(t *testing.T) {
	plan, ws := livePlanner(t)
	base := plan(nil)
	if got := choice(base); got != "small@h1" {
		t.Fatalf("catalog plan %s, want small@h1 (cheapest link, one worker)", got)
	}
	a := assumedOf(base, ws)
	if len(a.Streams) != 1 || a.Streams[0] != (control.AssumedStream{Stream: "frames", Rate: 400}) ||
		len(a.Models) != 1 || a.Models[0].Call != "classify" || a.Models[0].Variant != "small" || a.Models[0].MsPerItem != 1 ||
		len(a.Links) == 0 || a.Links[0].From != "edge" || a.Links[0].To != "hub" || a.Links[0].NeedBps < 400*3*1024*0.99 || a.Tiers["h2"] != "hub" {
		t.Fatalf("assumed %+v", a)
	}
	for _, c := range []struct {
		name string
		live *control.Overrides
		want string
	}{
		// The edge->hub link carries 40 kB/s: the images go to the cloud.
		{"slow link", &control.Overrides{Links: []control.LinkCapacity{{From: "edge", To: "hub", Bps: 4e4}}}, "small@c1"},
		// small measured at 4 ms per item on h1: 250 items/s, short of 400.
		{"slow model", &control.Overrides{Models: []control.ModelTime{{Call: "classify", Variant: "small", Workers: []string{"h1"}, MsPerItem: 4}}}, "small@h2"},
		// 1500 rows/s: one worker's 1000 items/s at 1 ms is not enough.
		{"rate up", &control.Overrides{StreamRates: map[string]float64{"frames": 1500}}, "small@h1+h2"},
		// Three rows into the call per frame (what a join before it made
		// of them): 1200 items/s.
		{"selectivity", &control.Overrides{InputRatios: map[string]float64{"classify": 3}}, "small@h1+h2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := plan(c.live)
			if got := choice(p); got != c.want {
				t.Fatalf("plan %s, want %s", got, c.want)
			}
			a := assumedOf(p, ws)
			if r := c.live.StreamRates["frames"]; r > 0 && a.Streams[0].Rate != r {
				t.Errorf("assumed rate %g, want the measured %g", a.Streams[0].Rate, r)
			}
		})
	}
	// The catalog and the infrastructure file are left as they were.
	if got := choice(plan(nil)); got != "small@h1" {
		t.Fatalf("after re-plans, the catalog plan is %s", got)
	}
}
