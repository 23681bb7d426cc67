package vqalive

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
)

// plan plans query.sql on the example's catalog and infrastructure, as
// `tierflow explain` does.
func plan(t testing.TB) (*physical.Plan, *infra.Infra) {
	t.Helper()
	src, err := os.ReadFile("query.sql")
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("query.sql", string(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(script.Statements) != 1 {
		t.Fatalf("query.sql has %d statements, want the one query", len(script.Statements))
	}
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.PlanStatement(context.Background(), script.Statements[0], loadCatalog(t), inf, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Physical.Feasible {
		t.Fatalf("plan infeasible: %s", res.Physical.Reason)
	}
	return res.Physical, inf
}

// TestPlanSpansTiers: the optimizer's plan runs the three models on more than
// one tier and sends data over priced links, so its network cost is not zero.
func TestPlanSpansTiers(t *testing.T) {
	p, _ := plan(t)
	tiers := map[string]bool{}
	models := 0
	for _, op := range p.Operators {
		if op.Kind != "ml" {
			continue
		}
		models++
		for _, w := range op.Workers {
			tiers[w.Tier] = true
		}
	}
	if models != 3 || len(tiers) < 2 {
		t.Errorf("%d models on tiers %v, want 3 models on more than one tier", models, tiers)
	}
	if p.NetworkCost <= 0 || len(p.Links) == 0 {
		t.Errorf("network cost %v over links %v: nothing crosses a priced link", p.NetworkCost, p.Links)
	}
	t.Logf("tiers %v, compute %.4f + network %.4f per hour, links %+v", tiers, p.ComputeCost, p.NetworkCost, p.Links)
}

// TestQueryLocalEqualsEmbedded runs query.sql the way `tierflow run --local`
// does (one process, each model's most accurate variant) and on an embedded
// cluster of infra.yaml (NATS between the tiers, the optimizer's variants and
// placement): the answers must be the same rows, the plan's variants the ones
// the local run took, and the bytes each tier link metered within 10% of
// what the plan estimates for the stream (the catalog's item_kb and
// output_kb at the stream's rate, over its length in event time).
func TestQueryLocalEqualsEmbedded(t *testing.T) {
	ortEnv(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("query.sql")
	if err != nil {
		t.Fatal(err)
	}
	script := deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: string(src), BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// One process.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rt := inference.New(inference.Config{BaseDir: dir})
	var local bytes.Buffer
	q, _, err := script.Build(nil, exec.Options{Allocator: mem, Output: sinks.NewCSV(&local), Lateral: rt.Lateral})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if n := strings.Count(local.String(), "\n") - 1; n != Rows {
		t.Fatalf("local run: %d answers, want one per request (%d)", n, Rows)
	}

	p, inf := plan(t)
	localVariant := map[string]string{}
	for _, c := range rt.Choices() {
		localVariant[c.Model] = c.Variant
	}
	for _, op := range p.Operators {
		if op.Kind == "ml" && localVariant[op.Model] != op.Variant {
			t.Errorf("model %s: the plan runs %s, a local run %s", op.Model, op.Variant, localVariant[op.Model])
		}
	}

	// The embedded cluster.
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Catalog: script.Catalog, Heartbeat: 200 * time.Millisecond})
	defer c.Close()
	got, info := clustertest.RunCSV(t, ctx, c.Run, script)
	if err := clustertest.SameRows(got, local.String()); err != nil {
		t.Fatal(err)
	}

	// Metered bytes per tier link against the plan's estimate.
	measured := info.TierBytes()
	seconds := float64(Rows) * Interval.Seconds()
	var estCost, measCost float64
	for _, l := range p.Links {
		key := l.From + "->" + l.To
		est := l.MBps * 1024 * 1024 * seconds
		got := float64(measured[key])
		price := linkPrice(inf, l.From, l.To)
		estCost += est * price
		measCost += got * price
		if math.Abs(got-est) > 0.10*est {
			t.Errorf("link %s: %.0f bytes metered, the plan estimates %.0f (%.1f%%)", key, got, est, 100*(got-est)/est)
		} else {
			t.Logf("link %s: %.0f bytes metered, estimated %.0f (%+.1f%%), %.2f per GB", key, got, est, 100*(got-est)/est, price)
		}
		delete(measured, key)
	}
	for k, v := range measured {
		t.Errorf("link %s carried %d bytes the plan has no load for", k, v)
	}
	if estCost <= 0 || math.Abs(measCost-estCost) > 0.10*estCost {
		t.Errorf("network cost: metered %.4g, estimated %.4g (price x bytes)", measCost, estCost)
	}
	t.Logf("%d answers; %s; workers %v", info.ResultRows, info.Planner, info.Workers)
}

// linkPrice is the infrastructure's price per GB between two tiers.
func linkPrice(inf *infra.Infra, from, to string) float64 {
	for _, l := range inf.Links {
		if l.From == from && l.To == to {
			return l.CostPerGB
		}
	}
	return 0
}

// TestExplainAnalyzeMeetsPlan runs the query as EXPLAIN ANALYZE on the
// embedded cluster (its streams replayed at 40 a second, 200 requests, 5 s)
// and holds the run against the plan: achieved throughput within 5% of the
// target and metered network cost within 10% of the estimate.
func TestExplainAnalyzeMeetsPlan(t *testing.T) {
	ortEnv(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("query.sql")
	if err != nil {
		t.Fatal(err)
	}
	_, inf := plan(t)
	script := deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: string(src), BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Catalog: script.Catalog, Heartbeat: 200 * time.Millisecond})
	defer c.Close()
	rep, err := c.ExplainAnalyze(ctx, script, cluster.AnalyzeOptions{MaxRows: 200})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.Write(&text); err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, ch := range rep.Checks {
		if ch.Tolerance == 0 {
			continue
		}
		judged[ch.What] = true
		if !ch.OK {
			t.Errorf("%s: estimated %.4g %s, measured %.4g (tolerance %.0f%%)", ch.What, ch.Estimated, ch.Unit, ch.Measured, 100*ch.Tolerance)
		} else {
			t.Logf("%s: estimated %.4g %s, measured %.4g", ch.What, ch.Estimated, ch.Unit, ch.Measured)
		}
	}
	if !judged["throughput"] || !judged["network cost"] {
		t.Errorf("the report judges %v, want throughput and network cost", judged)
	}
	for _, s := range rep.Sources {
		if s.Rows != 200 {
			t.Errorf("stream %s: %d rows read, want 200", s.Name, s.Rows)
		}
	}
	if t.Failed() {
		t.Log("\n" + text.String())
	}
}
