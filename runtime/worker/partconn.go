package worker

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/natsserver"
)

// openRelayConn opens a connection for query parts' relay links (and, on a
// cluster without data users, their results), as the worker: the same
// servers, credentials and TLS as the worker's connection (base), but not
// its socket.
//
// Why not the worker's connection: a NATS connection is one ordered byte
// stream each way, so everything written on it waits behind what was
// written before it, and a flush (which each link's open needs, so that
// the peer's first frame finds the subscription) waits behind all of it.
// With every query's relay frames on the worker's one connection, a small
// query's deployment - its link opens, its status, the coordinator's
// control messages - queued behind a large query's frames: 0.3-0.9 s of a
// small query's latency beside a cross join was that queue (#25). With a
// connection per query owner (relayConns), one user's frames delay only
// that user's own messages: the server reads each connection on its own,
// and the worker's connection carries control alone.
func openRelayConn(base *nats.Conn, name string) (*nats.Conn, error) {
	o := base.Opts
	o.Name = name
	// The worker's connection's hooks are the worker's: this one reports
	// its errors through the same handler and nothing else.
	o.ClosedCB, o.DisconnectedCB, o.DisconnectedErrCB, o.ReconnectedCB, o.DiscoveredServersCB, o.LameDuckModeHandler, o.ConnectedCB = nil, nil, nil, nil, nil, nil, nil
	nc, err := o.Connect()
	if err != nil {
		return nil, fmt.Errorf("the query part's relay connection: %w", err)
	}
	return nc, nil
}

// relayConnIdle is how long a worker keeps an owner's relay connection
// after the owner's last part on it ended: a user who submits again
// within it (a dashboard's query every few seconds) finds it open.
const relayConnIdle = time.Minute

// relayConns keeps one relay connection per query owner on a worker,
// shared by that owner's parts and closed once none has used it for
// relayConnIdle.
//
// Why not one per part: dialling it was most of a small query's part
// build beside an abusive query (#25, traced on workers of one processor:
// the TCP connect and the handshake's two reads, 32-58% of every build's
// time, each a wake-up behind whatever held the processor, against 0.1-0.2
// ms of CPU). Why not one for the worker: a user's frames would then delay
// every other user's (openRelayConn). Per owner keeps that isolation - one
// user's queries wait only behind that user's own frames - and a user's
// next query finds its connection open. The connection is the worker's
// (its creds), as the per-part one was: sharing it among one owner's parts
// gives no part any authority it did not have; a part's data (streams,
// sinks, results on a secure cluster) keeps its own data user (dataConn).
type relayConns struct {
	base   *nats.Conn
	worker string
	idle   time.Duration

	mu      sync.Mutex
	byOwner map[string]*ownerConn
	closed  bool
}

// ownerConn is one owner's relay connection: dialled by the first part
// that needed it (ready closes then), used by parts of them.
type ownerConn struct {
	ready  chan struct{}
	dialed bool
	nc     *nats.Conn
	err    error
	parts  int
	timer  *time.Timer // closes the connection when idle
}

func newRelayConns(base *nats.Conn, worker string, idle time.Duration) *relayConns {
	return &relayConns{base: base, worker: worker, idle: idle, byOwner: map[string]*ownerConn{}}
}

// acquire is owner's relay connection, dialled if it has none open, and
// the function that releases it when the part is done with it (call it
// once, after the part's transport closed).
func (p *relayConns) acquire(owner string) (*nats.Conn, func(), error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("worker %s is closing: no relay connection for a new part", p.worker)
	}
	oc := p.byOwner[owner]
	if oc != nil && oc.dialed && (oc.err != nil || oc.nc.IsClosed()) {
		// A broken connection (the server closed it: a slow consumer, a
		// restart) is left to the parts still on it; the next part dials.
		delete(p.byOwner, owner)
		oc = nil
	}
	dial := oc == nil
	if dial {
		oc = &ownerConn{ready: make(chan struct{})}
		p.byOwner[owner] = oc
	}
	oc.parts++
	if oc.timer != nil {
		oc.timer.Stop()
		oc.timer = nil
	}
	p.mu.Unlock()
	if dial {
		// Dialled outside the lock: another owner's part never waits for
		// this handshake.
		nc, err := openRelayConn(p.base, RelayConnPrefix+owner+"-"+p.worker)
		p.mu.Lock()
		oc.nc, oc.err, oc.dialed = nc, err, true
		p.mu.Unlock()
		close(oc.ready)
	}
	<-oc.ready
	var once sync.Once
	release := func() { once.Do(func() { p.release(owner, oc) }) }
	if oc.err != nil {
		release()
		return nil, nil, oc.err
	}
	return oc.nc, release, nil
}

// release ends one part's use of oc: the last one leaves it open for
// p.idle, unless it is no longer the owner's (broken, replaced) or the
// worker is closing.
func (p *relayConns) release(owner string, oc *ownerConn) {
	p.mu.Lock()
	oc.parts--
	if oc.parts > 0 || oc.nc == nil {
		p.mu.Unlock()
		return
	}
	if p.closed || p.byOwner[owner] != oc || oc.nc.IsClosed() {
		if p.byOwner[owner] == oc {
			delete(p.byOwner, owner)
		}
		p.mu.Unlock()
		oc.nc.Close()
		return
	}
	oc.timer = time.AfterFunc(p.idle, func() {
		p.mu.Lock()
		idle := oc.parts == 0 && p.byOwner[owner] == oc
		if idle {
			delete(p.byOwner, owner)
		}
		p.mu.Unlock()
		if idle {
			oc.nc.Close()
		}
	})
	p.mu.Unlock()
}

// close closes every connection no part uses; one still in use closes as
// its last part releases it. Parts acquire none after.
func (p *relayConns) close() {
	p.mu.Lock()
	p.closed = true
	var idle []*nats.Conn
	for owner, oc := range p.byOwner {
		if oc.parts == 0 && oc.nc != nil {
			if oc.timer != nil {
				oc.timer.Stop()
			}
			idle = append(idle, oc.nc)
			delete(p.byOwner, owner)
		}
	}
	p.mu.Unlock()
	for _, nc := range idle {
		nc.Close()
	}
}

// owners is how many owners have a relay connection open or being dialled
// (tests).
func (p *relayConns) owners() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byOwner)
}

// relayOwner is the name a part's relay connection is kept under: its
// query's owner (the coordinator sets it, natsserver.Anonymous when the
// client named none; an older coordinator's request may carry none).
func relayOwner(owner string) string {
	if owner == "" {
		return natsserver.Anonymous
	}
	return owner
}

// RelayConnPrefix begins the name of every relay connection a worker dials
// (RelayConnPrefix + owner + "-" + worker): its frames are the batches and
// progress crossing between workers, told apart by it in the server's
// connection list from the control plane's messages.
const RelayConnPrefix = "tierflow-relay-"
