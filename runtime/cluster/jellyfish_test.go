package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
)

// sizedCatalog is examples/fashion/sizes.yaml's size-adaptive zoo (the
// real fit-14/20/28 ONNX files; by-batch profiles on the hub and cloud
// workers, so the edge worker cannot run them and the images cross the
// shaped edge->hub link) and the labelled stream at 200 images a second.
func sizedCatalog(fashion string) string { return sizedCatalogOf(fashion) }

// sizedCatalogOf is sizedCatalog with only the named variants (all when
// none is named).
func sizedCatalogOf(fashion string, only ...string) string {
	prof := "{p50: 0.05, p75: 0.05, p90: 0.05, by_batch: {1: {p50: 0.2, p75: 0.2, p90: 0.3}, 8: {p50: 0.5, p75: 0.5, p90: 0.6}, 32: {p50: 1.5, p75: 1.5, p90: 2}}}"
	var vs strings.Builder
	for _, v := range []struct {
		name string
		side int
		acc  float64
	}{{"fit-14", 14, 84.31}, {"fit-20", 20, 87.5}, {"fit-28", 28, 89.2}} {
		if len(only) > 0 && !slices.Contains(only, v.name) {
			continue
		}
		fmt.Fprintf(&vs, `      - name: %s
        file: %s/models/%s.onnx
        accuracy: %g
        output_kb: 0.01
        input_size: [%d, %d]
        latency_ms: {h1: %s, h2: %s, c1: %s}
`, v.name, fashion, v.name, v.acc, v.side, v.side, prof, prof, prof)
	}
	return fmt.Sprintf(`models:
  - name: classify_sized
    task: image-classification
    inputs:  [{name: image, type: "TENSOR(FLOAT, 1, 28, 28)"}]
    outputs: [{name: label, type: BIGINT}, {name: score, type: FLOAT}]
    variants:
%s
streams:
  - {name: labelled, source: file, subject: %s/data/shelf.arrow, format: arrow, tier: edge,
     locations: 1, rate: 200, item_kb: 3.1,
     columns: [{name: id, type: BIGINT}, {name: ts, type: TIMESTAMP},
               {name: image, type: "TENSOR(FLOAT, 1, 28, 28)"},
               {name: true_label, type: VARCHAR}, {name: true_group, type: VARCHAR}]}
`, vs.String(), fashion)
}

// sizedQuery counts the classified images per second of event time under
// a latency bound generous enough that no row is dropped: what changes is
// the variant.
const sizedQuery = `SELECT count(*) AS n, min(s.id) AS first_id, max(s.id) AS last_id
FROM labelled AS s CROSS JOIN LATERAL classify_sized(s.image) AS c(label, score)
GROUP BY TUMBLE(s.ts, INTERVAL '1' SECOND)
WITH (ACCURACY >= 89, LATENCY <= 2000 MS);
`

// TestJellyfishStepsDownWithTheLink is the Jellyfish policy on the engine:
// the query runs on an embedded cluster (real NATS, ONNX Runtime) with its
// edge->hub link shaped by a bandwidth trace that steps from 20 Mbit/s to
// 2.4 Mbit/s after 3 s. At 200 full-size images a second (about 5 Mbit/s)
// the link no longer carries 28x28 frames, and the policy, reading the
// relay's ack estimate, has the coordinator cut the query over, at an
// epoch, to a variant of a smaller input size; the result is the
// one-process run's, row for row: nothing lost or duplicated. The policy
// weighs every frame at its variant's size (WholeFrames): by
// default a fall of the link is the adapt step's, per batch, and the
// pinned variant, a ceiling over the batches' sides, stays.
func TestJellyfishStepsDownWithTheLink(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	fashion := fashionDir(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"infra.yaml": driftInfra, "catalog.yaml": sizedCatalog(fashion), "query.sql": sizedQuery} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat := filepath.Join(dir, "catalog.yaml")
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	csv := localModel(t, lctx, deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: sizedQuery, BaseDir: dir, Catalog: cat},
		inference.Config{Variants: map[string]string{"classify_sized": "fit-28"}})
	want := fmt.Sprintf("(%d rows)", strings.Count(csv, "\n")-1)

	tr, err := relay.ParseTrace("step.csv", strings.NewReader("t_s,kbit_s\n0,20000\n3,2400\n600,2400\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	whole := control.DefaultJellyfish
	whole.WholeFrames = true
	c := clustertest.StartHooked(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: cat, Policies: clustertest.SLO(whole)}, cluster.Hooks{
		Shaper: func(from, to string) relay.Shaper {
			if from == "e1" && from != to {
				return relay.TraceShaper{Trace: tr, Start: start}
			}
			return nil
		}})
	defer c.Close()
	var out, stats bytes.Buffer
	if err := c.RunScript(ctx, filepath.Join(dir, "query.sql"), sizedQuery, cluster.ScriptOptions{Catalog: cat, Stdout: &out, Replay: true, Stats: &stats}); err != nil {
		t.Fatal(err)
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	t.Logf("replans %+v; dropped %v; latency %+v", s.Replans, s.Dropped, s.LatencyMs)
	if !strings.Contains(out.String(), want) {
		t.Fatalf("result %s, want %s as the one-process run", out.String(), want)
	}
	if s.Dropped["deadline"] != 0 || s.RowsOut == 0 {
		t.Errorf("rows out %d, dropped %v: want every row answered", s.RowsOut, s.Dropped)
	}
	var down *control.Replan
	for i, r := range s.Replans {
		if !strings.HasPrefix(r.Reason, "jellyfish: ") {
			t.Errorf("replan %d: %q, want the Jellyfish policy's", i, r.Reason)
		}
		if down == nil && strings.Contains(r.Old, "fit-28") && (strings.Contains(r.New, "fit-14") || strings.Contains(r.New, "fit-20")) {
			down = &s.Replans[i]
		}
	}
	if down == nil {
		t.Fatalf("replans %+v: want a cut-over from fit-28 to a smaller input size", s.Replans)
	}
	t.Logf("stepped down at epoch %d in %.2fs: %s", down.Epoch, down.Seconds, down.Reason)
	// The plan history says where the cut-over's time went, step by step
	// from the decision: the old parts answered the stop (with the epoch
	// their sinks committed, the one the new plan resumed from) before the
	// new parts were built and started.
	if cut := down.Cut; cut == nil || cut.Decided.IsZero() || cut.StopMs <= 0 || cut.DeployMs <= 0 || cut.BuildMs <= 0 || cut.BuildMs > cut.DeployMs ||
		cut.StartMs < cut.PlanMs+cut.StopMs+cut.DeployMs {
		t.Errorf("cut-over breakdown %+v: want the plan, stop, deploy (build within it) and start steps, in order", cut)
	} else {
		t.Logf("cut-over: %+v", *cut)
	}
	// The stats carry the policy's view over time: the shaped cap beside
	// the acks' estimate, and the variant (input size) before and after.
	var before, after bool
	for _, x := range s.SLOTimeline {
		before = before || x.Source == "e1" && x.ShapedKbit == 20000 && strings.Contains(x.Variants, "fit-28 (28x28)")
		after = after || x.Source == "e1" && x.ShapedKbit == 2400 && !strings.Contains(x.Variants, "fit-28")
	}
	if !before || !after {
		t.Errorf("SLO timeline %+v: want e1 at 20000 kbit/s on fit-28 (28x28), then at 2400 on a smaller size", s.SLOTimeline)
	}
}

// TestLazyDropOnTheEngine: under a tight LATENCY bound on a link that
// cannot carry the stream (3.2 Mbit/s for about 5 Mbit/s of images), rows
// reach the model call past their deadline; it drops them before compute,
// and the summary counts them as "deadline" drops and as SLO misses. Every
// row is either classified or counted: none vanishes.
func TestLazyDropOnTheEngine(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	fashion := fashionDir(t)
	dir := t.TempDir()
	query := strings.Replace(sizedQuery, "GROUP BY", "WHERE s.id < 600\nGROUP BY", 1)
	query = strings.Replace(query, "WITH (ACCURACY >= 89, LATENCY <= 2000 MS)", "WITH (ACCURACY >= 89, LATENCY <= 300 MS)", 1)
	// fit-28 alone: with smaller sizes in the zoo the edge would send
	// the frames smaller by the link (TestAdaptSidesFollowTheLink) and
	// none would be late.
	for name, body := range map[string]string{"infra.yaml": driftInfra, "catalog.yaml": sizedCatalogOf(fashion, "fit-28"), "query.sql": query} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat := filepath.Join(dir, "catalog.yaml")
	tr, err := relay.ParseTrace("slow.csv", strings.NewReader("t_s,kbit_s\n0,3200\n600,3200\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	c := clustertest.StartHooked(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: cat, Policies: clustertest.SLO(nil)}, cluster.Hooks{
		Shaper: func(from, to string) relay.Shaper {
			if from == "e1" && from != to {
				return relay.TraceShaper{Trace: tr, Start: start}
			}
			return nil
		}})
	defer c.Close()
	var out, stats bytes.Buffer
	if err := c.RunScript(ctx, filepath.Join(dir, "query.sql"), query, cluster.ScriptOptions{Catalog: cat, Stdout: &out, Replay: true, Stats: &stats}); err != nil {
		t.Fatal(err)
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	// The printed table: n, first_id, last_id per second.
	classified := 0
	for _, line := range strings.Split(out.String(), "\n") {
		var n, first, last int
		if k, _ := fmt.Sscanf(strings.ReplaceAll(line, "|", " "), "%d %d %d", &n, &first, &last); k == 3 {
			classified += n
		}
	}
	dropped := s.Dropped["deadline"]
	t.Logf("classified %d, dropped %d (deadline), slo miss rate %v, replans %d", classified, dropped, *s.SLOMissRate, len(s.Replans))
	if dropped == 0 || s.SLOMissRate == nil || *s.SLOMissRate <= 0 {
		t.Fatalf("no deadline drops (%v) or no misses on an overloaded link:\n%s", s.Dropped, out.String())
	}
	if int64(classified)+dropped != 600 {
		t.Fatalf("classified %d + dropped %d, want the 600 rows in", classified, dropped)
	}
	if len(s.Replans) != 0 {
		t.Errorf("re-planned with --no-slo-policy: %+v", s.Replans)
	}
}

// TestJellyfishFirstPlanIsTheCeiling: a LATENCY query over a size family
// whose batches follow their link (the default) starts on the variant the
// Jellyfish policy would set as its ceiling at its first report, the
// largest the workers' compute carries, however cheap a variant the
// optimizer's cost would pick under the accuracy floor: no cut-over (a
// pause of the streams, frames late) is needed once the query runs.
func TestJellyfishFirstPlanIsTheCeiling(t *testing.T) {
	fashion := fashionDir(t)
	dir := t.TempDir()
	query := strings.Replace(sizedQuery, "ACCURACY >= 89, LATENCY <= 2000 MS", "ACCURACY >= 80, LATENCY <= 2000 MS", 1)
	for name, body := range map[string]string{"infra.yaml": driftInfra, "catalog.yaml": sizedCatalog(fashion), "query.sql": query} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat := filepath.Join(dir, "catalog.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := clustertest.StartHooked(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: cat, Policies: clustertest.SLO(control.DefaultJellyfish)}, cluster.Hooks{})
	defer c.Close()
	_, info := clustertest.RunCSV(t, ctx, c.Run, deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: query, BaseDir: dir, Catalog: cat, Replay: true})
	if r := info.Summary().Replans; len(r) != 0 {
		t.Errorf("replans %+v: want the first plan on the ceiling, no cut-over", r)
	}
	ran := map[string]int64{}
	var batches, rows int64
	for _, op := range info.Operators {
		for k, v := range op.Counters {
			if strings.HasPrefix(k, ml.RanPrefix) {
				ran[k] += v
			}
		}
		if strings.HasPrefix(op.Operator, "adapt ") {
			batches, rows = batches+op.BatchesIn, rows+op.RowsIn
		}
	}
	var all int64
	for _, n := range ran {
		all += n
	}
	// Every frame on the ceiling once the link has shown it carries it:
	// the batches sent before its first EvidenceSamples samples are in
	// (as many again may be in flight while they come back) go at the
	// smallest side, or one step above it on the stream's allowance.
	first := 2 * int64(dataflow.EvidenceSamples(dataflow.DefaultAttainment))
	if all == 0 || batches == 0 || ran[ml.RanPrefix+"fit-28"] < all-first*(rows+batches-1)/batches {
		t.Errorf("ran %s over %d batches of %d rows: want every frame after the link's first %d batches on the ceiling fit-28 (an unshaped link carries it)",
			ml.FormatRan(ran), batches, rows, first)
	}
}
