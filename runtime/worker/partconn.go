package worker

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// openPartConn opens a query part's own connection for its relay links
// (and, on a cluster without data users, its results), as the worker: the
// same servers, credentials and TLS as the worker's connection (base), but
// not its socket.
//
// Why not the worker's connection: a NATS connection is one ordered byte
// stream each way, so everything written on it waits behind what was
// written before it, and a flush (which each link's open needs, so that
// the peer's first frame finds the subscription) waits behind all of it.
// With every query's relay frames on the worker's one connection, a small
// query's deployment - its link opens, its status, the coordinator's
// control messages - queued behind a large query's frames: 0.3-0.9 s of a
// small query's latency beside a cross join was that queue (#25). With one
// connection per part, a query's frames delay only that query's own
// messages: the server reads each connection on its own, and the worker's
// connection carries control alone. One flush per part (batching the link
// opens) would still have waited behind the other queries' frames.
//
// Cost: one connection's handshake per part (local: under a millisecond;
// with TLS, a handshake) and a socket while the part runs.
func openPartConn(base *nats.Conn, name string) (*nats.Conn, error) {
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
