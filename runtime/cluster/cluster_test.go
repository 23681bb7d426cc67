package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/metrics"
)

// Tests in parallel: this package's tests wait most of their time (on
// rate-limited streams, shaped links, restarts) and use little CPU (27 s of
// CPU in 95 s of wall, measured), so a test that only waits and asserts
// results, counts or lower bounds on time calls t.Parallel and runs beside
// others (eight at a time: TestMain) on a cluster and NATS server of its
// own. A step of a link far below the stream's need (Jellyfish's step
// down, the lazy drop) and the drift re-plans are among them: load only
// makes a slow link look slower. Tests that measure latency in
// milliseconds (the adapt step's missed frames, SneakPeek, a quiet
// stream), a rate kept (EXPLAIN ANALYZE's throughput), want an unshaped
// link to read as fast (the Jellyfish ceiling, per source), CPU shares or
// expiries, count goroutines, or hold a memory guard (it reads this
// process's live heap, which neighbours would fill) stay serial: a
// neighbour would move what they measure (beside two CPU hogs and seven
// neighbours the ceiling test saw its free link as slow, and the cascade
// kept 62 rows/s of 100).

// TestEmbeddedMatchesLocal runs the query across three workers on edge, hub
// and cloud, connected only through NATS, and compares the rows with a
// one-process run; the relay meters must show bytes crossing both tier links.
func TestEmbeddedMatchesLocal(t *testing.T) {
	f := clustertest.NewFixture(t, 20000)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Allocator: mem, Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	defer c.Close()
	if n := len(c.Coordinator.Workers()); n != 3 {
		t.Fatalf("%d workers registered, want 3", n)
	}

	info := clustertest.RunMatches(t, ctx, c.Run, f.Script, f.Want)
	if info.State != deploy.StateFinished {
		t.Fatalf("query state %s, want finished", info.State)
	}
	tb := info.TierBytes()
	if tb["edge->hub"] == 0 || tb["hub->cloud"] == 0 {
		t.Fatalf("bytes between tiers %v: want edge->hub and hub->cloud traffic", tb)
	}
	if tb["edge->hub"] <= tb["hub->cloud"] {
		t.Errorf("edge->hub %d bytes should exceed hub->cloud %d (the aggregate shrinks the data)", tb["edge->hub"], tb["hub->cloud"])
	}
	t.Logf("tier bytes %v, result rows %d", tb, info.ResultRows)
	// Measured network cost: the infrastructure prices edge-hub at 0.05
	// and hub-cloud at 0.09 per GB.
	wantNet := (float64(tb["edge->hub"])*0.05 + float64(tb["hub->cloud"])*0.09) / (1 << 30)
	if d := info.NetworkCost - wantNet; d > 1e-12 || d < -1e-12 {
		t.Errorf("network cost %g, want %g", info.NetworkCost, wantNet)
	}
	if info.ComputeCost <= 0 {
		t.Errorf("compute cost %g: three x4 workers at 0.1 per hour held for the query", info.ComputeCost)
	}
	qs := c.Coordinator.Queries()
	if len(qs) != 1 || qs[0].State != deploy.StateFinished {
		t.Fatalf("SHOW QUERIES: %+v", qs)
	}
}

// TestMetricsEndpoint scrapes the Prometheus endpoint of an embedded
// cluster after a query: operator rows, link bytes, batch latency and the
// coordinator's gauges must be there.
func TestMetricsEndpoint(t *testing.T) {
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 4000)
	inf := clustertest.LoadInfra(t, dir)
	reg := metrics.New()
	srv, err := metrics.Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Metrics: reg, Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	defer c.Close()
	info, err := c.Client().Submit(ctx, script, "m1", discard{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	for _, want := range []string{
		`tierflow_operator_rows_in_total{instance="0",operator="aggregate",query="m1",worker="h1"}`,
		`tierflow_operator_rows_out_total{instance="0",operator="scan readings",query="m1",worker="e1"} 4000`,
		`tierflow_operator_batch_seconds_bucket{operator="aggregate",query="m1",worker="h1"`,
		`tierflow_link_bytes_total{direction="send"`,
		`tierflow_workers{tier="hub"} 1`,
		`tierflow_query_tier_bytes{from="edge",query="m1",to="hub"}`,
		`tierflow_operator_queue_depth`,
		`tierflow_operator_frontier_lag_epochs`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if info.ResultRows == 0 || !strings.Contains(text, fmt.Sprintf(`tierflow_operator_rows_in_total{instance="0",operator="sink",query="m1",worker="c1"} %d`, info.ResultRows)) {
		t.Errorf("sink rows in metrics do not match the %d result rows", info.ResultRows)
	}
}

type discard struct{}

func (discard) Write(arrow.Record) error { return nil }
func (discard) Close() error             { return nil }

// TestSubmitErrorsAndExpiry: a script that does not compile fails before
// anything is deployed; a worker that stops heartbeating is dropped.
func TestSubmitErrorsAndExpiry(t *testing.T) {
	dir := t.TempDir()
	clustertest.WriteData(t, dir, 10)
	inf := clustertest.LoadInfra(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Heartbeat: 50 * time.Millisecond})
	defer c.Close()
	bad := deploy.Script{Filename: "bad.sql", Source: "CREATE STREAM s (a INT) FROM FILE 'missing.csv' FORMAT CSV; SELECT a FROM s;", BaseDir: dir}
	info, err := c.Client().Submit(ctx, bad, "bad", discard{})
	if err == nil || !errors.Is(err, coordinator.ErrQuery) || info.State != deploy.StateFailed {
		t.Fatalf("submit of a script with a missing file: %v, state %q", err, info.State)
	}
	ins := deploy.Script{Filename: "ins.sql", BaseDir: dir, Source: clustertest.Query[:strings.Index(clustertest.Query, "SELECT")] +
		"CREATE SINK out TO FILE 'out.csv' FORMAT CSV;\nINSERT INTO out SELECT sensor FROM readings;"}
	if _, err := c.Client().Submit(ctx, ins, "ins", discard{}); err == nil || !strings.Contains(err.Error(), "INSERT INTO out") {
		t.Fatalf("INSERT INTO a file on a cluster: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.csv")); err == nil {
		t.Error("a refused INSERT INTO still created its file")
	}
	// A sink TO DISCARD opens nothing: it runs on the workers, its query
	// completes and its rows reach no client.
	dis := deploy.Script{Filename: "dis.sql", BaseDir: dir, Source: clustertest.Query[:strings.Index(clustertest.Query, "SELECT")] +
		"CREATE SINK nowhere TO DISCARD;\nINSERT INTO nowhere SELECT sensor FROM readings;"}
	if info, err := c.Client().Submit(ctx, dis, "dis", discard{}); err != nil || info.State != deploy.StateFinished {
		t.Fatalf("INSERT INTO a discard sink on a cluster: %v, state %q", err, info.State)
	}
	if _, err := c.Client().Submit(ctx, deploy.Script{Filename: "x.sql", Source: "SELECT 1;"}, "bad", discard{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("duplicate query name: %v", err)
	}
	// A worker that registers and then goes silent.
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request(deploy.RegisterSubject("ghost"), []byte(`{"name":"ghost","tier":"edge","cpus":1}`), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		var out []string
		for _, w := range c.Coordinator.Workers() {
			out = append(out, w.Name)
		}
		return out
	}
	if !slices.Contains(names(), "ghost") {
		t.Fatalf("ghost not registered: %v", names())
	}
	clustertest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if n := names(); slices.Contains(n, "ghost") || len(n) != 3 {
			return fmt.Errorf("workers %v", n)
		}
		return nil
	})
}

// TestNoGoroutineLeak: a cluster that ran a query and closed leaves no
// goroutines behind.
func TestNoGoroutineLeak(t *testing.T) {
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 2000)
	inf := clustertest.LoadInfra(t, dir)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Heartbeat: 100 * time.Millisecond})
	if _, err := c.Run(ctx, script, discard{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			return fmt.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}

// TestRunScript runs a script with two queries and SHOW WORKERS on the
// cluster, as `tierflow run` does in embedded mode.
func TestRunScript(t *testing.T) {
	f := clustertest.NewFixture(t, 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	defer c.Close()
	src := f.Script.Source + "\nSHOW WORKERS;\nSELECT sensor FROM readings WHERE temperature > 39.8;\nSHOW QUERIES;\n" +
		"CREATE SINK hot TO FILE 'hot.csv' FORMAT CSV;\nINSERT INTO hot SELECT sensor FROM readings WHERE temperature > 39.8;\n"
	var outs []*bytes.Buffer
	var stdout, log bytes.Buffer
	err := c.RunScript(ctx, f.Script.Filename, src, cluster.ScriptOptions{Stdout: &stdout, Log: &log,
		NewOutput: func() (sinks.Writer, error) {
			outs = append(outs, &bytes.Buffer{})
			return sinks.NewCSV(outs[len(outs)-1]), nil
		}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(outs) != 2 {
		t.Fatalf("%d queries ran, f.Want 2", len(outs))
	}
	if err := clustertest.SameRows(outs[0].String(), f.Want); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(outs[1].String(), "\n"); n < 2 {
		t.Errorf("second query gave %d lines", n)
	}
	for _, w := range []string{"e1", "h1", "c1", "finished"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("SHOW output lacks %q:\n%s", w, stdout.String())
		}
	}
	if strings.Count(log.String(), "-- query") != 2 || !strings.Contains(log.String(), "edge->hub") {
		t.Errorf("summaries:\n%s", log.String())
	}
	hot, err := os.ReadFile(filepath.Join(f.Dir, "hot.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if string(hot) != outs[1].String() {
		t.Errorf("INSERT INTO hot wrote\n%s\nthe same SELECT gave\n%s", hot, outs[1].String())
	}
}

// TestDefaultInfra: without --infra, embedded mode still spreads a query
// over three tiers, and the script's source settings reach the workers.
func TestDefaultInfra(t *testing.T) {
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 2000)
	want := clustertest.Local(t, script)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: cluster.DefaultInfra(), Placement: coordinator.PlaceRules})
	defer c.Close()
	var got bytes.Buffer
	err := c.RunScript(ctx, script.Filename, script.Source, cluster.ScriptOptions{BatchSize: 100, OnError: "skip",
		NewOutput: func() (sinks.Writer, error) { return sinks.NewCSV(&got), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), want); err != nil {
		t.Fatal(err)
	}
	qs := c.Coordinator.Queries()
	if len(qs) != 1 || len(qs[0].Workers) != 3 {
		t.Fatalf("queries %+v", qs)
	}
	batches := int64(0)
	for _, op := range qs[0].Operators {
		if op.Operator == "scan readings" {
			batches = op.BatchesOut
		}
	}
	if batches < 20 {
		t.Errorf("scan emitted %d batches: BatchSize 100 did not reach the workers", batches)
	}
	err = c.RunScript(ctx, script.Filename, script.Source, cluster.ScriptOptions{OnError: "sometimes"})
	if err == nil {
		t.Fatal("a bad --on-error was accepted")
	}
}

// firstWrite signals its first batch, then discards.
type firstWrite struct {
	once sync.Once
	ch   chan struct{}
	rows atomic.Int64
}

func (f *firstWrite) Write(rec arrow.Record) error {
	f.rows.Add(rec.NumRows())
	f.once.Do(func() { close(f.ch) })
	return nil
}
func (f *firstWrite) Close() error { return nil }

// TestStopQuery stops a long query gracefully once its first results are
// in: the sources end, what is in flight drains, the query ends "stopped"
// with fewer rows than a full run.
func TestStopQuery(t *testing.T) {
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 200000)
	script.BatchSize = 1 // 200,000 batches through NATS: far longer than the test
	inf := clustertest.LoadInfra(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Heartbeat: 100 * time.Millisecond})
	defer c.Close()
	w := &firstWrite{ch: make(chan struct{})}
	type result struct {
		info deploy.QueryInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := c.Client().Submit(ctx, script, "long", w)
		done <- result{info, err}
	}()
	select {
	case <-w.ch:
	case r := <-done:
		t.Fatalf("query ended before its first result: %+v %v", r.info, r.err)
	case <-ctx.Done():
		t.Fatal("no result before the deadline")
	}
	if err := c.Client().Stop(ctx, "long", false); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.info.State != deploy.StateStopped {
		t.Fatalf("state %s, want stopped", r.info.State)
	}
	// 200,000 readings make about 5,000 windows per site; a stopped run has
	// far fewer.
	if n := w.rows.Load(); n == 0 || n != r.info.ResultRows || n > 10000 {
		t.Fatalf("%d rows written, %d reported", n, r.info.ResultRows)
	}
}

// TestOptimizerPlacement: by default the coordinator asks the planner, which
// puts this relational query where it is cheapest (next to its source, no
// network); the rows still equal the one-process run's.
func TestOptimizerPlacement(t *testing.T) {
	f := clustertest.NewFixture(t, 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond})
	defer c.Close()
	info := clustertest.RunMatches(t, ctx, c.Run, f.Script, f.Want)
	if !strings.HasPrefix(info.Planner, "optimizer") {
		t.Fatalf("placed by %q, want the optimizer", info.Planner)
	}
	t.Logf("%s on %v", info.Planner, info.Workers)
}

// TestInsertIntoCommits: the sink of an INSERT INTO a NATS subject reports
// its frontier as a SELECT's results do, so the coordinator's committed
// epoch moves and a recovery resumes the query there, not at 0.
func TestInsertIntoCommits(t *testing.T) {
	f := clustertest.NewFixture(t, 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	defer c.Close()
	src := f.Script.Source + "\nCREATE SINK hot TO NATS 'out.hot' FORMAT JSON;\nINSERT INTO hot SELECT sensor FROM readings WHERE temperature > 39.8;\n"
	var log bytes.Buffer
	if err := c.RunScript(ctx, f.Script.Filename, src, cluster.ScriptOptions{Stdout: io.Discard, Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	// The fixture's own SELECT, then the INSERT INTO.
	qs := c.Coordinator.Queries()
	if len(qs) != 2 {
		t.Fatalf("%d queries ran, want 2", len(qs))
	}
	for _, q := range qs {
		if q.State != deploy.StateFinished || q.Committed == 0 {
			t.Errorf("query %s (%d result rows to the client): %s with committed epoch %d", q.Query, q.ResultRows, q.State, q.Committed)
		}
	}
}
