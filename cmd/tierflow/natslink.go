package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/connectors"
)

// natsLink is a command's NATS connection, opened when first needed: to
// --nats URL, or else to a server embedded in this process (JetStream in a
// temporary directory), whose URL is logged so that `tierflow publish` can
// feed it.
type natsLink struct {
	a   *app
	url string
	log io.Writer

	mu  sync.Mutex
	srv *natsserver.Server
	dir string
	nc  *nats.Conn
}

func newNATSLink(a *app) *natsLink { return &natsLink{a: a, url: a.g.nats, log: a.err} }

func (l *natsLink) conn() (*nats.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil {
		return l.nc, nil
	}
	url := l.url
	if url == "" {
		dir, err := os.MkdirTemp("", "tierflow-nats-")
		if err != nil {
			return nil, err
		}
		srv, err := l.a.startEmbeddedNATS(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		l.srv, l.dir, url = srv, dir, srv.ClientURL()
		fmt.Fprintf(l.log, "-- embedded NATS server at %s\n", url)
	}
	nc, err := l.a.connectNATS(url, "tierflow")
	if err != nil {
		return nil, err
	}
	l.nc = nc
	return nc, nil
}

// hooks builds NATS and JetStream streams and sinks for the executor. Sinks
// mark the end of their stream when the query ends, so a downstream
// `tierflow run` of the same subject ends too.
func (l *natsLink) hooks(policy sources.OnError, batch int, maxDelay time.Duration) connectors.Hooks {
	return connectors.Hooks{Conn: l.conn,
		Sources: connectors.SourceConfig{OnError: policy, MaxRows: batch, MaxDelay: maxDelay},
		Sinks:   connectors.SinkConfig{End: true}}
}

func (l *natsLink) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil {
		l.nc.Close()
	}
	if l.srv != nil {
		l.srv.Shutdown()
		os.RemoveAll(l.dir)
	}
}
