package cluster_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

type dropRows struct{}

func (dropRows) Write(arrow.Record) error { return nil }
func (dropRows) Close() error             { return nil }

// TestSecondQueryPlansAroundTheFirst: the coordinator plans each query with
// the capacity the queries already running hold taken off their workers (its
// live view: their plans' items/s over capacity). Query A's model takes most
// of the cheapest worker (the edge box, no network); the same query
// submitted while A runs finds too little left there and is placed
// elsewhere, and its planner note names A's reservation. Once A has ended,
// the query is placed as A was.
func TestSecondQueryPlansAroundTheFirst(t *testing.T) {
	dir := fashionDir(t)
	// 80,000 items/s is 79% of one x2 box for mlp-large (0.0099 ms/item).
	src := `SELECT s.id, c.label FROM labelled AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WITH (ACCURACY >= 89, THROUGHPUT >= 80000 PER SECOND);`
	script := deploy.Script{Filename: filepath.Join(dir, "reserve.sql"), Source: src, BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml"),
		Pace: &deploy.Pace{AtRate: true, For: time.Minute}} // runs until stopped
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: filepath.Join(dir, "catalog.yaml"), Heartbeat: 200 * time.Millisecond})
	defer c.Close()

	ended := map[string]chan deploy.QueryInfo{}
	start := func(name string) deploy.QueryInfo {
		t.Helper()
		ch := make(chan deploy.QueryInfo, 1)
		ended[name] = ch
		go func() {
			info, _ := c.Client().Submit(ctx, script, name, dropRows{})
			ch <- info
		}()
		// Poll (with the deadline) until the coordinator runs it.
		for {
			qs, err := c.Client().Queries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range qs {
				if q.Query == name && q.State == deploy.StateRunning {
					return q
				}
				if q.Query == name && !q.Ended.IsZero() {
					t.Fatalf("%s ended: %+v", name, q)
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s never ran", name)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	stop := func(name string) {
		t.Helper()
		if err := c.Client().Stop(ctx, name, false); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ended[name]:
		case <-ctx.Done():
			t.Fatalf("%s did not stop", name)
		}
	}

	a := start("qa")
	if !strings.HasPrefix(a.Planner, "optimizer") || strings.Contains(a.Planner, "running queries") {
		t.Fatalf("A placed by %q", a.Planner)
	}
	b := start("qb")
	t.Logf("A: %s on %v\nB: %s on %v", a.Planner, modelWorkers(a), b.Planner, modelWorkers(b))
	if !strings.Contains(b.Planner, "around running queries") || !strings.Contains(b.Planner, "by qa") {
		t.Errorf("B's note %q does not name A's reservation", b.Planner)
	}
	for _, w := range modelWorkers(a) {
		if slices.Contains(modelWorkers(b), w) && len(modelWorkers(b)) == 1 {
			t.Errorf("B runs its model on %s alone, where A's takes 79%%", w)
		}
	}
	if slices.Equal(modelWorkers(a), modelWorkers(b)) {
		t.Errorf("B placed like A (%v) while A runs", modelWorkers(a))
	}
	stop("qb")
	stop("qa")
	// Nothing runs any more: the query is placed as A was.
	again := start("qc")
	if strings.Contains(again.Planner, "running queries") || !slices.Equal(modelWorkers(again), modelWorkers(a)) {
		t.Errorf("after A and B: %s on %v, want A's %v", again.Planner, modelWorkers(again), modelWorkers(a))
	}
	stop("qc")
}

// modelWorkers are the workers of a query's model stage, sorted.
func modelWorkers(q deploy.QueryInfo) []string {
	var out []string
	if q.Placement == nil {
		return nil
	}
	for _, op := range q.Placement.Operators {
		if op.Stage != "classify" {
			continue
		}
		for _, i := range op.Workers {
			if w := q.Placement.Workers[i]; !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	slices.Sort(out)
	return out
}
