package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
)

// EXPLAIN on a cluster prints, after the plan, where each operator's
// instances would run: a stream over three files is three partitions, its
// scan one instance per file spread over the three workers, and the keyed
// window aggregation after it one instance per partition taking the keys
// whose hash falls to it. Nothing is deployed.
func TestExplainShowsPartitionedInstances(t *testing.T) {
	dir := t.TempDir()
	for k := 0; k < 3; k++ {
		rows := "sensor,ts,temperature\n"
		for i := 0; i < 20; i++ {
			rows += fmt.Sprintf("%d,2026-01-01 00:00:%02d,%d\n", i%4, i, 20+i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r-%d.csv", k)), []byte(rows), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := infra.Parse("three.yaml", []byte("tiers:\n  - name: cloud\nworker_types:\n  - name: core\n    vcpus: 1\n    memory_gb: 4\n    price: 1\nworkers:\n  - name: w\n    type: core\n    tier: cloud\n    count: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Heartbeat: 100 * time.Millisecond})
	defer c.Close()
	src := `CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM FILE 'r-*.csv' FORMAT CSV;
EXPLAIN
SELECT sensor, count(*) AS n FROM readings WHERE temperature > 20 GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND);
`
	var out bytes.Buffer
	if err := c.RunScript(ctx, filepath.Join(dir, "explain.sql"), src, cluster.ScriptOptions{Stdout: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for k := 0; k < 3; k++ {
		for _, want := range []string{
			fmt.Sprintf("scan readings  %d         w-%d", k, k+1),
			fmt.Sprintf("partition %d of 3: r-%d.csv", k+1, k),
			fmt.Sprintf("mod 3 is %d", k),
		} {
			if !strings.Contains(text, want) {
				t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
			}
		}
	}
	if n := len(c.Coordinator.Queries()); n != 0 {
		t.Errorf("EXPLAIN deployed %d queries", n)
	}
}
