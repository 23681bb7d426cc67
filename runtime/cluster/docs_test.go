package cluster_test

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestDeployDocConfigs parses the server configurations docs/deploy.md
// shows, so the page cannot drift from what nats-server accepts.
func TestDeployDocConfigs(t *testing.T) {
	files, err := filepath.Glob("../../docs/deploy/*.conf")
	if err != nil || len(files) < 3 {
		t.Fatalf("configs: %v %v", files, err)
	}
	for _, f := range files {
		o, err := server.ProcessConfigFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if o.MaxPayload != 8<<20 {
			t.Errorf("%s: max_payload %d, want 8MB", f, o.MaxPayload)
		}
		if o.Cluster.Port == 0 && len(o.LeafNode.Remotes) == 0 {
			t.Errorf("%s: neither clustered nor a leaf node", f)
		}
	}
}
