package cluster_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/ortlib"
)

// TestEmbeddedModel runs a real model (examples/fashion: ONNX Runtime on
// CPU over labelled Fashion-MNIST images) on an embedded three-tier
// cluster whose edge worker cannot run it (its variants are profiled for
// the hub's and cloud's worker type only): images leave the edge over NATS
// to the model on another tier. The predictions must equal a one-process
// run's.
func TestEmbeddedModel(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	dir := fashionDir(t)
	src, err := os.ReadFile(filepath.Join(dir, "classify.sql"))
	if err != nil {
		t.Fatal(err)
	}
	// A model never profiled is estimated on every worker (and free
	// workers put it beside its source); with its most accurate variant
	// (what the one-process run runs) profiled for "local" only, the
	// "camera" at the edge cannot run it.
	sql := strings.Replace(string(src), "cnn.onnx' WITH (accuracy", "cnn.onnx' WITH (latency_ms.local = 0.02, accuracy", 1)
	if sql == string(src) {
		t.Fatal("classify.sql no longer declares the cnn variant WITH (accuracy ...)")
	}
	script := deploy.Script{Filename: filepath.Join(dir, "classify.sql"), Source: sql, BaseDir: dir}
	inf := cluster.DefaultInfra()
	inf.WorkerTypes = append(inf.WorkerTypes, &infra.WorkerType{Name: "camera"})
	inf.Workers[0].Type = "camera"

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := localModel(t, ctx, script, inference.Config{})

	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Heartbeat: 200 * time.Millisecond})
	defer c.Close()
	info := clustertest.RunMatches(t, ctx, c.Run, script, want)
	tb := info.TierBytes()
	if tb["edge->hub"]+tb["edge->cloud"] < 1<<20 {
		t.Fatalf("images should cross from the edge to the model on another tier: %v", tb)
	}
	t.Logf("%d predictions, bytes between tiers %v, %s; %s", info.ResultRows, tb, info.Ended.Sub(info.Submitted), info.Planner)
}

// TestOptimizerPlacesModel: with the fashion catalog's profiles and
// infrastructure, the coordinator places the model call by the optimizer
// (cheapest variant meeting ACCURACY >= 89: mlp-large), and the workers run
// that variant: the predictions equal a one-process run of mlp-large.
func TestOptimizerPlacesModel(t *testing.T) {
	dir := fashionDir(t)
	src := `SELECT s.id, c.label FROM labelled AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WITH (ACCURACY >= 89, THROUGHPUT >= 100 PER SECOND);`
	script := deploy.Script{Filename: filepath.Join(dir, "optimized.sql"), Source: src, BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := localModel(t, ctx, script, inference.Config{Variants: map[string]string{"classify": "mlp-large"}})
	inf := clustertest.LoadInfra(t, dir)
	log := &lockedBuffer{}
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Catalog: filepath.Join(dir, "catalog.yaml"), Heartbeat: 200 * time.Millisecond, ModelLog: log})
	defer c.Close()
	got, info := clustertest.RunCSV(t, ctx, c.Run, script)
	if !strings.HasPrefix(info.Planner, "optimizer") {
		t.Fatalf("placed by %q, want the optimizer", info.Planner)
	}
	// The worker runs the model with the plan's batching: at 100 items/s,
	// the planner's smallest batch, adaptive.
	if !strings.Contains(log.String(), "variant mlp-large") || !strings.Contains(log.String(), "max batch 4, max delay 5ms, adaptive") {
		t.Errorf("model log %q: want mlp-large with the plan's batching (max batch 4, max delay 5ms, adaptive)", log.String())
	}
	if err := clustertest.SameRows(got, want); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; workers %v; tier bytes %v", info.Planner, info.Workers, info.TierBytes())
}

// lockedBuffer is a log the workers write from their goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fashionDir is examples/fashion; a test of its model skips without the
// ONNX Runtime library.
func fashionDir(t *testing.T) string {
	t.Helper()
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("no ONNX Runtime library (run scripts/setup.sh): %v", err)
	}
	dir, err := filepath.Abs("../../examples/fashion")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// localModel runs script in one process with the model calls made as cfg
// says, for the rows a cluster run must equal.
func localModel(t *testing.T, ctx context.Context, script deploy.Script, cfg inference.Config) string {
	t.Helper()
	var want bytes.Buffer
	q, _, err := script.Build(nil, exec.Options{Output: sinks.NewCSV(&want), Lateral: inference.New(cfg).Lateral})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return want.String()
}
