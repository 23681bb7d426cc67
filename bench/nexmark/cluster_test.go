package nexmark

import (
	"context"
	"testing"
	"time"
)

// The keyed queries answer on a cluster of one worker and of three as on
// the local executor over the unsplit files: the streams' partitions, not
// the workers, decide each row's watermark, and the keyed aggregation's
// instances, exchanged by key over NATS, each close their share of a window
// when the least of their inputs' watermarks passes it.
func TestKeyedQueriesAnswerAlikeOnOneAndThreeWorkers(t *testing.T) {
	dir, parts := partitioned(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clusters := oneAndThreeWorkers(ctx, t)
	for _, q := range Keyed {
		want, err := Run(ctx, dir, q, Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if want.Written == 0 {
			t.Fatalf("%s: no rows locally", q.Name)
		}
		for _, c := range clusters {
			got, err := c.Run(ctx, parts, q, Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if got.Written != want.Written || got.Sum != want.Sum {
				t.Errorf("%s on %d workers: %d rows (hash sum %x), locally %d (%x)", q.Name, c.Workers, got.Written, got.Sum, want.Written, want.Sum)
			}
		}
	}
}

// oneAndThreeWorkers starts an embedded cluster of 1 worker and one of 3,
// closed when t ends. The 2 s heartbeat keeps a worker of a loaded machine
// from being expired: these clusters kill nothing.
func oneAndThreeWorkers(ctx context.Context, t *testing.T) []*Cluster {
	t.Helper()
	var clusters []*Cluster
	for _, n := range []int{1, 3} {
		c, err := StartCluster(ctx, ClusterOptions{Workers: n, Heartbeat: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clusters = append(clusters, c)
	}
	return clusters
}
