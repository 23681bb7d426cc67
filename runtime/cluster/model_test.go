package cluster_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
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
// CPU over labelled Fashion-MNIST images) on the embedded three-tier
// cluster: images leave the edge over NATS to the model in the cloud. The
// predictions must equal a one-process run's.
func TestEmbeddedModel(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("no ONNX Runtime library (run scripts/setup.sh): %v", err)
	}
	dir, err := filepath.Abs("../../examples/fashion")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "classify.sql"))
	if err != nil {
		t.Fatal(err)
	}
	script := deploy.Script{Filename: filepath.Join(dir, "classify.sql"), Source: string(src), BaseDir: dir}

	var want bytes.Buffer
	q, _, err := script.Build(nil, exec.Options{Output: sinks.NewCSV(&want), Lateral: inference.New(inference.Config{}).Lateral})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}

	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: cluster.DefaultInfra(), Heartbeat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got bytes.Buffer
	out := sinks.NewCSV(&got)
	info, err := c.Run(ctx, script, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.SameRows(got.String(), want.String()); err != nil {
		t.Fatal(err)
	}
	tb := info.TierBytes()
	if tb["edge->cloud"] < 1<<20 {
		t.Fatalf("images should cross from the edge to the model in the cloud: %v", tb)
	}
	t.Logf("%d predictions, bytes between tiers %v, %s; %s", info.ResultRows, tb, info.Ended.Sub(info.Submitted), info.Planner)
}

// TestOptimizerPlacesModel: with the fashion catalog's profiles and
// infrastructure, the coordinator places the model call by the optimizer
// (cheapest variant meeting ACCURACY >= 89: mlp-large), and the workers run
// that variant: the predictions equal a one-process run of mlp-large.
func TestOptimizerPlacesModel(t *testing.T) {
	if _, err := ortlib.Find(""); err != nil {
		t.Skipf("no ONNX Runtime library (run scripts/setup.sh): %v", err)
	}
	dir, err := filepath.Abs("../../examples/fashion")
	if err != nil {
		t.Fatal(err)
	}
	src := `SELECT s.id, c.label FROM labelled AS s CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WITH (ACCURACY >= 89, THROUGHPUT >= 100 PER SECOND);`
	script := deploy.Script{Filename: filepath.Join(dir, "optimized.sql"), Source: src, BaseDir: dir, Catalog: filepath.Join(dir, "catalog.yaml")}
	var want bytes.Buffer
	q, _, err := script.Build(nil, exec.Options{Output: sinks.NewCSV(&want),
		Lateral: inference.New(inference.Config{Variants: map[string]string{"classify": "mlp-large"}}).Lateral})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := q.Run(ctx); err != nil {
		t.Fatal(err)
	}
	inf, err := infra.LoadFile(filepath.Join(dir, "infra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: filepath.Join(dir, "catalog.yaml"), Heartbeat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got bytes.Buffer
	out := sinks.NewCSV(&got)
	info, err := c.Run(ctx, script, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.Planner, "optimizer") {
		t.Fatalf("placed by %q, want the optimizer", info.Planner)
	}
	if err := clustertest.SameRows(got.String(), want.String()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; workers %v; tier bytes %v", info.Planner, info.Workers, info.TierBytes())
}
