package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

// TestClusterNodeFailure deploys as docs/deploy.md does: three cloud
// servers joined by routes, and an edge server that is a leaf node of the
// cluster (with two of the cloud servers to reach it by). The edge worker
// sits behind the leaf, the hub and cloud workers and the client on two
// cloud servers, the coordinator on the third, connected with the list of
// servers. That third server is killed while the query runs: the
// coordinator fails over to another server and the query completes with
// every row of a one-process run.
func TestClusterNodeFailure(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	var cloud []*natsserver.Server
	var routes, leafs []*url.URL
	for i := range 3 {
		s, err := natsserver.Start(natsserver.Options{Name: "cloud-" + strconv.Itoa(i+1), Configure: func(o *server.Options) {
			o.Cluster.Name = "tierflow"
			o.Cluster.Host = "127.0.0.1"
			o.Cluster.Port = server.RANDOM_PORT
			o.Routes = routes
			o.LeafNode.Host = "127.0.0.1"
			o.LeafNode.Port = server.RANDOM_PORT
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		cloud = append(cloud, s)
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: s.NATS().ClusterAddr().String()})
		vz, err := s.NATS().Varz(nil)
		if err != nil {
			t.Fatal(err)
		}
		leafs = append(leafs, &url.URL{Scheme: "nats-leaf", Host: "127.0.0.1:" + strconv.Itoa(vz.LeafNode.Port)})
	}
	edge, err := natsserver.Start(natsserver.Options{Name: "edge-l1", Configure: func(o *server.Options) {
		o.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: leafs[:2]}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(edge.Shutdown)
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for i, s := range cloud {
			if n := len(s.NATS().ActivePeers()); n < 2 {
				return fmt.Errorf("cloud-%d sees %d peers", i+1, n)
			}
		}
		if edge.NATS().NumLeafNodes() != 1 {
			return fmt.Errorf("the edge server is not a leaf yet")
		}
		return nil
	})

	// The readings replay at 2000 rows/s: the query runs for 3 seconds.
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 6000)
	want := clustertest.Local(t, script)
	script.Source = strings.Replace(script.Source, "FROM FILE 'readings.csv' FORMAT CSV;", "FROM FILE 'readings.csv' FORMAT CSV RATE 2000 PER SECOND;", 1)
	if !strings.Contains(script.Source, "RATE 2000") {
		t.Fatal("the readings stream has no rate to replay at")
	}
	script.Pace = &deploy.Pace{AtRate: true}

	connect := func(urls, name string) *nats.Conn {
		nc, err := natsserver.Connect(urls, nats.Name(name), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	doomed := cloud[2]
	cnc := connect(doomed.ClientURL()+","+cloud[0].ClientURL(), "coordinator")
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	inv := devices.Inventory{CPUs: 2}
	for _, w := range []struct {
		name, tier string
		srv        *natsserver.Server
	}{{"e1", "edge", edge}, {"h1", "hub", cloud[1]}, {"c1", "cloud", cloud[0]}} {
		wk, err := worker.Start(ctx, worker.Config{Conn: connect(w.srv.ClientURL(), w.name), Name: w.name, Tier: w.tier, Inventory: &inv})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wk.Close() })
	}

	var got bytes.Buffer
	out := sinks.NewCSV(&got)
	type result struct {
		info deploy.QueryInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := coordinator.NewClient(connect(cloud[0].ClientURL(), "client")).Submit(ctx, script, "failover", out)
		done <- result{info, err}
	}()
	// Kill the coordinator's server once the edge source is under way.
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		q, _ := co.Query("failover")
		for _, op := range q.Operators {
			if strings.HasPrefix(op.Operator, "scan readings") && op.RowsOut >= 500 {
				return nil
			}
		}
		return fmt.Errorf("the readings are not flowing yet (%s)", q.State)
	})
	doomed.Shutdown()
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !cnc.IsConnected() || cnc.ConnectedUrl() == doomed.ClientURL() {
			return fmt.Errorf("coordinator not reconnected (%s)", cnc.Status())
		}
		return nil
	})
	if q, _ := co.Query("failover"); !q.Ended.IsZero() {
		t.Fatalf("the query ended before the failover had a chance to matter: %s %s", q.State, q.Error)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("query after the failover: %v", r.err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), want); err != nil {
		t.Fatalf("rows after losing a cluster node: %v", err)
	}
	if r.info.State != deploy.StateFinished {
		t.Fatalf("state %s", r.info.State)
	}
	if tb := r.info.TierBytes(); tb["edge->hub"] == 0 || tb["hub->cloud"] == 0 {
		t.Fatalf("bytes between tiers %v", tb)
	}
}
