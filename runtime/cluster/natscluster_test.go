package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
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

// runOn runs the query with the coordinator, the workers and the client
// spread over servers, and compares the rows with a one-process run.
func runOn(t *testing.T, servers []*natsserver.Server, coord, client int, workers []struct {
	name, tier string
	server     int
}) deploy.QueryInfo {
	t.Helper()
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 4000)
	want := clustertest.Local(t, script)
	connect := func(i int, name string) *nats.Conn {
		nc, err := servers[i].Connect(nats.Name(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	co, err := coordinator.Start(coordinator.Config{Conn: connect(coord, "coordinator"), Heartbeat: 100 * time.Millisecond, Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	inv := devices.Inventory{CPUs: 2}
	for _, w := range workers {
		wk, err := worker.Start(ctx, worker.Config{Conn: connect(w.server, w.name), Name: w.name, Tier: w.tier, Inventory: &inv})
		if err != nil {
			t.Fatal(err)
		}
		defer wk.Close()
	}
	var got bytes.Buffer
	out := sinks.NewCSV(&got)
	info, err := coordinator.NewClient(connect(client, "client")).Submit(ctx, script, "", out)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), want); err != nil {
		t.Fatal(err)
	}
	return info
}

type workerAt = struct {
	name, tier string
	server     int
}

// TestThreeServerCluster: three nats-server instances joined by routes
// (random ports on loopback); the coordinator, each worker and the client
// sit on different servers.
func TestThreeServerCluster(t *testing.T) {
	var servers []*natsserver.Server
	var routes []*url.URL
	for i := range 3 {
		s, err := natsserver.Start(natsserver.Options{Name: "s" + strconv.Itoa(i), Configure: func(o *server.Options) {
			o.Cluster.Name = "tierflow"
			o.Cluster.Host = "127.0.0.1"
			o.Cluster.Port = server.RANDOM_PORT
			o.Routes = routes
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		servers = append(servers, s)
		a := s.NATS().ClusterAddr()
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: a.String()})
	}
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for i, s := range servers {
			if n := len(s.NATS().ActivePeers()); n < 2 {
				return fmt.Errorf("server %d sees %d peers", i, n)
			}
		}
		return nil
	})
	info := runOn(t, servers, 0, 1, []workerAt{{"e1", "edge", 1}, {"h1", "hub", 2}, {"c1", "cloud", 0}})
	if tb := info.TierBytes(); tb["edge->hub"] == 0 || tb["hub->cloud"] == 0 {
		t.Fatalf("bytes between tiers %v", tb)
	}
}

// TestLeafNode: the edge worker sits behind its own leaf server, connected
// to the hub's server as a leaf node; everyone else is on the hub server.
func TestLeafNode(t *testing.T) {
	hub, err := natsserver.Start(natsserver.Options{Name: "hub", Configure: func(o *server.Options) {
		o.LeafNode.Host = "127.0.0.1"
		o.LeafNode.Port = server.RANDOM_PORT
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Shutdown()
	vz, err := hub.NATS().Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	leafURL := &url.URL{Scheme: "nats-leaf", Host: "127.0.0.1:" + strconv.Itoa(vz.LeafNode.Port)}
	edge, err := natsserver.Start(natsserver.Options{Name: "edge", Configure: func(o *server.Options) {
		o.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: []*url.URL{leafURL}}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer edge.Shutdown()
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if hub.NATS().NumLeafNodes() != 1 || edge.NATS().NumLeafNodes() != 1 {
			return fmt.Errorf("leaf connections: hub %d, edge %d", hub.NATS().NumLeafNodes(), edge.NATS().NumLeafNodes())
		}
		return nil
	})
	servers := []*natsserver.Server{hub, edge}
	info := runOn(t, servers, 0, 0, []workerAt{{"e1", "edge", 1}, {"h1", "hub", 0}, {"c1", "cloud", 0}})
	if tb := info.TierBytes(); tb["edge->hub"] == 0 {
		t.Fatalf("no bytes from the edge behind its leaf server: %v", tb)
	}
}
