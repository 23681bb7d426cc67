// Package clustertest holds what the distributed end-to-end tests share: a
// generated stream and table, the query over them, a three-tier
// infrastructure, the reference result of a one-process run, starting a
// NATS server or an embedded cluster, running a query into CSV and
// comparing its rows, and a poller. Only tests import it.
package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/policy"
)

// Query filters a stream, joins it with a table and counts rows per site in
// 10-second tumbling windows: a source on the edge, a keyed aggregation on
// the hub, the sink in the cloud.
const Query = `
CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE)
  FROM FILE 'readings.csv' FORMAT CSV;
CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE 'sensors.csv' FORMAT CSV;
SELECT s.site, count(*) AS n
FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature > 20
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
`

// Infra is a three-tier infrastructure with one worker per tier.
const Infra = `tiers:
  - name: edge
  - name: hub
  - name: cloud
worker_types:
  - name: x4
    vcpus: 4
    price: 0.1
workers:
  - name: e1
    type: x4
    tier: edge
    location: l1
  - name: h1
    type: x4
    tier: hub
  - name: c1
    type: x4
    tier: cloud
links:
  - from: edge
    to: hub
    cost_per_gb: 0.05
  - from: hub
    to: cloud
    cost_per_gb: 0.09
# edge -> cloud direct: free, as these tests have always priced it.
default_link:
  cost_per_gb: 0
`

// WriteData writes readings.csv (rows rows, 8 sensors, 4 readings a second)
// sensors.csv, query.sql and infra.yaml into dir and returns the script.
func WriteData(t testing.TB, dir string, rows int) deploy.Script {
	t.Helper()
	var r strings.Builder
	r.WriteString("sensor,ts,temperature,humidity\n")
	start := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	for i := range rows {
		ts := start.Add(time.Duration(i) * 250 * time.Millisecond)
		fmt.Fprintf(&r, "%d,%s,%.2f,%.1f\n", i%8+1, ts.Format("2006-01-02 15:04:05.000"), 10+float64((i*37)%300)/10, 40+float64(i%20))
	}
	files := map[string]string{
		"readings.csv": r.String(),
		"sensors.csv":  "sensor,site\n1,north\n2,north\n3,south\n4,south\n5,east\n6,east\n7,west\n8,west\n",
		"query.sql":    Query,
		"infra.yaml":   Infra,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return deploy.Script{Filename: filepath.Join(dir, "query.sql"), Source: Query, BaseDir: dir}
}

// Fixture is a test's generated data: the script over it, the result of a
// one-process run and the infrastructure.
type Fixture struct {
	Dir    string
	Script deploy.Script
	Want   string
	Infra  *infra.Infra
}

// NewFixture writes rows readings into a fresh temporary directory, runs the
// script locally for the expected rows and loads the infrastructure.
func NewFixture(t testing.TB, rows int) Fixture {
	t.Helper()
	dir := t.TempDir()
	script := WriteData(t, dir, rows)
	want := Local(t, script)
	return Fixture{Dir: dir, Script: script, Want: want, Infra: LoadInfra(t, dir)}
}

// LoadInfra loads the infra.yaml WriteData wrote into dir.
func LoadInfra(t testing.TB, dir string) *infra.Infra {
	t.Helper()
	inf, err := infra.LoadFile(filepath.Join(dir, "infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// StartEmbedded starts an embedded cluster. The caller closes it, so that it
// is closed before a deferred allocator check runs.
func StartEmbedded(t testing.TB, ctx context.Context, o cluster.Options) *cluster.Cluster {
	t.Helper()
	return StartHooked(t, ctx, o, cluster.Hooks{})
}

// StartHooked is StartEmbedded with hooks h on the workers.
func StartHooked(t testing.TB, ctx context.Context, o cluster.Options, h cluster.Hooks) *cluster.Cluster {
	t.Helper()
	c, err := cluster.StartEmbeddedHooked(ctx, o, h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// RunFunc runs a query with its result going to out: a cluster's Run.
type RunFunc func(ctx context.Context, script deploy.Script, out sinks.Writer) (deploy.QueryInfo, error)

// RunCSV runs script into a CSV sink and returns the result and the
// query's info.
func RunCSV(t testing.TB, ctx context.Context, run RunFunc, script deploy.Script) (string, deploy.QueryInfo) {
	t.Helper()
	var got bytes.Buffer
	out := sinks.NewCSV(&got)
	info, err := run(ctx, script, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return got.String(), info
}

// RunMatches is RunCSV that also fails the test unless the rows equal want
// (as SameRows compares them).
func RunMatches(t testing.TB, ctx context.Context, run RunFunc, script deploy.Script, want string) deploy.QueryInfo {
	t.Helper()
	got, info := RunCSV(t, ctx, run, script)
	if err := SameRows(got, want); err != nil {
		t.Fatal(err)
	}
	return info
}

// NATSServer starts an embedded NATS server that is shut down when the
// test ends.
func NATSServer(t testing.TB) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Connect opens a connection to srv that is closed when the test ends
// (before the server, which was started earlier).
func Connect(t testing.TB, srv *natsserver.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := srv.Connect(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Local runs the script in one process (operators/exec) and returns its
// result as CSV.
func Local(t testing.TB, s deploy.Script) string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var buf bytes.Buffer
	q, _, err := s.Build(nil, exec.Options{Allocator: mem, Output: sinks.NewCSV(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	return buf.String()
}

// SameRows compares two CSV results as multisets of rows (header first):
// windows of different keys may close in any order across workers.
func SameRows(got, want string) error {
	g, w := lines(got), lines(want)
	if len(w) < 2 {
		return fmt.Errorf("the reference result has no rows")
	}
	if len(g) == 0 || g[0] != w[0] {
		return fmt.Errorf("header %q, want %q", first(g), w[0])
	}
	gs, ws := slices.Clone(g[1:]), slices.Clone(w[1:])
	slices.Sort(gs)
	slices.Sort(ws)
	if !slices.Equal(gs, ws) {
		return fmt.Errorf("%d rows differ from the %d of the one-process run:\n%s\nwant:\n%s", len(gs), len(ws), strings.Join(gs, "\n"), strings.Join(ws, "\n"))
	}
	return nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// CheckFor polls fn every sleep until it returns nil or total has passed,
// then fails the test with fn's last error.
func CheckFor(t testing.TB, total, sleep time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(sleep)
	}
	t.Fatalf("condition not met within %s: %v", total, err)
}

// Replan is the default policies (runtime/policy) and rule, a re-plan
// rule asked about every running query once a second (nil: none).
func Replan(rule control.Policy) []policy.Policy {
	if rule == nil {
		return policy.Defaults()
	}
	return policy.With(policy.Defaults(), policy.Rule("test", policy.EverySecond, rule))
}

// SLO is the default policies with rule in place of the Jellyfish
// policy's (control.DefaultJellyfish), or without it (rule nil).
func SLO(rule control.Policy) []policy.Policy {
	if rule == nil {
		return policy.Without(policy.Defaults(), policy.JellyfishName)
	}
	return policy.With(policy.Defaults(), policy.Jellyfish{Rule: rule})
}
