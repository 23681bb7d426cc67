package security_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/security"
)

// TestClientCertificates: a server that verifies client certificates (made
// from nats-setup's CA) admits a client with --tls-cert/--tls-key and
// refuses one with only the CA.
func TestClientCertificates(t *testing.T) {
	s, err := security.Generate(filepath.Join(t.TempDir(), "s"), security.SetupOptions{TLSHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(s.Dir, "server-cert.pem"), filepath.Join(s.Dir, "server-key.pem")
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cert, KeyFile: key, CaFile: s.CA, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{Configure: func(o *server.Options) {
		o.TLSConfig, o.TLSVerify, o.TLSTimeout = tc, true, 2
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	connect := func(a natsserver.Auth) error {
		opts, err := a.Options(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		nc, err := srv.Connect(append(opts, nats.MaxReconnects(0), nats.Timeout(2*time.Second))...)
		if err == nil {
			nc.Close()
		}
		return err
	}
	if err := connect(natsserver.Auth{TLSCA: s.CA, TLSCert: cert, TLSKey: key}); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	if err := connect(natsserver.Auth{TLSCA: s.CA}); err == nil {
		t.Fatal("a client without a certificate was admitted")
	}
}
