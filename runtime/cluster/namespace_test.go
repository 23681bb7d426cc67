package cluster_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
)

// TestTwoClustersShareOneServer: two deployments (as two `tierflow run
// --nats URL` make) on one NATS server, each in its own namespace, with the
// same worker names: each coordinator sees only its own workers, and
// queries running at the same time each give their own result.
func TestTwoClustersShareOneServer(t *testing.T) {
	srv := clustertest.NATSServer(t)
	fs := []clustertest.Fixture{clustertest.NewFixture(t, 1500), clustertest.NewFixture(t, 2600)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var cs []*cluster.Cluster
	for i, f := range fs {
		c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: f.Infra, NATS: srv.ClientURL(), Heartbeat: 100 * time.Millisecond,
			Placement: coordinator.PlaceRules, Namespace: []string{"run-a", "run-b"}[i]})
		defer c.Close()
		cs = append(cs, c)
	}
	for i, c := range cs {
		// Both clusters' workers have registered before anyone counts.
		if err := c.WaitWorkers(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if n := len(c.Coordinator.Workers()); n != 3 {
			t.Fatalf("cluster %d's coordinator has %d workers, want its own 3", i, n)
		}
	}
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got bytes.Buffer
			w := sinks.NewCSV(&got)
			if _, err := cs[i].Run(ctx, fs[i].Script, w); err != nil {
				t.Errorf("cluster %d: %v", i, err)
				return
			}
			if err := w.Close(); err != nil {
				t.Errorf("cluster %d: %v", i, err)
				return
			}
			if err := clustertest.SameRows(got.String(), fs[i].Want); err != nil {
				t.Errorf("cluster %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	for i, c := range cs {
		if n := len(c.Coordinator.Workers()); n != 3 {
			t.Fatalf("cluster %d's coordinator ends with %d workers, want its own 3", i, n)
		}
	}
}
