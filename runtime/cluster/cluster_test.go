package cluster_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// TestEmbeddedMatchesLocal runs the query across three workers on edge, hub
// and cloud, connected only through NATS, and compares the rows with a
// one-process run; the relay meters must show bytes crossing both tier links.
func TestEmbeddedMatchesLocal(t *testing.T) {
	dir := t.TempDir()
	script := clustertest.WriteData(t, dir, 20000)
	want := clustertest.Local(t, script)

	inf, err := infra.LoadFile(filepath.Join(dir, "infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Allocator: mem, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := len(c.Coordinator.Workers()); n != 3 {
		t.Fatalf("%d workers registered, want 3", n)
	}

	var got bytes.Buffer
	out := sinks.NewCSV(&got)
	info, err := c.Run(ctx, script, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), want); err != nil {
		t.Fatal(err)
	}
	if info.State != deploy.StateFinished {
		t.Fatalf("query state %s, want finished", info.State)
	}
	tb := info.TierBytes()
	if tb["edge->hub"] == 0 || tb["hub->cloud"] == 0 {
		t.Fatalf("bytes between tiers %v: want edge->hub and hub->cloud traffic", tb)
	}
	if tb["edge->hub"] <= tb["hub->cloud"] {
		t.Errorf("edge->hub %d bytes should exceed hub->cloud %d (the aggregate shrinks the data)", tb["edge->hub"], tb["hub->cloud"])
	}
	t.Logf("tier bytes %v, result rows %d", tb, info.ResultRows)
	qs := c.Coordinator.Queries()
	if len(qs) != 1 || qs[0].State != deploy.StateFinished {
		t.Fatalf("SHOW QUERIES: %+v", qs)
	}
}
