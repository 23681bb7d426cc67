package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestQueriesSpreadOverIdleWorkers: on a tier of identical workers the
// optimizer's plans cost the same on any of them, and it used to break
// the tie the same way every time, so every user's query of a shared
// cluster ran on the first worker by name while the others idled: a
// query beside another's heavy one ran on the heavy one's worker. Now
// each query goes to the workers the running queries load least, by
// either placement; with nothing running, as before.
func TestQueriesSpreadOverIdleWorkers(t *testing.T) {
	for _, placement := range []string{coordinator.PlaceOptimizer, coordinator.PlaceRules} {
		t.Run(placement, func(t *testing.T) { spreadOverIdle(t, placement) })
	}
}

func spreadOverIdle(t *testing.T, placement string) {
	dir := t.TempDir()
	var rows strings.Builder
	rows.WriteString("id,k\n")
	for i := range 2000 {
		fmt.Fprintf(&rows, "%d,%d\n", i, i%7)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	inf := twoEdgeWorkers(t)
	// The long query reads its stream at 20 rows a second until stopped;
	// the small one counts a table once.
	long := deploy.Script{Filename: filepath.Join(dir, "long.sql"), BaseDir: dir, Pace: &deploy.Pace{AtRate: true, For: time.Minute},
		Source: "CREATE STREAM events (id INT, k INT) FROM FILE 'events.csv' FORMAT CSV RATE 20 PER SECOND;\nSELECT id, k FROM events WHERE id >= 0;\n"}
	small := deploy.Script{Filename: filepath.Join(dir, "small.sql"), BaseDir: dir,
		Source: "CREATE TABLE t (id INT, k INT) FROM FILE 'events.csv' FORMAT CSV;\nSELECT k, count(*) AS n FROM t GROUP BY k;\n"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Placement: placement, Heartbeat: 200 * time.Millisecond})
	defer c.Close()
	// scanOf is the worker the query's scan runs on (it runs once).
	scanOf := func(q deploy.QueryInfo) string {
		for _, op := range q.Placement.Operators {
			if strings.HasPrefix(op.Name, "scan ") && len(op.Workers) == 1 {
				return q.Placement.Workers[op.Workers[0]]
			}
		}
		t.Fatalf("%s has no scan that runs once: %+v", q.Query, q.Placement)
		return ""
	}
	runSmall := func(name string) deploy.QueryInfo {
		t.Helper()
		info, err := c.Client().Submit(ctx, small, name, dropRows{})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	alone := runSmall("small-alone")
	done := make(chan error, 1)
	go func() {
		_, err := c.Client().Submit(ctx, long, "long", dropRows{})
		done <- err
	}()
	var heavy deploy.QueryInfo
	clustertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		qs, err := c.Client().Queries(ctx)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Query == "long" && q.State == deploy.StateRunning {
				heavy = q
				return nil
			}
		}
		return fmt.Errorf("the long query does not run yet")
	})
	beside := runSmall("small-beside")
	t.Logf("alone: %v, the long query: %v, beside it: %v", alone.Workers, heavy.Workers, beside.Workers)
	if alone.Workers[0] != "e1" || scanOf(alone) != "e1" {
		t.Errorf("alone the small query runs on %v (scan %s): want e1 first, as before", alone.Workers, scanOf(alone))
	}
	if scanOf(beside) == scanOf(heavy) {
		t.Errorf("beside the long query (scan on %s) the small one scans on the same worker", scanOf(heavy))
	}
	if placement == coordinator.PlaceOptimizer && slices.Contains(beside.Workers, scanOf(heavy)) {
		t.Errorf("beside the long query (on %v) the small one runs on %v: want the idle worker alone", heavy.Workers, beside.Workers)
	}
	if err := c.Client().Stop(ctx, "long", false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after := runSmall("small-after"); scanOf(after) != "e1" {
		t.Errorf("after the long query the small one scans on %s: want e1 again", scanOf(after))
	}
}

// twoEdgeWorkers is a tier of two identical workers, e1 and e2, with free
// links: placements there differ only by the load they find.
func twoEdgeWorkers(t *testing.T) *infra.Infra {
	t.Helper()
	inf, err := infra.Parse("infra.yaml", []byte(`tiers:
  - name: edge
worker_types:
  - name: x2
    vcpus: 2
    price: 0.1
workers:
  - name: e1
    type: x2
    tier: edge
  - name: e2
    type: x2
    tier: edge
default_link:
  cost_per_gb: 0
`))
	if err != nil {
		t.Fatal(err)
	}
	return inf
}
