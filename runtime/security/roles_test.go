package security_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/devices"
	"github.com/tierflow/tierflow/runtime/security"
	"github.com/tierflow/tierflow/runtime/worker"
)

// secureCluster is a server started from a generated setup (operator,
// accounts, per-role users, TLS), a coordinator and a worker on their own
// creds.
type secureCluster struct {
	setup *security.Setup
	url   string
	co    *coordinator.Coordinator
}

func (sc *secureCluster) auth(user string) natsserver.Auth {
	return natsserver.Auth{Creds: sc.setup.Creds[user], TLSCA: sc.setup.CA}
}

func (sc *secureCluster) connect(t *testing.T, a natsserver.Auth) (*nats.Conn, error) {
	t.Helper()
	opts, err := a.Options(sc.url)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := natsserver.Connect(sc.url, append(opts, nats.MaxReconnects(0), nats.Timeout(2*time.Second))...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

func (sc *secureCluster) client(t *testing.T, creds, as string) *coordinator.Client {
	t.Helper()
	nc, err := sc.connect(t, sc.auth(creds))
	if err != nil {
		t.Fatalf("connect as %s: %v", creds, err)
	}
	c := coordinator.NewClient(nc)
	c.User, c.Timeout = as, 5*time.Second
	return c
}

func startSecure(t *testing.T) *secureCluster {
	t.Helper()
	dir := t.TempDir()
	s, err := security.Generate(filepath.Join(dir, "nats"), security.SetupOptions{
		Clients: []string{"alice", "bob"}, Admins: []string{"root"}, ClientData: []string{"feed.>"}, Workers: []string{"w2"}, WorkerData: []string{"feed.>"}, SharedWorker: true,
		Listen: "127.0.0.1:4222", TLSHosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{ConfigFile: s.ServerConf, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	sc := &secureCluster{setup: s, url: srv.ClientURL()}
	cnc, err := sc.connect(t, sc.auth("coordinator"))
	if err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Admins: s.Admins,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	sc.co = co
	wnc, err := sc.connect(t, sc.auth("worker"))
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	inv := devices.Inventory{CPUs: 1}
	w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &inv,
		Exec: cluster.ExecHooks(wnc, "", nil, 1)})
	if err != nil {
		t.Fatalf("worker on its own creds: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return sc
}

// liveScript reads a NATS subject nobody ends: the query runs until stopped.
func liveScript(t *testing.T) deploy.Script {
	dir := t.TempDir()
	src := "CREATE STREAM feed (n INT) FROM NATS 'feed.ticks' FORMAT JSON;\nSELECT n FROM feed;\n"
	path := filepath.Join(dir, "live.sql")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return deploy.Script{Filename: path, Source: src, BaseDir: dir}
}

type running struct {
	info deploy.QueryInfo
	err  error
	done chan struct{}
}

// submit starts a live query as c and waits until the coordinator runs it.
func (sc *secureCluster) submit(t *testing.T, c *coordinator.Client, name string) *running {
	t.Helper()
	r := &running{done: make(chan struct{})}
	var mu sync.Mutex
	go func() {
		defer close(r.done)
		info, err := c.Submit(context.Background(), liveScript(t), name, sinks.NewCSV(&lockedDiscard{mu: &mu}))
		r.info, r.err = info, err
	}()
	clustertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		q, ok := sc.co.Query(name)
		if !ok || q.State != deploy.StateRunning {
			select {
			case <-r.done:
				t.Fatalf("submit %s ended: %v", name, r.err)
			default:
			}
			return errors.New(name + " not running yet")
		}
		return nil
	})
	return r
}

type lockedDiscard struct{ mu *sync.Mutex }

func (l *lockedDiscard) Write(p []byte) (int, error) { return len(p), nil }

func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want refused", what)
		return
	}
	if !errors.Is(err, coordinator.ErrDenied) && !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(err.Error(), "denied") {
		t.Errorf("%s: %v, want a refusal", what, err)
	}
}

// TestRolesEnforced runs a cluster on a server started from a generated
// setup and tries every control action with no credentials, with a
// worker's, and with another client's: each is refused, while the owner and
// an admin are served.
func TestRolesEnforced(t *testing.T) {
	sc := startSecure(t)
	ctx := context.Background()

	// No credentials: the server refuses the connection itself.
	if _, err := sc.connect(t, natsserver.Auth{TLSCA: sc.setup.CA}); err == nil || !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous connection: %v, want an authorization violation", err)
	}
	// Without the CA the server's certificate is not trusted.
	if _, err := sc.connect(t, natsserver.Auth{Creds: sc.setup.Creds["alice"]}); err == nil {
		t.Fatal("connection without the CA succeeded")
	}

	alice := sc.client(t, "alice", "alice")
	ws, err := alice.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].Name != "w1" {
		t.Fatalf("alice SHOW WORKERS: %v %v", ws, err)
	}
	run := sc.submit(t, alice, "qa")
	if q, _ := sc.co.Query("qa"); q.Owner != "alice" {
		t.Fatalf("owner of qa %q, want alice", q.Owner)
	}

	// A worker's creds: no client action at all.
	asWorker := sc.client(t, "worker", "worker")
	_, err = asWorker.Workers(ctx)
	wantDenied(t, "worker SHOW WORKERS", err)
	_, err = asWorker.Queries(ctx)
	wantDenied(t, "worker SHOW QUERIES", err)
	wantDenied(t, "worker STOP", asWorker.Stop(ctx, "qa", true))
	asWorker.User = "alice" // posing as alice changes nothing
	wantDenied(t, "worker STOP as alice", asWorker.Stop(ctx, "qa", true))
	_, err = asWorker.Submit(ctx, liveScript(t), "qw", sinks.NewCSV(&lockedDiscard{}))
	wantDenied(t, "worker submit", err)
	// Nor may it stop a query behind the coordinator's back.
	wnc, _ := sc.connect(t, sc.auth("worker"))
	_ = wnc.Publish(deploy.QuerySubject("", "qa", "stop"), []byte(`{"query":"qa","abort":true}`))
	_ = wnc.Flush()
	if err := wnc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Errorf("worker publishing a query stop: %v, want a permissions violation", err)
	}

	// Another client: cannot stop alice's query, nor act as alice, nor read
	// her results or the query's data between workers.
	bob := sc.client(t, "bob", "bob")
	wantDenied(t, "bob STOP alice's query", bob.Stop(ctx, "qa", true))
	if qs, err := bob.Queries(ctx); err != nil || len(qs) != 0 {
		t.Errorf("bob's SHOW QUERIES: %+v %v, want none of alice's", qs, err)
	}
	if qs, err := alice.Queries(ctx); err != nil || len(qs) != 1 || qs[0].Query != "qa" {
		t.Errorf("alice's SHOW QUERIES: %+v %v, want qa", qs, err)
	}
	_, err = sc.client(t, "bob", "alice").Queries(ctx)
	wantDenied(t, "bob SHOW QUERIES as alice", err)
	bobAsAlice := sc.client(t, "bob", "alice")
	wantDenied(t, "bob STOP as alice", bobAsAlice.Stop(ctx, "qa", true))
	_, err = bobAsAlice.Submit(ctx, liveScript(t), "qb", sinks.NewCSV(&lockedDiscard{}))
	wantDenied(t, "bob submit as alice", err)
	for _, subj := range []string{deploy.UserSubject("alice", "qa", "results"), "tierflow.relay.>", deploy.QuerySubject("", "qa", "deploy.w1"), deploy.SubmitSubject("alice")} {
		nc, _ := sc.connect(t, sc.auth("bob"))
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		if err := nc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("bob subscribing %s: %v, want a permissions violation", subj, err)
		}
	}
	// A client cannot register a worker.
	anc, _ := sc.connect(t, sc.auth("alice"))
	inv := devices.Inventory{CPUs: 1}
	if _, err := worker.Start(ctx, worker.Config{Conn: anc, Name: "fake", Tier: "edge", Inventory: &inv, RegisterTimeout: 2 * time.Second}); err == nil {
		t.Error("alice registered a worker")
	}
	if ws, _ := alice.Workers(ctx); len(ws) != 1 {
		t.Errorf("workers after the fake registration: %v", ws)
	}
	// A worker with creds of its own registers under its name only: it
	// cannot re-register as w1, nor read w1's deployments.
	w2nc, _ := sc.connect(t, sc.auth("w2"))
	if _, err := worker.Start(ctx, worker.Config{Conn: w2nc, Name: "w1", Tier: "cloud", Inventory: &inv, RegisterTimeout: 2 * time.Second}); err == nil {
		t.Error("w2's creds re-registered w1")
	}
	w2nc2, _ := sc.connect(t, sc.auth("w2"))
	if _, err := w2nc2.SubscribeSync(deploy.DeploySubject("", "*", "w1")); err != nil {
		t.Fatal(err)
	}
	_ = w2nc2.Flush()
	if err := w2nc2.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Errorf("w2 subscribing to w1's deployments: %v, want a permissions violation", err)
	}
	if ws, _ := alice.Workers(ctx); len(ws) != 1 || ws[0].Tier != "edge" {
		t.Errorf("workers after w2 posed as w1: %+v", ws)
	}
	w2own, _ := sc.connect(t, sc.auth("w2"))
	w2, err := worker.Start(ctx, worker.Config{Conn: w2own, Name: "w2", Tier: "cloud", Inventory: &inv})
	if err != nil {
		t.Fatalf("w2 on its own creds: %v", err)
	}
	defer w2.Close()
	if q, _ := sc.co.Query("qa"); q.State != deploy.StateRunning {
		t.Fatalf("qa is %s after the refused attacks: %s", q.State, q.Error)
	}

	// The owner stops her own query; an admin stops anyone's.
	if err := alice.Stop(ctx, "qa", false); err != nil {
		t.Fatalf("alice stops qa: %v", err)
	}
	<-run.done
	if run.err != nil || run.info.State != deploy.StateStopped {
		t.Fatalf("qa: %s %v", run.info.State, run.err)
	}
	runB := sc.submit(t, bob, "qb2")
	root := sc.client(t, "root", "root")
	if qs, err := root.Queries(ctx); err != nil || len(qs) != 2 {
		t.Errorf("the admin's SHOW QUERIES: %d queries %v, want everyone's 2", len(qs), err)
	}
	if err := root.Stop(ctx, "qb2", false); err != nil {
		t.Fatalf("admin stops bob's query: %v", err)
	}
	<-runB.done
	if runB.info.State != deploy.StateStopped {
		t.Fatalf("qb2: %s %v", runB.info.State, runB.err)
	}
}

// TestRolesEnforcedInNamespace runs the same roles in a non-default
// namespace (as `--namespace` and every `tierflow run` use): the owner
// submits, lists and stops there, while a worker and another client are
// refused as in the default namespace.
func TestRolesEnforcedInNamespace(t *testing.T) {
	sc := startSecure(t)
	ctx := context.Background()
	const ns = "run-0badc0de"
	cnc, err := sc.connect(t, sc.auth("coordinator"))
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond, Admins: sc.setup.Admins, Namespace: ns,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatalf("coordinator in %s: %v", ns, err)
	}
	t.Cleanup(func() { co.Close() })
	inv := devices.Inventory{CPUs: 1}
	w2nc, _ := sc.connect(t, sc.auth("w2"))
	w2, err := worker.Start(ctx, worker.Config{Conn: w2nc, Name: "w2", Tier: "edge", Inventory: &inv, Namespace: ns, RegisterTimeout: 5 * time.Second,
		Exec: cluster.ExecHooks(w2nc, "", nil, 1)})
	if err != nil {
		t.Fatalf("worker w2 in %s: %v", ns, err)
	}
	t.Cleanup(func() { w2.Close() })

	nsClient := func(creds, as string) *coordinator.Client {
		c := sc.client(t, creds, as)
		c.Namespace = ns
		return c
	}
	alice := nsClient("alice", "alice")
	if ws, err := alice.Workers(ctx); err != nil || len(ws) != 1 || ws[0].Name != "w2" {
		t.Fatalf("alice SHOW WORKERS in %s: %v %v", ns, ws, err)
	}
	// sc.submit waits on the default coordinator; wait on this one.
	nsc := &secureCluster{setup: sc.setup, url: sc.url, co: co}
	run := nsc.submit(t, alice, "qa")
	if qs, err := alice.Queries(ctx); err != nil || len(qs) != 1 || qs[0].Query != "qa" {
		t.Errorf("alice's SHOW QUERIES in %s: %+v %v", ns, qs, err)
	}

	asWorker := nsClient("worker", "alice")
	wantDenied(t, "worker STOP as alice in "+ns, asWorker.Stop(ctx, "qa", true))
	_, err = asWorker.Submit(ctx, liveScript(t), "qw", sinks.NewCSV(&lockedDiscard{}))
	wantDenied(t, "worker submit in "+ns, err)
	wnc, _ := sc.connect(t, sc.auth("worker"))
	_ = wnc.Publish(deploy.QuerySubject(ns, "qa", "stop"), []byte(`{"query":"qa","abort":true}`))
	_ = wnc.Flush()
	if err := wnc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Errorf("worker publishing a query stop in %s: %v, want a permissions violation", ns, err)
	}
	wantDenied(t, "bob STOP alice's query in "+ns, nsClient("bob", "bob").Stop(ctx, "qa", true))
	wantDenied(t, "bob STOP as alice in "+ns, nsClient("bob", "alice").Stop(ctx, "qa", true))
	for _, subj := range []string{deploy.InNamespace(ns, deploy.UserSubject("alice", "qa", "results")), deploy.InNamespace(ns, "tierflow.relay.>"),
		deploy.DeploySubject(ns, "qa", "w2"), deploy.InNamespace(ns, deploy.SubmitSubject("alice"))} {
		nc, _ := sc.connect(t, sc.auth("bob"))
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		if err := nc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("bob subscribing %s: %v, want a permissions violation", subj, err)
		}
	}
	if q, _ := co.Query("qa"); q.State != deploy.StateRunning {
		t.Fatalf("qa is %s after the refused attacks: %s", q.State, q.Error)
	}
	if err := alice.Stop(ctx, "qa", false); err != nil {
		t.Fatalf("alice stops qa in %s: %v", ns, err)
	}
	<-run.done
	if run.err != nil || run.info.State != deploy.StateStopped {
		t.Fatalf("qa in %s: %s %v", ns, run.info.State, run.err)
	}
}
