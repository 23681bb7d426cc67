package cluster_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
)

// BenchmarkEmbeddedVsLocal runs the end-to-end query (filter, join, keyed
// TUMBLE count) over 100,000 rows alternately in one process (operators/exec,
// the baseline) and on the embedded three-tier cluster (every hop through
// NATS), and reports both rates and their ratio.
func BenchmarkEmbeddedVsLocal(b *testing.B) {
	const rows = 100000
	dir := b.TempDir()
	script := clustertest.WriteData(b, dir, rows)
	inf, err := infra.LoadFile(filepath.Join(dir, "infra.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Placement: coordinator.PlaceRules})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var local, embedded time.Duration
	var tierBytes uint64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		q, _, err := script.Build(nil, exec.Options{Output: discard{}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.Run(ctx); err != nil {
			b.Fatal(err)
		}
		local += time.Since(start)

		start = time.Now()
		info, err := c.Run(ctx, script, discard{})
		if err != nil {
			b.Fatal(err)
		}
		embedded += time.Since(start)
		for _, v := range info.TierBytes() {
			tierBytes += v
		}
	}
	n := float64(b.N * rows)
	b.ReportMetric(n/local.Seconds(), "local_rows/s")
	b.ReportMetric(n/embedded.Seconds(), "embedded_rows/s")
	b.ReportMetric(local.Seconds()/embedded.Seconds(), "ratio")
	b.ReportMetric(float64(tierBytes)/float64(b.N), "tier_bytes/op")
}
