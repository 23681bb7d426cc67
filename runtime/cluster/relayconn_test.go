package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/worker"
)

// A query's relay frames travel on connections of its own, one per part,
// never on a worker's connection: a NATS connection is one ordered stream,
// and a small query's deployment (its link opens' flushes, its control
// messages) waited there behind a large query's frames (#25: 0.3-0.9 s
// beside a cross join). The server's record of every connection shows
// where each query's messages went.
func TestRelayFramesTravelOnTheQuerysOwnConnections(t *testing.T) {
	srv := clustertest.NATSServer(t)
	cnc := clustertest.Connect(t, srv)
	// Liveness is not what this test is about: a loaded host must not
	// expire a worker and move its part mid-query (Expiry).
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Expiry: 30 * time.Second,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	for _, name := range []string{"w1", "w2"} {
		wnc := clustertest.Connect(t, srv, nats.Name("worker-"+name))
		inv := devices.Inventory{CPUs: 1}
		w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: name, Tier: "edge", Inventory: &inv,
			Exec: cluster.ExecHooks(wnc, "", nil, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
	dir, scripts := clustertest.WriteAbuse(t, 20000)
	client := coordinator.NewClient(clustertest.Connect(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := strings.Replace(scripts["small"], "WHERE id < 100 ", "", 1)
	info, err := client.Submit(ctx, script(dir, "grouped", src), "", sinks.NewCSV(&strings.Builder{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Workers) < 2 {
		t.Fatalf("the query ran on %v: want both workers, so that its rows cross a link", info.Workers)
	}
	cz, err := srv.NATS().Connz(&server.ConnzOptions{State: server.ConnAll, Subscriptions: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	relayMsgs := map[string]int64{}
	for _, c := range cz.Conns {
		switch {
		case strings.HasPrefix(c.Name, "worker-"):
			for _, s := range c.Subs {
				if strings.HasPrefix(s, "tierflow.relay.") {
					t.Errorf("%s's own connection subscribed %s: a relay link on the worker's connection", c.Name, s)
				}
			}
		case strings.HasPrefix(c.Name, "tierflow-relay-"+info.Query+"-"):
			relayMsgs[strings.TrimPrefix(c.Name, "tierflow-relay-"+info.Query+"-")] += c.InMsgs
		}
	}
	for _, w := range []string{"w1", "w2"} {
		if relayMsgs[w] == 0 {
			t.Errorf("no relay frames from %s on a connection of query %s's own (%v; workers %v, recoveries %+v)", w, info.Query, relayMsgs, info.Workers, info.Recoveries)
		}
	}
	if info.State != deploy.StateFinished {
		t.Errorf("query %s", info.State)
	}
}
