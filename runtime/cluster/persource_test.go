package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
)

// twoCameraInfra has two cameras, each on a tier of its own (e1, e2), with
// a link each to the hub and the cloud, where the model runs (one operator
// a worker: a call per camera and the union).
const twoCameraInfra = `tiers:
  - {name: cama, locations: 1}
  - {name: camb, locations: 1}
  - {name: hub}
  - {name: cloud}
worker_types:
  - {name: x2, vcpus: 2, memory_gb: 4, price: 1}
workers:
  - {name: e1, type: x2, tier: cama}
  - {name: e2, type: x2, tier: camb}
  - {name: h1, type: x2, tier: hub}
  - {name: h2, type: x2, tier: hub}
  - {name: c1, type: x2, tier: cloud}
links:
  - {from: cama, to: hub, cost_per_gb: 0.1, bandwidth_mbps: 3000}
  - {from: camb, to: hub, cost_per_gb: 0.1, bandwidth_mbps: 3000}
  - {from: hub, to: cloud, cost_per_gb: 0.1, bandwidth_mbps: 25000}
  - {from: cama, to: cloud, cost_per_gb: 0.3, bandwidth_mbps: 3000}
  - {from: camb, to: cloud, cost_per_gb: 0.3, bandwidth_mbps: 3000}
  - {from: cama, to: camb, cost_per_gb: 1, bandwidth_mbps: 3000}
`

// twoCameraQuery classifies the frames of both cameras (UNION ALL) under
// a latency bound and counts them per second.
const twoCameraQuery = `SELECT count(*) AS n
FROM (SELECT id, ts, image FROM cam_a WHERE id < 1400 UNION ALL SELECT id, ts, image FROM cam_b WHERE id < 1400) AS s
CROSS JOIN LATERAL classify_sized(s.image) AS c(label, score)
GROUP BY TUMBLE(s.ts, INTERVAL '1' SECOND)
WITH (ACCURACY >= 89, LATENCY <= 2000 MS);
`

// TestJellyfishPerSource: two cameras, each behind its own link to the
// hub; camera a's link is shaped to 6.4 Mbit/s (its 200 full-size frames
// a second need about 5), camera b's is not. The query gets a model call
// per camera, and the Jellyfish policy steps camera a's call down to a
// smaller input size, resized on e1 before its link, while camera b's call
// keeps 28x28: the variant is chosen per source.
func TestJellyfishPerSource(t *testing.T) {
	fashion := fashionDir(t)
	dir := t.TempDir()
	cat := strings.Replace(sizedCatalog(fashion), "  - {name: labelled, source: file", "  - {name: cam_a, source: file", 1)
	cat = strings.Replace(cat, "tier: edge,", "tier: cama,", 1)
	i := strings.Index(cat, "  - {name: cam_a")
	camB := strings.Replace(strings.Replace(cat[i:], "cam_a", "cam_b", 1), "tier: cama,", "tier: camb,", 1)
	cat += camB
	for name, body := range map[string]string{"infra.yaml": twoCameraInfra, "catalog.yaml": cat, "query.sql": twoCameraQuery} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	catFile := filepath.Join(dir, "catalog.yaml")
	tr, err := relay.ParseTrace("slow.csv", strings.NewReader("t_s,kbit_s\n0,6400\n600,6400\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	// The policy re-plans on the stream's share of each link, as before
	// the adapt step picked sides per batch (whose ceiling, compute's alone,
	// would keep fit-28 over 6.4 Mbit/s): what is tested is the per-source pin.
	whole := control.DefaultJellyfish
	whole.WholeFrames = true
	c := clustertest.StartHooked(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: catFile, Policies: clustertest.SLO(whole)}, cluster.Hooks{
		Shaper: func(from, to string) relay.Shaper {
			if from == "e1" && from != to {
				return relay.TraceShaper{Trace: tr, Start: start}
			}
			return nil
		}})
	defer c.Close()
	var out, stats bytes.Buffer
	if err := c.RunScript(ctx, filepath.Join(dir, "query.sql"), twoCameraQuery, cluster.ScriptOptions{Catalog: catFile, Stdout: &out, Replay: true, Stats: &stats}); err != nil {
		t.Fatal(err)
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	t.Logf("replans %+v; dropped %v", s.Replans, s.Dropped)
	if s.Dropped["deadline"] != 0 || s.RowsOut == 0 {
		t.Errorf("rows out %d, dropped %v: want every row answered", s.RowsOut, s.Dropped)
	}
	// Each call is judged by its own camera's link (the reasons name e1
	// for camera a's call, e2 for camera b's), and the cameras' calls run
	// different sizes: camera a's, behind 6.4 Mbit/s, a smaller one,
	// resized on e1 before its link, while camera b's keeps 28x28. (The
	// acks' estimates of a loaded machine's links wander, so later rounds
	// may move either call; each still by its own link.)
	var split *control.Replan
	for i, r := range s.Replans {
		for _, clause := range strings.Split(strings.TrimPrefix(r.Reason, "jellyfish: "), "; ") {
			own, other := "over e1 ", "e2"
			if strings.HasPrefix(clause, "classify_sized#2:") {
				own, other = "over e2 ", "e1"
			} else if !strings.HasPrefix(clause, "classify_sized#1:") {
				t.Errorf("replan %d: %q, want a clause per camera's call", i, clause)
				continue
			}
			if !strings.Contains(clause, own) || strings.Contains(clause, other) {
				t.Errorf("replan %d: %q, want the call judged by its own camera's link alone (%s)", i, clause, own)
			}
		}
		small := strings.Contains(r.New, "classify_sized#1=fit-14") || strings.Contains(r.New, "classify_sized#1=fit-20")
		if split == nil && small && strings.Contains(r.New, "classify_sized#2=fit-28") {
			split = &s.Replans[i]
		}
	}
	if split == nil {
		t.Fatalf("replans %+v: want a plan with camera a's call on a smaller input size than camera b's", s.Replans)
	}
	// Camera a's images are resized on e1; camera b's, a LATENCY query's,
	// may go smaller per batch by their own link (on e2), from 28x28.
	var aSmall, bFull bool
	for _, m := range regexp.MustCompile(`adapt image (\d+)x\d+ float32( by link)?@(e\d)`).FindAllStringSubmatch(split.New, -1) {
		switch m[3] {
		case "e1":
			aSmall = aSmall || m[1] != "28"
		case "e2":
			bFull = m[1] == "28" && m[2] != ""
			if !bFull {
				t.Errorf("plan %s: camera b's images resized below fit-28's 28x28", split.New)
			}
		}
	}
	if !aSmall {
		t.Errorf("plan %s: want camera a's images adapted, on e1", split.New)
	}
	t.Logf("per source: %s", split.Reason)
	var a, b bool
	for _, x := range s.SLOTimeline {
		switch x.Source {
		case "e1":
			a = strings.HasPrefix(x.Variants, "classify_sized#1=") && !strings.Contains(x.Variants, "#2")
		case "e2":
			b = strings.HasPrefix(x.Variants, "classify_sized#2=") && !strings.Contains(x.Variants, "#1")
		}
		if !a && x.Source == "e1" || !b && x.Source == "e2" {
			t.Errorf("SLO timeline sample %+v: want each camera with its own call alone", x)
			break
		}
	}
}
