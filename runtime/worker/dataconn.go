package worker

import (
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/security"
)

// dataConn is a query part's own NATS connection for its streams and
// sinks: the data user the coordinator minted for the part
// (deploy.Access.JWT) on this worker's data key, which the server allows
// the query owner's data subjects and nothing else. It is opened when the
// part first needs NATS and closed when the part ends. The worker's own
// connection (control, relay, results) never carries a query's data.
type dataConn struct {
	base  *nats.Conn // the worker's: servers and TLS to dial the same way
	jwt   string
	key   nkeys.KeyPair
	name  string
	inbox string

	mu     sync.Mutex
	nc     *nats.Conn
	err    error
	closed bool
}

func newDataConn(base *nats.Conn, jwt string, key nkeys.KeyPair, query, worker string) *dataConn {
	return &dataConn{base: base, jwt: jwt, key: key, name: "tierflow-data-" + query + "-" + worker,
		inbox: security.DataInbox(query, worker)}
}

// conn opens the connection once.
func (d *dataConn) conn() (*nats.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("the query's data connection is closed")
	}
	if d.nc != nil || d.err != nil {
		return d.nc, d.err
	}
	bo := d.base.Opts
	servers := bo.Servers
	if len(servers) == 0 {
		servers = []string{bo.Url}
	}
	clean := make([]string, 0, len(servers))
	for _, s := range servers {
		// Credentials in a URL are the worker's: the data user has its own.
		if u, err := url.Parse(s); err == nil {
			u.User = nil
			s = u.String()
		}
		clean = append(clean, s)
	}
	opts := []nats.Option{
		nats.UserJWT(func() (string, error) { return d.jwt, nil }, func(nonce []byte) ([]byte, error) { return d.key.Sign(nonce) }),
		nats.CustomInboxPrefix(d.inbox), nats.Name(d.name), natsserver.ReportErrors(d.name),
		func(o *nats.Options) error {
			o.Secure, o.TLSCertCB, o.RootCAsCB, o.TLSHandshakeFirst = bo.Secure, bo.TLSCertCB, bo.RootCAsCB, bo.TLSHandshakeFirst
			if bo.TLSConfig != nil {
				o.TLSConfig = bo.TLSConfig.Clone()
			}
			o.Dialer, o.CustomDialer, o.InProcessServer, o.ProxyPath = bo.Dialer, bo.CustomDialer, bo.InProcessServer, bo.ProxyPath
			o.NoRandomize = bo.NoRandomize
			return nil
		},
	}
	d.nc, d.err = natsserver.Connect(strings.Join(clean, ","), opts...)
	if d.err != nil {
		d.err = fmt.Errorf("the query's data connection (its owner's data user): %w", d.err)
	}
	return d.nc, d.err
}

// close drains nothing: the part's sinks flushed before it ends.
func (d *dataConn) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.nc != nil {
		d.nc.Close()
	}
}
