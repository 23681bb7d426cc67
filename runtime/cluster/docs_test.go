package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tierflow/tierflow/runtime/security"
)

// TestDeployDocConfigs parses the server configurations docs/deploy.md
// shows, with a setup tierflow nats-setup generated where they expect it
// (/etc/nats/secrets), so the page cannot drift from what nats-server and
// nats-setup do: every server trusts the operator, serves TLS, and the cloud
// servers run JetStream.
func TestDeployDocConfigs(t *testing.T) {
	files, err := filepath.Glob("../../docs/deploy/*.conf")
	if err != nil || len(files) < 5 {
		t.Fatalf("configs: %v %v", files, err)
	}
	etc := filepath.Join(t.TempDir(), "etc", "nats")
	s, err := security.Generate(filepath.Join(etc, "secrets"), security.SetupOptions{JetStream: true,
		TLSHosts: []string{"cloud-1", "cloud-2", "cloud-3", "hub-l1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		conf := strings.ReplaceAll(strings.ReplaceAll(string(b), "/etc/nats/", etc+"/"), "TIERFLOW_ACCOUNT", s.Account)
		path := filepath.Join(etc, filepath.Base(f))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := server.ProcessConfigFile(path)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if o.MaxPayload != 8<<20 {
			t.Errorf("%s: max_payload %d, want 8MB", f, o.MaxPayload)
		}
		clustered, leaf := o.Cluster.Port != 0, len(o.LeafNode.Remotes) > 0
		if !clustered && !leaf {
			t.Errorf("%s: neither clustered nor a leaf node", f)
		}
		if clustered && (!o.JetStream || o.Cluster.TLSConfig == nil) {
			t.Errorf("%s: a cloud server without JetStream or route TLS", f)
		}
		for _, r := range o.LeafNode.Remotes {
			if r.Credentials == "" || r.TLSConfig == nil {
				t.Errorf("%s: a leaf remote without credentials or TLS", f)
			}
		}
		if o.Host != "127.0.0.1" && (len(o.TrustedOperators) == 0 || o.TLSConfig == nil) {
			t.Errorf("%s: listens beyond loopback without the operator's accounts and TLS", f)
		}
	}
}
