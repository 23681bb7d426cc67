package worker

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/natsserver"
)

// relayPool is a real NATS server, a worker's connection to it and a pool
// of owners' relay connections on it that idle for idle.
func relayPool(t *testing.T, idle time.Duration) (*natsserver.Server, *relayConns) {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	base, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(base.Close)
	p := newRelayConns(base, "w1", idle)
	t.Cleanup(p.close)
	return srv, p
}

func acquireOf(t *testing.T, p *relayConns, owner string) (*nats.Conn, func()) {
	t.Helper()
	nc, release, err := p.acquire(owner)
	if err != nil {
		t.Fatal(err)
	}
	return nc, release
}

// One owner's parts share one relay connection, dialled once even when
// they build at the same moment, and kept open between that owner's
// queries; another owner's parts never share it.
func TestRelayConnsOnePerOwner(t *testing.T) {
	srv, p := relayPool(t, time.Hour)
	clients := func() int { return srv.NATS().NumClients() }
	before := clients()
	const parts = 8
	conns := make([]*nats.Conn, parts)
	releases := make([]func(), parts)
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() {
			nc, release, err := p.acquire("alice")
			if err != nil {
				t.Error(err)
				return
			}
			conns[i], releases[i] = nc, release
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, nc := range conns {
		if nc != conns[0] {
			t.Fatalf("alice's part %d got a connection of its own: want her one", i)
		}
	}
	bob, releaseBob := acquireOf(t, p, "bob")
	if bob == conns[0] {
		t.Fatal("bob's part got alice's relay connection")
	}
	if got := clients() - before; got != 2 {
		t.Errorf("%d connections dialled for two owners' parts, want 2", got)
	}
	for _, release := range releases {
		release()
		release() // twice: a part's paths may both release it
	}
	releaseBob()
	if conns[0].IsClosed() || bob.IsClosed() {
		t.Fatal("an owner's relay connection closed as its last part ended: want it kept for the owner's next query")
	}
	again, releaseAgain := acquireOf(t, p, "alice")
	defer releaseAgain()
	if again != conns[0] {
		t.Error("alice's next query dialled again: want her connection, still open")
	}
	if got := clients() - before; got != 2 {
		t.Errorf("%d connections after alice's next part, want 2", got)
	}
}

// An owner's connection closes once idle, a broken one is dialled again for
// the next part (the parts on it keep it), and a closed pool closes what
// it kept and refuses new parts.
func TestRelayConnsIdleBrokenAndClosed(t *testing.T) {
	_, p := relayPool(t, 20*time.Millisecond)
	nc, release := acquireOf(t, p, "alice")
	release()
	deadline := time.Now().Add(10 * time.Second)
	for !nc.IsClosed() || p.owners() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("alice's idle relay connection still open (closed %v, owners %d) 10s after her last part", nc.IsClosed(), p.owners())
		}
		time.Sleep(5 * time.Millisecond) // polling the idle timer's effect
	}

	_, p = relayPool(t, time.Hour)
	broken, releaseBroken := acquireOf(t, p, "alice")
	broken.Close() // as the server closing it (a slow consumer)
	fresh, releaseFresh := acquireOf(t, p, "alice")
	if fresh == broken || fresh.IsClosed() {
		t.Fatal("a part was handed alice's broken relay connection")
	}
	releaseBroken()
	if fresh.IsClosed() {
		t.Fatal("releasing a part of the broken connection closed its replacement")
	}
	releaseFresh()
	p.close()
	if !fresh.IsClosed() {
		t.Error("the closed pool left alice's idle relay connection open")
	}
	if _, _, err := p.acquire("alice"); err == nil {
		t.Error("a closed pool handed out a relay connection")
	}
}
