package cluster_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

const cascadeAnalyze = `EXPLAIN ANALYZE (DURATION 3)
SELECT count(*) AS tops, sum(CASE WHEN c.label = s.true_label THEN 1 ELSE 0 END) AS correct
FROM labelled AS s
CROSS JOIN LATERAL garment(s.image) AS g(label, score)
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WHERE g.label = 'tops'
WITH (ACCURACY >= 84, THROUGHPUT >= 100 PER SECOND);
`

// EXPLAIN ANALYZE runs the fashion cascade on the embedded cluster of its
// infrastructure, its stream replayed at the catalog's 100 rows/s for 3 s,
// and holds the run against the optimizer's plan: the rate it kept, the
// stages' variants and workers, and the bytes that crossed edge->hub.
func TestExplainAnalyzeCascade(t *testing.T) {
	dir := fashionDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat := filepath.Join(dir, "catalog.yaml")
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: cat, Heartbeat: 200 * time.Millisecond})
	defer c.Close()

	var out bytes.Buffer
	path := filepath.Join(dir, "analyze.sql")
	if err := c.RunScript(ctx, path, cascadeAnalyze, cluster.ScriptOptions{Catalog: cat, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"EXPLAIN ANALYZE", "throughput", "network cost", "model garment", "model classify", "edge", "hub", "model batching"} {
		if !strings.Contains(text, want) {
			t.Fatalf("report lacks %q:\n%s", want, text)
		}
	}

	// The same through the API, to read the numbers.
	sc := deploy.Script{Filename: path, Source: cascadeAnalyze, BaseDir: dir, Catalog: cat, Nth: 1}
	rep, err := c.ExplainAnalyze(ctx, sc, cluster.AnalyzeOptions{For: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != deploy.StateFinished || rep.Span < 2500*time.Millisecond || rep.Span > 4*time.Second {
		t.Fatalf("state %s, data span %v: want finished after about 3 s", rep.State, rep.Span)
	}
	tp := rep.Checks[0]
	if tp.What != "throughput" || tp.Estimated != 100 || tp.Measured < 90 || tp.Measured > 110 {
		t.Errorf("throughput %+v: the stream is replayed at 100 rows/s", tp)
	}
	variants := map[string]string{}
	for _, op := range rep.Operators {
		if strings.HasPrefix(op.Name, "model ") {
			variants[op.Name] = op.Variant
			// The device is the instances' report: the CPU here (and why).
			if op.RowsIn == 0 || op.Estimated <= 0 || op.Tier == "" || len(op.Workers) == 0 || !strings.HasPrefix(op.Device, "cpu") {
				t.Errorf("model operator %+v: measured and estimated both", op)
			}
			// The engine batched every row, within the plan's batch size
			// (at 100 rows/s and 5 ms: 4 rows), and the adaptive batcher
			// cut on size as slices arrived rather than waiting out the
			// delay each time.
			if b := op.Batching; b == nil || b.Rows != op.RowsIn || b.MaxRows > 4 || b.Batches == 0 || b.CutSize <= b.CutDelay {
				t.Errorf("%s batching %+v (rows in %d): want every row batched, at most 4 a batch, mostly cut on size", op.Name, b, op.RowsIn)
			}
		}
	}
	if variants["model garment"] == "" || variants["model classify"] == "" {
		t.Errorf("variants %v: both model calls carry the plan's choice", variants)
	}
	crossed := uint64(0)
	for _, l := range rep.Links {
		if l.From != l.To {
			crossed += l.Bytes
		}
	}
	if net := rep.Checks[1]; crossed == 0 || net.What != "network cost" || net.Measured <= 0 || net.Estimated <= 0 {
		t.Errorf("links %+v, network %+v: the plan sends the tops across tiers", rep.Links, net)
	}
	// classify's catalog entry names the stream's true_label column: its
	// label meter measures the accuracy of the rows that reached it.
	var acc *analyze.Check
	for i := range rep.Checks {
		if strings.HasPrefix(rep.Checks[i].What, "accuracy (classify, ") {
			acc = &rep.Checks[i]
		}
	}
	if acc == nil || acc.Unit != "%" || acc.Measured < 70 || acc.Measured > 100 || acc.Estimated <= 0 {
		t.Errorf("checks %+v: want classify's measured accuracy in percent", rep.Checks)
	}
	t.Logf("checks %+v", rep.Checks)
}

// EXPLAIN ANALYZE options are checked where they are written.
func TestParseAnalyzeOptions(t *testing.T) {
	parse := func(src string) (cluster.AnalyzeOptions, error) {
		s, err := lang.Parse("q.sql", src+" SELECT 1;")
		if err != nil {
			t.Fatal(err)
		}
		return cluster.ParseAnalyze(s.Statements[0].(*lang.Explain), cluster.AnalyzeOptions{})
	}
	o, err := parse("EXPLAIN ANALYZE (DURATION 2.5, ROWS 100, FORMAT json)")
	if err != nil || o.For != 2500*time.Millisecond || o.MaxRows != 100 || o.Format != "json" {
		t.Fatalf("options %+v, %v", o, err)
	}
	if o, err := parse("EXPLAIN ANALYZE"); err != nil || o.For != cluster.DefaultAnalyzeFor {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	for src, want := range map[string]string{
		"EXPLAIN ANALYZE (DURATION 0)":  "q.sql:1:18: EXPLAIN ANALYZE DURATION 0",
		"EXPLAIN ANALYZE (ROWS 1.5)":    "q.sql:1:18: EXPLAIN ANALYZE ROWS 1.5",
		"EXPLAIN ANALYZE (FORMAT dot)":  "q.sql:1:18: EXPLAIN ANALYZE FORMAT dot",
		"EXPLAIN ANALYZE (COLOUR blue)": "q.sql:1:18: unknown EXPLAIN ANALYZE option COLOUR",
	} {
		if _, err := parse(src); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
}

// A stream FROM NATS has no end of its own: EXPLAIN ANALYZE stops the query
// gracefully after its DURATION (plus a second), and reports what came.
func TestExplainAnalyzeStopsNATSStreams(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	f := clustertest.NewFixture(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond})
	defer c.Close()
	src := `CREATE STREAM live (sensor INT, temperature DOUBLE) FROM NATS 'live.readings' FORMAT JSON;
EXPLAIN ANALYZE (DURATION 0.5) SELECT sensor, temperature FROM live WHERE temperature > 20;`
	var out bytes.Buffer
	start := time.Now()
	if err := c.RunScript(ctx, filepath.Join(f.Dir, "live.sql"), src, cluster.ScriptOptions{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("took %v: the stream was not stopped", took)
	}
	if !strings.Contains(out.String(), "EXPLAIN ANALYZE") || !strings.Contains(out.String(), "stopped") {
		t.Fatalf("report:\n%s", out.String())
	}
}
