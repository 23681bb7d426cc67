package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// quietLatency runs SELECT ... LIMIT rows over a core NATS stream fed one
// message every gap (an idle-ish stream) on the embedded cluster, and returns
// the end-to-end latency the sinks measured.
func quietLatency(t testing.TB, catalogYAML string, rows int, gap time.Duration, sourceMaxDelay time.Duration) control.LatencyMs {
	t.Helper()
	f := clustertest.NewFixture(t, 10)
	ctx, c, nc := natsCluster(t, f)
	cat := filepath.Join(f.Dir, "quiet.yaml")
	if err := os.WriteFile(cat, []byte(catalogYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	// The publisher is the workload, not a synchronisation: it runs until
	// the query has its rows (a LIMIT ends the stream).
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	go func() {
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for i := 0; pubCtx.Err() == nil; i++ {
			_ = nc.Publish("quiet.readings", []byte(fmt.Sprintf(`{"sensor": %d, "temperature": 21.5}`, i)))
			select {
			case <-pubCtx.Done():
			case <-tick.C:
			}
		}
	}()
	sc := deploy.Script{Filename: filepath.Join(f.Dir, "quiet.sql"), BaseDir: f.Dir, Catalog: cat, SourceMaxDelay: sourceMaxDelay,
		Source: fmt.Sprintf("SELECT sensor, temperature FROM quiet WHERE temperature > 0 LIMIT %d;", rows)}
	info, err := c.Run(ctx, sc, discard{})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := info.EndToEnd()
	if int(h.Count) < rows {
		t.Fatalf("%d latency samples for %d rows", h.Count, rows)
	}
	return control.Percentiles(h)
}

const quietCatalog = `streams:
  - {name: quiet, source: nats, subject: quiet.readings, format: json, tier: edge%s,
     columns: [{name: sensor, type: INT}, {name: temperature, type: DOUBLE}]}
`

// A quiet stream's rows reach the sink within milliseconds: its source waits
// for a partial batch only briefly (connectors.DefaultSourceMaxDelay). With
// the old 100 ms wait (set here per stream in the catalog) every row of a
// batch pays it, which the generous bound below would catch.
func TestQuietStreamLatency(t *testing.T) {
	const rows, gap = 30, 30 * time.Millisecond
	fast := quietLatency(t, fmt.Sprintf(quietCatalog, ""), rows, gap, 0)
	t.Logf("default source max delay: end-to-end p50 %.3g p95 %.3g p99 %.3g ms", fast.P50, fast.P95, fast.P99)
	if fast.P50 >= 60 {
		t.Errorf("quiet stream: p50 %.3g ms end to end, want well under 60 (the target is 20)", fast.P50)
	}
	slow := quietLatency(t, fmt.Sprintf(quietCatalog, ", source_max_delay_ms: 100"), rows, gap, 0)
	t.Logf("source_max_delay_ms 100: end-to-end p50 %.3g ms", slow.P50)
	if slow.P50 < 80 {
		t.Errorf("with source_max_delay_ms: 100 the p50 is %.3g ms: the catalog setting did not reach the source", slow.P50)
	}
	// --source-max-delay (Script.SourceMaxDelay) reaches every worker's
	// sources; a stream's own setting wins over it.
	flag := quietLatency(t, fmt.Sprintf(quietCatalog, ""), rows, gap, 100*time.Millisecond)
	if flag.P50 < 80 {
		t.Errorf("with --source-max-delay 100ms the p50 is %.3g ms", flag.P50)
	}
	own := quietLatency(t, fmt.Sprintf(quietCatalog, ", source_max_delay_ms: 1"), rows, gap, 100*time.Millisecond)
	if own.P50 >= 60 {
		t.Errorf("a stream's source_max_delay_ms 1 under --source-max-delay 100ms: p50 %.3g ms", own.P50)
	}
}

// BenchmarkQuietStreamLatency measures the end-to-end latency of a quiet
// stream (a message every 30 ms) on the embedded cluster, with the default
// source max delay and with the old 100 ms, side by side:
//
//	go test ./runtime/cluster -run '^$' -bench QuietStreamLatency -benchtime 1x
func BenchmarkQuietStreamLatency(b *testing.B) {
	for _, c := range []struct{ name, extra string }{{"default", ""}, {"delay-100ms", ", source_max_delay_ms: 100"}} {
		b.Run(c.name, func(b *testing.B) {
			var l control.LatencyMs
			for i := 0; i < b.N; i++ {
				l = quietLatency(b, fmt.Sprintf(quietCatalog, c.extra), 30, 30*time.Millisecond, 0)
			}
			b.ReportMetric(l.P50, "p50-ms")
			b.ReportMetric(l.P95, "p95-ms")
			b.ReportMetric(l.P99, "p99-ms")
		})
	}
}

// While a query runs, the coordinator keeps live estimates per operator and
// per link from the workers' reports: SHOW QUERIES prints them.
func TestLiveEstimatesWhileRunning(t *testing.T) {
	f := clustertest.NewFixture(t, 10)
	ctx, c, nc := natsCluster(t, f)
	cat := filepath.Join(f.Dir, "quiet.yaml")
	if err := os.WriteFile(cat, []byte(fmt.Sprintf(quietCatalog, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; pubCtx.Err() == nil; i++ {
			_ = nc.Publish("quiet.readings", []byte(fmt.Sprintf(`{"sensor": %d, "temperature": 21.5}`, i)))
			select {
			case <-pubCtx.Done():
			case <-tick.C:
			}
		}
	}()
	sc := deploy.Script{Filename: filepath.Join(f.Dir, "quiet.sql"), BaseDir: f.Dir, Catalog: cat,
		Source: "SELECT sensor, temperature FROM quiet WHERE temperature > 0;"}
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, sc, discard{})
		done <- err
	}()
	var seen deploy.QueryInfo
	clustertest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		for _, q := range c.Coordinator.Queries() {
			e := q.Estimates
			if e == nil || e.Samples < 3 || len(e.Operators) == 0 || len(e.Links) == 0 {
				return fmt.Errorf("estimates %+v", e)
			}
			src := e.Operators[0]
			if src.Operator != "scan quiet" || src.InputRate < 20 || src.InputRate > 400 || src.BatchRows <= 0 {
				return fmt.Errorf("source estimate %+v (publishing about 200/s)", src)
			}
			for _, l := range e.Links {
				if l.BandwidthBps <= 0 || l.RTTMs <= 0 || l.From == "" || l.To == "" {
					return fmt.Errorf("link estimate %+v", l)
				}
			}
			seen = q
			return nil
		}
		return fmt.Errorf("no query")
	})
	var out strings.Builder
	cluster.WriteQueries(&out, []deploy.QueryInfo{seen})
	if !strings.Contains(out.String(), "estimates of "+seen.Query) || !strings.Contains(out.String(), "scan quiet") {
		t.Errorf("SHOW QUERIES:\n%s", out.String())
	}
	if err := c.Coordinator.Stop(seen.Query, false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
