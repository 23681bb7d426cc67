package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestResultRowOverMaxPayload: on a server that takes 4 KB messages, a
// result row of 20 KB reaches the client whole (chunked by the sink's
// worker, put together by the client) instead of failing the query.
func TestResultRowOverMaxPayload(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	dir := t.TempDir()
	big := strings.Repeat("x", 20000)
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte("k,s\n1,a\n2,"+big+"\n3,b\n"), 0o644)
	src := "CREATE STREAM t (k BIGINT, s VARCHAR) FROM FILE 't.csv' FORMAT CSV;\nSELECT k, s FROM t WHERE k > 0;\n"
	os.WriteFile(filepath.Join(dir, "infra.yaml"), []byte(clustertest.Infra), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), NATS: srv.ClientURL(), Placement: coordinator.PlaceRules})
	defer c.Close()
	script := deploy.Script{Filename: filepath.Join(dir, "q.sql"), Source: src, BaseDir: dir, OnError: "skip"}
	got, _ := clustertest.RunCSV(t, ctx, c.Run, script)
	if want := "k,s\n1,a\n2," + big + "\n3,b\n"; got != want {
		t.Fatalf("got %.100q (%d bytes), want the 20 KB row whole", got, len(got))
	}
}
