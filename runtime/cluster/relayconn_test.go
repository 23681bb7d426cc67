package cluster_test

import (
	"context"
	"maps"
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

// A query's relay frames travel on connections of its owner's, one per
// owner on each worker, never on a worker's connection: a NATS connection
// is one ordered stream, and a small query's deployment (its link opens'
// flushes, its control messages) waited there behind a large query's
// frames (#25: 0.3-0.9 s beside a cross join). One owner's parts share
// theirs: dialling one per part was most of a small query's part build
// beside an abusive query (#25, traced). The server's record of every
// connection, open and closed, shows which were dialled and where each
// owner's messages went.
func TestRelayFramesTravelOnTheirOwnersConnections(t *testing.T) {
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
	workers := []string{"w1", "w2"}
	for _, name := range workers {
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := strings.Replace(scripts["small"], "WHERE id < 100 ", "", 1)
	grouped := script(dir, "grouped", src)
	// Alice's two queries one after the other, then bob's.
	owners := []string{"alice", "alice", "bob"}
	for _, owner := range owners {
		client := coordinator.NewClient(clustertest.Connect(t, srv))
		client.User = owner
		info, err := client.Submit(ctx, grouped, "", sinks.NewCSV(&strings.Builder{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Workers) < 2 {
			t.Fatalf("%s's query ran on %v: want both workers, so that its rows cross a link", owner, info.Workers)
		}
		if info.State != deploy.StateFinished {
			t.Errorf("%s's query %s", owner, info.State)
		}
	}
	cz, err := srv.NATS().Connz(&server.ConnzOptions{State: server.ConnAll, Subscriptions: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	dialled := map[string]int{}
	relayMsgs := map[string]int64{}
	for _, c := range cz.Conns {
		switch {
		case strings.HasPrefix(c.Name, "worker-"):
			for _, s := range c.Subs {
				if strings.HasPrefix(s, "tierflow.relay.") {
					t.Errorf("%s's own connection subscribed %s: a relay link on the worker's connection", c.Name, s)
				}
			}
		case strings.HasPrefix(c.Name, "tierflow-relay-"):
			dialled[c.Name]++
			relayMsgs[c.Name] += c.InMsgs
		}
	}
	want := map[string]int{}
	for _, owner := range []string{"alice", "bob"} {
		for _, w := range workers {
			name := "tierflow-relay-" + owner + "-" + w
			want[name] = 1
			if relayMsgs[name] == 0 {
				t.Errorf("no relay frames on %s", name)
			}
		}
	}
	if !maps.Equal(dialled, want) {
		t.Errorf("relay connections dialled %v: want one per owner and worker, %v", dialled, want)
	}
}
