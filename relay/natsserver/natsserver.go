// Package natsserver starts a NATS server inside the process (the default of
// embedded mode and of every NATS test: random port, no Docker) or connects
// to an external one by URL. It owns nothing of the relay protocol and must
// not import runtime or cmd.
package natsserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrStart is wrapped by every failure to start an embedded server.
var ErrStart = errors.New("nats: embedded server did not start")

// Options configure an embedded server. The zero value is a plain server on
// 127.0.0.1 at a random port.
type Options struct {
	Host string // default 127.0.0.1
	Port int    // 0 means random (the server's -1)
	// JetStream enables JetStream with its store in StoreDir, which must be set.
	JetStream bool
	StoreDir  string
	// MaxPayload is the largest message the server accepts. Default
	// DefaultMaxPayload; the relay chunks anything larger.
	MaxPayload int32
	// Name is the server name (JetStream wants a stable one per store).
	Name string
	// Configure, if set, edits the server options last: clustering, leaf
	// nodes and accounts are spelled in nats-server's own terms.
	Configure func(*server.Options)
	// ReadyTimeout bounds the wait for the server to accept clients (default 10s).
	ReadyTimeout time.Duration
	// ConfigFile is a nats-server configuration file (authorization,
	// accounts or operator, TLS, cluster routes, leaf nodes, JetStream): the
	// server runs as it says, with Host and Port (-1: random) overriding
	// its listen address when set, and the fields above added where it is
	// silent.
	ConfigFile string
}

// DefaultMaxPayload is the embedded server's largest message: 8 MiB, the
// most NATS recommends, so typical Arrow batches (up to a few MB) cross in
// one message instead of being chunked at nats-server's own 1 MiB default.
const DefaultMaxPayload = 8 << 20

// Server is a running embedded server.
type Server struct {
	srv *server.Server
	// config: started from a configuration file (what Reload reads again).
	config *Options
}

// Start starts an embedded server and waits until it accepts clients.
func Start(o Options) (*Server, error) {
	if o.ConfigFile != "" {
		return startConfig(o)
	}
	so := &server.Options{
		Host:                  o.Host,
		Port:                  o.Port,
		ServerName:            o.Name,
		NoLog:                 true,
		NoSigs:                true,
		MaxPayload:            o.MaxPayload,
		DisableShortFirstPing: true,
	}
	if so.Host == "" {
		so.Host = "127.0.0.1"
	}
	if so.Port == 0 {
		so.Port = server.RANDOM_PORT
	}
	if so.MaxPayload == 0 {
		so.MaxPayload = DefaultMaxPayload
	}
	return start(o, so)
}

// startConfig starts a server from o.ConfigFile.
func startConfig(o Options) (*Server, error) {
	so, err := configOptions(o)
	if err != nil {
		return nil, err
	}
	s, err := start(Options{Configure: o.Configure, ReadyTimeout: o.ReadyTimeout}, so)
	if err != nil {
		return nil, err
	}
	s.config = &o
	return s, nil
}

// Reload reads the server's configuration file again and applies what
// changed (nats-server's own reload): an account JWT re-signed with a
// revocation (tierflow nats-setup revoke) disconnects the revoked user and
// refuses it from then on. A server started without a file has nothing
// to reload.
func (s *Server) Reload() error {
	if s.config == nil {
		return errors.New("nats: the embedded server was not started from a configuration file")
	}
	so, err := configOptions(*s.config)
	if err != nil {
		return err
	}
	if s.config.Configure != nil {
		s.config.Configure(so)
	}
	// A random port (-1) stays the one the server took.
	if so.Port == server.RANDOM_PORT || so.Port == 0 {
		so.Port = s.srv.Addr().(*net.TCPAddr).Port
	}
	if err := s.srv.ReloadOptions(so); err != nil {
		return fmt.Errorf("nats: reload %s: %w", s.config.ConfigFile, err)
	}
	return nil
}

// configOptions are the server options of o.ConfigFile with o's overrides.
func configOptions(o Options) (*server.Options, error) {
	so, err := server.ProcessConfigFile(o.ConfigFile)
	if err != nil {
		// nats-server reports config errors as file:line:col.
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	so.NoLog, so.NoSigs, so.DisableShortFirstPing = true, true, true
	if o.Host != "" {
		so.Host = o.Host
	}
	if o.Port != 0 {
		so.Port = o.Port
	}
	if o.Name != "" {
		so.ServerName = o.Name
	}
	if so.MaxPayload == 0 {
		so.MaxPayload = o.MaxPayload
		if so.MaxPayload == 0 {
			so.MaxPayload = DefaultMaxPayload
		}
	}
	so.JetStream = so.JetStream || o.JetStream
	if so.JetStream && so.StoreDir == "" {
		so.StoreDir = o.StoreDir
	}
	if so.JetStream && so.StoreDir == "" {
		return nil, fmt.Errorf("%w: %s enables JetStream without a store_dir", ErrStart, o.ConfigFile)
	}
	return so, nil
}

func start(o Options, so *server.Options) (*Server, error) {
	if o.JetStream {
		if o.StoreDir == "" {
			return nil, fmt.Errorf("%w: JetStream needs a store directory", ErrStart)
		}
		so.JetStream = true
		so.StoreDir = o.StoreDir
	}
	if o.Configure != nil {
		o.Configure(so)
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	go srv.Start()
	wait := o.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return nil, fmt.Errorf("%w: not ready for connections after %s", ErrStart, wait)
	}
	return &Server{srv: srv}, nil
}

// ClientURL is the URL clients connect to, with the port the server picked.
// A server listening on every interface (0.0.0.0, ::) is reached on
// loopback, the name its TLS certificate (tierflow nats-setup) always holds.
func (s *Server) ClientURL() string {
	u := s.srv.ClientURL()
	for _, any := range []string{"//0.0.0.0:", "//[::]:"} {
		u = strings.Replace(u, any, "//127.0.0.1:", 1)
	}
	return u
}

// Connect opens a client connection to the server.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	return Connect(s.ClientURL(), opts...)
}

// NATS is the underlying server, for what this package does not wrap.
func (s *Server) NATS() *server.Server { return s.srv }

// Shutdown stops the server and waits until it is down.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// Connect opens a client connection to url (an external server or cluster:
// comma-separated URLs are tried in turn). Connections reconnect forever,
// since a relay outlives a server restart, and try every ReconnectWait
// instead of nats.go's 2s: a running query stalls for as long as the
// server is away, so the sooner every process is back the better, and a
// try is one TCP connect. What is published meanwhile waits in nats.go's
// reconnect buffer (8 MiB).
func Connect(url string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(ReconnectWait), nats.Name("tierflow"), nats.ErrorHandler(asyncError)}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", Redact(url), err)
	}
	return nc, nil
}

// ReconnectWait is how long a connection waits between tries to reconnect.
const ReconnectWait = 250 * time.Millisecond

// asyncErrOut is where asynchronous errors print (a test reads them).
var asyncErrOut io.Writer = os.Stderr

// asyncError is errorHandler of a connection whose identity is unknown.
var asyncError = errorHandler("")

// permissionRE takes the action and subject out of the server's
// "Permissions Violation for Publish to "subj"" (or Subscription).
var permissionRE = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]*)"`)

// errorHandler reports a connection's asynchronous errors on one line
// each, with URLs redacted. A permissions violation says what the server
// refused, on which subject, for which user (id: Auth.Identity): a refused
// publish otherwise fails silently, and nats.go's own line names neither
// the user nor tierflow. Slow consumers are not reported: the sources
// count those drops per query (slow_consumer) and every run reports them,
// so a line per burst on stderr says nothing more.
func errorHandler(id string) nats.ErrHandler {
	return func(nc *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			return
		}
		if errors.Is(err, nats.ErrPermissionViolation) {
			what, subj := "use of", ""
			if m := permissionRE.FindStringSubmatch(err.Error()); m != nil {
				what, subj = strings.ToLower(m[1]), m[2]
			} else if sub != nil {
				subj = sub.Subject
			}
			user := id
			if user == "" {
				user = Anonymous
			}
			fmt.Fprintf(asyncErrOut, "tierflow: NATS refused %s to %s: permissions violation for user %s\n", what, subj, user)
			return
		}
		if sub != nil {
			fmt.Fprintf(asyncErrOut, "nats: %s for subscription on %q\n", Redact(err.Error()), sub.Subject)
			return
		}
		fmt.Fprintf(asyncErrOut, "nats: %s\n", Redact(err.Error()))
	}
}

// ReportErrors is the error handler of a connection acting as id: its
// asynchronous errors print on one line each, a refusal naming id.
func ReportErrors(id string) nats.Option { return nats.ErrorHandler(errorHandler(id)) }
