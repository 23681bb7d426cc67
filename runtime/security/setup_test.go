package security_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// setupServer is a server started from a generated setup.
type setupServer struct {
	s   *security.Setup
	srv *natsserver.Server
	url string
}

func startSetup(t *testing.T, o security.SetupOptions) *setupServer {
	t.Helper()
	o.Listen, o.TLSHosts = "127.0.0.1:4222", []string{"127.0.0.1"}
	s, err := security.Generate(filepath.Join(t.TempDir(), "secrets"), o)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{ConfigFile: s.ServerConf, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return &setupServer{s: s, srv: srv, url: srv.ClientURL()}
}

// connect connects as user (its creds file by name, "" for none).
func (ss *setupServer) connect(t *testing.T, user string, extra ...nats.Option) (*nats.Conn, error) {
	t.Helper()
	a := natsserver.Auth{TLSCA: ss.s.CA}
	if user != "" {
		a.Creds = filepath.Join(ss.s.Dir, user+".creds")
	}
	opts, err := a.Options(ss.url)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(ss.url, append(append(opts, nats.MaxReconnects(0), nats.Timeout(2*time.Second)), extra...)...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

// TestLeafCredsOnlyForLeafNodes: leaf.creds carries every subject between
// servers, so as an ordinary client it must be refused (#25: it worked as a
// client with publish and subscribe on ">").
func TestLeafCredsOnlyForLeafNodes(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Clients: []string{"alice"}})
	if nc, err := ss.connect(t, "leaf"); err == nil {
		sub, _ := nc.SubscribeSync("tierflow.>")
		_ = nc.Flush()
		t.Fatalf("leaf.creds connected as a client (subscription %v, %v)", sub != nil, nc.LastError())
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("leaf.creds as a client: %v, want an authorization violation", err)
	}
	if _, err := ss.connect(t, "alice"); err != nil {
		t.Fatalf("alice: %v", err)
	}
}

// TestCredsExpire: clients' creds made with Expires stop working then.
func TestCredsExpire(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Clients: []string{"alice"}, Expires: 2 * time.Second})
	if _, err := ss.connect(t, "alice"); err != nil {
		t.Fatalf("alice before her creds expire: %v", err)
	}
	clustertest.CheckFor(t, 10*time.Second, 200*time.Millisecond, func() error {
		if nc, err := ss.connect(t, "alice"); err == nil {
			nc.Close()
			return errors.New("alice still connects")
		}
		return nil
	})
	if _, err := ss.connect(t, "coordinator"); err != nil {
		t.Fatalf("the coordinator's creds expired with the clients': %v", err)
	}
}

// TestRevokeOneUser: nats-setup revoke NAME takes one user out, on a
// running server once it reloads, without touching the others' creds.
func TestRevokeOneUser(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Clients: []string{"alice", "bob"}, Data: map[string][]string{"alice": {"sensors.>"}}})
	alice, err := ss.connect(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	alice.SetClosedHandler(func(*nats.Conn) { close(closed) })
	r, err := security.Revoke(ss.s.Dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.PublicKey, "U") {
		t.Fatalf("revoked key %q", r.PublicKey)
	}
	if err := ss.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("alice's connection outlived her revocation")
	}
	// Her old creds file, kept aside, no longer connects.
	old := filepath.Join(ss.s.Dir, "alice.creds.revoked")
	opts, _ := natsserver.Auth{Creds: old, TLSCA: ss.s.CA}.Options(ss.url)
	if nc, err := nats.Connect(ss.url, append(opts, nats.MaxReconnects(0), nats.Timeout(2*time.Second))...); err == nil {
		nc.Close()
		t.Fatal("alice's revoked creds still connect")
	}
	if _, err := ss.connect(t, "bob"); err != nil {
		t.Fatalf("bob after alice's revocation: %v", err)
	}
	a, err := security.LoadAuthority(ss.s.Authority)
	if err != nil {
		t.Fatal(err)
	}
	if a.Knows("alice") || !a.Knows("bob") {
		t.Fatalf("authority after the revocation: %+v", a.Users)
	}
	if _, err := security.Revoke(ss.s.Dir, "alice"); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("a second revocation: %v", err)
	}
	if _, err := security.Revoke(ss.s.Dir, "nobody"); err == nil {
		t.Fatal("revoked a user that does not exist")
	}
}

// TestOneCredsPerWorker: by default every worker's creds are bound to its
// name, so one machine's creds cannot register as another worker.
func TestOneCredsPerWorker(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Workers: []string{"e1", "c1"}})
	if _, err := os.Stat(filepath.Join(ss.s.Dir, "worker.creds")); err == nil {
		t.Fatal("a shared worker.creds was written without being asked for")
	}
	cnc, err := ss.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := cnc.SubscribeSync(deploy.RegisterSubject("*"))
	_ = cnc.Flush()
	e1, err := ss.connect(t, "e1")
	if err != nil {
		t.Fatal(err)
	}
	inv := devices.Inventory{CPUs: 1}
	go worker.Start(context.Background(), worker.Config{Conn: e1, Name: "c1", Tier: "edge", Inventory: &inv, RegisterTimeout: time.Second})
	if m, err := sub.NextMsg(1500 * time.Millisecond); err == nil {
		t.Fatalf("e1's creds registered as %s", m.Subject)
	}
	// A setup naming no worker makes one, "worker", bound to that name.
	ss2 := startSetup(t, security.SetupOptions{})
	w, err := ss2.connect(t, "worker")
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Publish(deploy.RegisterSubject("other"), nil)
	_ = w.Flush()
	if err := w.LastError(); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("worker.creds registering as another name: %v, want a permissions violation", err)
	}
}

// TestClientDataGrants: --client NAME --data SUBJECTS grants that client
// alone those subjects, and the authority file records them.
func TestClientDataGrants(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Clients: []string{"alice", "bob"}, Data: map[string][]string{"alice": {"sensors.>"}}})
	for user, allowed := range map[string]bool{"alice": true, "bob": false} {
		nc, err := ss.connect(t, user)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.Publish("sensors.t1", []byte("1"))
		_ = nc.Flush()
		if err := nc.LastError(); allowed != (err == nil) {
			t.Errorf("%s publishing sensors.t1: %v, want allowed %v", user, err, allowed)
		}
	}
	a, err := security.LoadAuthority(ss.s.Authority)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Access("alice"); !got.Restricted || len(got.Data) != 1 || got.Data[0] != "sensors.>" {
		t.Errorf("alice's access %+v", got)
	}
	if got := a.Access("bob"); !got.Restricted || len(got.Data) != 0 {
		t.Errorf("bob's access %+v", got)
	}
	if err := os.Chmod(ss.s.Authority, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := security.LoadAuthority(ss.s.Authority); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("a world-readable authority file: %v", err)
	}
	if _, err := security.Generate(t.TempDir(), security.SetupOptions{Clients: []string{"a"}, Data: map[string][]string{"a": {"tierflow.>"}}}); err == nil {
		t.Error("a grant of tierflow.> was accepted")
	}
}

// TestWorkerCredsCarryNoResults: nats-setup's worker creds (bound or
// shared) may not publish a query's results, any other's may; a worker on
// such creds under a coordinator that mints no data user (no --authority)
// refuses a part holding a sink with the reason instead of sending rows
// the server drops.
func TestWorkerCredsCarryNoResults(t *testing.T) {
	ss := startSetup(t, security.SetupOptions{Workers: []string{"w1"}, SharedWorker: true, Clients: []string{"alice"}, ClientData: []string{"feed.>"}})
	for user, want := range map[string]bool{"w1": false, "worker": false, "coordinator": true, "alice": true} {
		if got := security.MayPublishResults(filepath.Join(ss.s.Dir, user+".creds")); got != want {
			t.Errorf("MayPublishResults(%s.creds) = %v, want %v", user, got, want)
		}
	}
	if !security.MayPublishResults(filepath.Join(t.TempDir(), "missing.creds")) {
		t.Error("a creds file that cannot be read: want true (the server decides)")
	}
	cnc, err := ss.connect(t, "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{Conn: cnc, Heartbeat: 200 * time.Millisecond,
		Exec: cluster.ExecHooks(cnc, "", nil, 1), Placement: coordinator.PlaceRules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Close() })
	wnc, err := ss.connect(t, "w1")
	if err != nil {
		t.Fatal(err)
	}
	inv := devices.Inventory{CPUs: 1}
	w, err := worker.Start(context.Background(), worker.Config{Conn: wnc, Name: "w1", Tier: "edge", Inventory: &inv,
		Exec: cluster.ExecHooks(wnc, "", nil, 1), NoResults: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	anc, err := ss.connect(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	c := coordinator.NewClient(anc)
	c.User, c.Timeout = "alice", 5*time.Second
	dir := t.TempDir()
	src := "CREATE STREAM feed (n INT) FROM NATS 'feed.ticks' FORMAT JSON;\nSELECT n FROM feed;\n"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.Submit(ctx, deploy.Script{Filename: filepath.Join(dir, "q.sql"), Source: src, BaseDir: dir}, "q1", sinks.NewCSV(io.Discard))
	if err == nil || !strings.Contains(err.Error(), "--authority") {
		t.Errorf("a sink part on nats-setup worker creds without a data user: %v, want refused naming --authority", err)
	}
}
