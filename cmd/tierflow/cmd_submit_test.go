package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
)

// syncBuffer collects a child's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startTierflow runs the tierflow CLI as a separate OS process: the test
// binary itself, which TestMain turns into the real CLI (childEnv=real), so
// no extra build is needed. The process gets SIGINT at cleanup.
func startTierflow(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=real")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tierflow %s: %v\n%s", strings.Join(args, " "), err, out.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("tierflow %s did not exit on SIGINT\n%s", strings.Join(args, " "), out.String())
		}
	})
	return out
}

// TestSubmitToProcesses starts a coordinator and two workers (edge and cloud)
// as separate processes on an in-process NATS server, submits the query
// through the CLI and compares the rows with a one-process run.
func TestSubmitToProcesses(t *testing.T) {
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 8000)
	want := clustertest.Local(t, script)

	srv := clustertest.NATSServer(t)
	url := srv.ClientURL()
	coordOut := startTierflow(t, "coordinator", "--nats", url, "--heartbeat", "200ms", "--metrics", "127.0.0.1:0", "--placement", "rules")
	edgeOut := startTierflow(t, "worker", "--nats", url, "--tier", "edge", "--location", "l1", "--type", "x4", "--name", "e1", "--metrics", "127.0.0.1:0")
	startTierflow(t, "worker", "--nats", url, "--tier", "cloud", "--type", "x4", "--name", "c1")

	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := coordinator.NewClient(nc)
	client.Timeout = time.Second
	clustertest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		ws, err := client.Workers(context.Background())
		if err != nil {
			return err
		}
		if len(ws) != 2 {
			return fmt.Errorf("%d workers registered", len(ws))
		}
		return nil
	})

	stats := filepath.Join(dir, "stats.json")
	code, out, errs := runCLI(t, "", "submit", "--nats", url, "--format", "csv", "--name", "q1", "--stats", stats, filepath.Join(dir, "query.sql"))
	if code != exitOK {
		t.Fatalf("submit: exit %d\n%s", code, errs)
	}
	// --stats: the run's summary, its rows and end-to-end latency measured
	// by the sink on the cloud worker from stamps made on the edge worker.
	var sum struct {
		RowsIn    int64              `json:"rows_in"`
		RowsOut   int64              `json:"rows_out"`
		Dropped   map[string]int64   `json:"dropped"`
		LatencyMs map[string]float64 `json:"latency_ms"`
		Miss      *float64           `json:"slo_miss_rate"`
	}
	if b, err := os.ReadFile(stats); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("--stats file: %v %s", err, b)
	}
	if sum.RowsIn < 8000 || sum.RowsOut == 0 || sum.LatencyMs["p50"] <= 0 || sum.Miss != nil || len(sum.Dropped) == 0 {
		t.Errorf("--stats summary %+v", sum)
	}
	if !strings.Contains(errs, "latency p50 ") {
		t.Errorf("no latency in the summary: %q", errs)
	}
	if err := clustertest.SameRows(out, want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errs, "query q1 finished") {
		t.Errorf("no summary on stderr: %q", errs)
	}
	qs, err := client.Queries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Query != "q1" || qs[0].State != "finished" || len(qs[0].Workers) != 2 {
		t.Fatalf("SHOW QUERIES: %+v", qs)
	}
	if tb := qs[0].TierBytes(); tb["edge->cloud"] == 0 {
		t.Errorf("no bytes from edge to cloud: %v", tb)
	}

	// SHOW WORKERS and SHOW QUERIES come from the coordinator.
	shows := filepath.Join(dir, "show.sql")
	os.WriteFile(shows, []byte("SHOW WORKERS;\nSHOW QUERIES;\n"), 0o644)
	code, out, errs = runCLI(t, "", "submit", "--nats", url, shows)
	if code != exitOK || !strings.Contains(out, "e1") || !strings.Contains(out, "c1") || !strings.Contains(out, "q1") {
		t.Fatalf("submit SHOW: exit %d\n%s\n%s", code, out, errs)
	}
	// EXPLAIN ANALYZE runs the query (bounded by ROWS) and prints the run,
	// priced by --infra.
	analyzed := filepath.Join(dir, "analyze.sql")
	os.WriteFile(analyzed, []byte(strings.Replace(clustertest.Query, "SELECT", "EXPLAIN ANALYZE (ROWS 2000) SELECT", 1)), 0o644)
	code, out, errs = runCLI(t, "", "submit", "--nats", url, "--infra", filepath.Join(dir, "infra.yaml"), "--format", "json", analyzed)
	if code != exitOK {
		t.Fatalf("submit EXPLAIN ANALYZE: exit %d\n%s", code, errs)
	}
	var rep analyze.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Sources) != 2 || rep.Sources[0].Rows != 2000 || len(rep.Links) == 0 || rep.Links[0].Bytes == 0 || rep.Workers[0].Price != 0.1 {
		t.Fatalf("report %+v: 2000 readings read, bytes between tiers, workers priced", rep)
	}
	if rep.Latency.P50 <= 0 || rep.Latency.P99 < rep.Latency.P50 {
		t.Errorf("EXPLAIN ANALYZE latency %+v", rep.Latency)
	}
	for _, c := range rep.Checks {
		if !c.OK {
			t.Errorf("check %+v: a query placed by rules has no estimate to fail", c)
		}
	}
	// Both processes serve Prometheus metrics on the port they print.
	for _, tc := range []struct {
		out  *syncBuffer
		want string
	}{
		{edgeOut, `tierflow_operator_rows_out_total{instance="0",operator="scan readings",query="q1",worker="e1"} 8000`},
		{edgeOut, `tierflow_link_bytes_total{direction="send",edge=`},
		{coordOut, `tierflow_workers{tier="cloud"} 1`},
		{coordOut, `tierflow_query_tier_bytes{from="edge",query="q1",to="cloud"}`},
		{coordOut, `tierflow_query_latency_ms{quantile="0.5",query="q1"}`},
	} {
		body := scrape(t, tc.out)
		if !strings.Contains(body, tc.want) {
			t.Errorf("metrics lack %s", tc.want)
		}
	}
}

// scrape reads the metrics URL a process printed ("metrics at URL") and
// fetches it.
func scrape(t *testing.T, out *syncBuffer) string {
	t.Helper()
	var u string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "metrics at "); ok {
			u = strings.TrimSpace(rest)
		}
	}
	if u == "" {
		t.Fatalf("no metrics URL in the output:\n%s", out.String())
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSubmitErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("SELEC 1;"), 0o644); err != nil {
		t.Fatal(err)
	}
	showModels := filepath.Join(dir, "show.sql")
	if err := os.WriteFile(showModels, []byte("SHOW MODELS;"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSet := filepath.Join(dir, "set.sql")
	os.WriteFile(badSet, []byte("SET exec.on_error = 'often';\nSHOW WORKERS;\n"), 0o644)
	describe := filepath.Join(dir, "describe.sql")
	os.WriteFile(describe, []byte("DESCRIBE readings;\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", bad}, "--nats URL is required"},
		{[]string{"submit", "--nats", "nats://127.0.0.1:1", bad}, "bad.sql:1:1"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1"}, "--tier is required"},
		{[]string{"submit", "--nats", "nats://127.0.0.1:1", showModels}, "show.sql:1:1: SHOW MODELS lists this machine's catalog"},
		{[]string{"submit", "--nats", "nats://127.0.0.1:1", badSet}, `set.sql:1:1: SET exec.on_error: want skip or fail, got "often"`},
		{[]string{"submit", "--nats", "nats://127.0.0.1:1", describe}, "describe.sql:1:1: DESCRIBE lists this machine's catalog"},
	} {
		code, _, errs := runCLI(t, "", tc.args...)
		if code != exitBadInput || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestStartProcesses runs the query on runtime/cluster's process mode (what
// `tierflow run --processes` uses): the server and coordinator here, one
// child process per worker of the infrastructure.
func TestStartProcesses(t *testing.T) {
	f := clustertest.NewFixture(t, 4000)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	logs := &syncBuffer{}
	c, err := cluster.StartProcesses(ctx, cluster.ProcessOptions{
		Options: cluster.Options{Infra: f.Infra, Heartbeat: 200 * time.Millisecond, Placement: coordinator.PlaceRules},
		Binary:  os.Args[0], Env: []string{childEnv + "=real"}, Stderr: logs,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	closed := false
	defer func() {
		if closed {
			return
		}
		if err := c.Close(); err != nil {
			t.Errorf("close: %v\n%s", err, logs.String())
		}
	}()
	var got bytes.Buffer
	w := sinks.NewCSV(&got)
	info, err := c.Run(ctx, f.Script, w)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), f.Want); err != nil {
		t.Fatal(err)
	}
	if len(info.Workers) != 3 {
		t.Fatalf("ran on %v, want the three workers", info.Workers)
	}
	// The children's CPU time (what bench nexmark --processes divides by
	// its events): something while they run, no less once they have left.
	running, err := c.ProcessCPU()
	if err != nil || running <= 0 {
		t.Fatalf("ProcessCPU of 3 running workers = %v, %v; want > 0", running, err)
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v\n%s", err, logs.String())
	}
	if left, err := c.ProcessCPU(); err != nil || left < running {
		t.Fatalf("ProcessCPU after Close = %v, %v; want >= %v", left, err, running)
	}
}

// TestSubmitCarriesTheScriptsSets: the SETs before a submitted query travel
// with it (the coordinator plans with planner.*, the workers' sources take
// exec.*); SETs after it change nothing.
func TestSubmitCarriesTheScriptsSets(t *testing.T) {
	sub, err := planSubmission("q.sql", "SET planner.strategy = 'exhaustive';\nSET exec.on_error = 'skip';\nSELECT k FROM s;\nSET planner.seed = 3;\n")
	if err != nil {
		t.Fatal(err)
	}
	v := sub.settings.Values()
	if len(v) != 2 || v["planner.strategy"] != "exhaustive" || v["exec.on_error"] != "skip" {
		t.Fatalf("settings %v", v)
	}
}

// A query that fails before a row comes prints its error alone, as run
// does, not an empty table's "(0 rows)" first; on a cluster no worker has
// joined, the error says to start one (it said "no tiers").
func TestSubmitFailedBeforeARowPrintsTheErrorAlone(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	co, err := coordinator.Start(coordinator.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	script := filepath.Join(t.TempDir(), "one.sql")
	if err := os.WriteFile(script, []byte("SELECT 1 AS x;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "submit", "--nats", srv.ClientURL(), script)
	if code != exitFailure || !strings.Contains(errs, "tierflow worker --nats") || strings.Contains(out, "rows)") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, the advice to start a worker and no table", code, out, errs)
	}
}
