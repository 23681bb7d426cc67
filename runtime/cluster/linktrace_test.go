package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
)

// TestLinkTraceShapesTheEdgeLinks runs the fixture's query replayed at its
// RATE with every link out of the edge worker shaped to a slow trace: the
// result is the unshaped one, row for row, but the rows are late by the
// time their bytes take to cross (a real NATS link throttled, not a model
// of one), and the sender's wait shows as a stall.
func TestLinkTraceShapesTheEdgeLinks(t *testing.T) {
	t.Parallel() // see "Tests in parallel" (cluster_test.go)
	f := clustertest.NewFixture(t, 200)
	script := strings.Replace(clustertest.Query, "FORMAT CSV;", "FORMAT CSV RATE 100 PER SECOND;", 1)
	script = strings.Replace(script, "GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND)", "GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND)\nWITH (LATENCY <= 100 MS)", 1)
	want, fast := runShaped(t, f, script, nil, nil)
	tr, err := relay.ParseTrace("slow.csv", strings.NewReader("t_s,kbit_s\n0,64\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, slow := runTraced(t, f, script, func(from, to string) relay.Shaper {
		if from == "e1" {
			return relay.TraceShaper{Trace: tr, Start: start}
		}
		return nil
	})
	if got != want {
		t.Fatalf("shaped result differs:\n%s\nwant:\n%s", got, want)
	}
	t.Logf("unshaped p50 %.1f ms, shaped p50 %.1f ms, elapsed %.2fs vs %.2fs", fast.LatencyMs.P50, slow.LatencyMs.P50, fast.ElapsedS, slow.ElapsedS)
	if slow.LatencyMs.P50 < fast.LatencyMs.P50+50 {
		t.Fatalf("shaped to 64 kbit/s, p50 latency %.1f ms against %.1f ms unshaped", slow.LatencyMs.P50, fast.LatencyMs.P50)
	}
}
