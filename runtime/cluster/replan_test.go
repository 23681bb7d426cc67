package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/coordinator"
)

// runShaped runs the fixture's windowed query, replayed at its RATE, on an
// embedded cluster placed by rules (source on e1, aggregation on h1, sink on
// c1), with the given link shaping and re-planning policy; it returns the
// printed table and the --stats summary.
func runShaped(t *testing.T, f clustertest.Fixture, script string, shape func(from, to string) float64, policy control.Policy) (string, control.Summary) {
	return runHooked(t, f, script, cluster.Options{Infra: f.Infra, Placement: coordinator.PlaceRules, Policies: clustertest.Replan(policy)}, cluster.Hooks{Shape: shape})
}

// runTraced is runShaped with links shaped to bandwidth traces.
func runTraced(t *testing.T, f clustertest.Fixture, script string, shaper func(from, to string) relay.Shaper) (string, control.Summary) {
	return runHooked(t, f, script, cluster.Options{Infra: f.Infra, Placement: coordinator.PlaceRules}, cluster.Hooks{Shaper: shaper})
}

func runWith(t *testing.T, f clustertest.Fixture, script string, o cluster.Options) (string, control.Summary) {
	t.Helper()
	return runHooked(t, f, script, o, cluster.Hooks{})
}

// runHooked is runWith with hooks h on the workers.
func runHooked(t *testing.T, f clustertest.Fixture, script string, o cluster.Options, h cluster.Hooks) (string, control.Summary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartHooked(t, ctx, o, h)
	defer c.Close()
	var out, stats bytes.Buffer
	if err := c.RunScript(ctx, f.Dir+"/query.sql", script, cluster.ScriptOptions{Stdout: &out, Replay: true, Stats: &stats}); err != nil {
		t.Fatal(err)
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	return out.String(), s
}

// TestReplanOffASlowLink is issue 13's re-planning "done when": the relay
// link from the edge worker to the hub worker is shaped down to 2 KB/s
// mid-plan; the SlowLink policy sees its sender stalled, the coordinator
// re-plans without the hub and cuts over at the committed epoch, and the
// result is byte for byte that of an unshaped run: no row lost or
// duplicated. The summary's plan history says why and what moved.
func TestReplanOffASlowLink(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	f := clustertest.NewFixture(t, 1000)
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 200 PER SECOND;", 1)
	want, ws := runShaped(t, f, script, nil, nil)
	if len(ws.Replans) != 0 {
		t.Fatalf("unshaped run re-planned: %+v", ws.Replans)
	}
	slow := func(from, to string) float64 {
		if from == "e1" && to == "h1" {
			return 2000
		}
		return 0
	}
	got, s := runShaped(t, f, script, slow, control.SlowLink{MaxStalled: 0.5, MinAge: time.Second})
	if got != want {
		t.Fatalf("the re-planned run's result differs:\n%s\nwant:\n%s", got, want)
	}
	if len(s.Replans) != 1 {
		t.Fatalf("replans %+v, want one", s.Replans)
	}
	r := s.Replans[0]
	if !strings.Contains(r.Old, "h1") || strings.Contains(r.New, "h1") || !strings.Contains(r.Reason, "e1->h1") {
		t.Fatalf("replan %+v: want the query moved off e1->h1", r)
	}
	t.Logf("re-planned at epoch %d: %s; %s -> %s", r.Epoch, r.Reason, r.Old, r.New)
}
