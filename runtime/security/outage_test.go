package security_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/security"
	"github.com/tierflow/tierflow/runtime/worker"
)

// lockedBuffer is a CSV sink's output shared with the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestOutageUnderRoles runs issue 13's server outage on the secure setup of
// issue 18 (operator, accounts, TLS, the coordinator, worker and client
// roles of this package, each on its own creds): a query over a core NATS
// stream survives the server being stopped and started again on the same
// port. The client may ask for its own query to be resumed (the resume
// subject is in its role) and the coordinator counts what the stream lost
// meanwhile as dropped "disconnected".
func TestOutageUnderRoles(t *testing.T) {
	dir := t.TempDir()
	s, err := security.Generate(filepath.Join(dir, "nats"), security.SetupOptions{
		Clients: []string{"alice"}, ClientData: []string{"feed.>"}, WorkerData: []string{"feed.>"}, SharedWorker: true,
		Listen: "127.0.0.1:4222", TLSHosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{ConfigFile: s.ServerConf, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.ClientURL()
	u, _ := url.Parse(addr)
	port, _ := strconv.Atoi(u.Port())
	defer func() { srv.Shutdown() }()
	// Connections as every tierflow command makes them: reconnecting
	// forever.
	connect := func(user string) *nats.Conn {
		t.Helper()
		opts, err := natsserver.Auth{Creds: s.Creds[user], TLSCA: s.CA}.Options(addr)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := natsserver.Connect(addr, opts...)
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	cnc := connect("coordinator")
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	wnc := connect("worker")
	inv := devices.Inventory{CPUs: 1}
	w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &inv,
		Exec: cluster.ExecHooks(wnc, "", nil, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	anc := connect("alice")
	client := coordinator.NewClient(anc)
	client.User = "alice"

	// A feed ticking every 5 ms. Its publisher goes down with the server
	// and a new one publishes from the moment the server is back: what
	// it sends before the query is re-deployed reaches no part of the
	// query, so the loss is certain (a publisher that reconnected after
	// the query's workers would lose nothing, and the test would prove
	// nothing about counting).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	feed := func(ctx context.Context, pub *nats.Conn) {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			<-tick.C
			_ = pub.Publish("feed.ticks", fmt.Appendf(nil, `{"n":%d}`, i))
		}
	}
	before, stopBefore := context.WithCancel(ctx)
	go feed(before, connect("alice"))
	out := &lockedBuffer{}
	type result struct {
		info deploy.QueryInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := client.Submit(ctx, liveScript(t), "q-outage", sinks.NewCSV(out))
		done <- result{info, err}
	}()
	rowsFlow := func(gen int) func() error {
		return func() error {
			q, ok := co.Query("q-outage")
			if ok && q.Generation >= gen && q.ResultRows > 0 {
				return nil
			}
			return fmt.Errorf("no results of generation %d yet (%+v)", gen, q.State)
		}
	}
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, rowsFlow(0))
	stopBefore()
	srv.Shutdown()
	time.Sleep(2 * time.Second) // the outage itself, not a wait for anything
	srv, err = natsserver.Start(natsserver.Options{ConfigFile: s.ServerConf, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	go feed(ctx, connect("alice"))
	clustertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, rowsFlow(1))
	if err := client.Stop(ctx, "q-outage", false); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the query did not survive the outage: %v", r.err)
	}
	if len(r.info.Recoveries) == 0 || r.info.Recoveries[0].LostWorker != control.LostServer {
		t.Fatalf("recoveries %+v, want one of the NATS server", r.info.Recoveries)
	}
	lost := r.info.Recoveries[0].LostMessages
	if lost == 0 || r.info.Dropped[dataflow.DropDisconnected] != lost {
		t.Fatalf("lost %d core NATS messages, dropped %v: want them counted as %s", lost, r.info.Dropped, dataflow.DropDisconnected)
	}
	if sum := r.info.Summary(); sum.Dropped[dataflow.DropDisconnected] != lost {
		t.Fatalf("--stats dropped %v, want %d %s", sum.Dropped, lost, dataflow.DropDisconnected)
	}
	t.Logf("recovery %+v; %d result rows", r.info.Recoveries[0], r.info.ResultRows)
}
