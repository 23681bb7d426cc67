package slo_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/bench/slo/harness"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// bench/slo/harness's test runs here, in bench/slo's test binary, which
// links the harness anyway: one test binary, one link of the engine, fewer
// in make test (issue #27).

// zoo loads examples/fashion's size family as the bench does.
func zoo(t *testing.T) []harness.Variant {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "fashion")
	cat, err := catalog.LoadFile(filepath.Join(dir, "sizes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []harness.Variant
	for _, v := range cat.Model("classify_sized").Variants {
		sv := harness.Variant{Name: v.Name, Path: filepath.Join(dir, v.File), Side: v.InputSize[0], Accuracy: v.Accuracy / 100}
		for b := 1; b <= 64; b++ {
			x := v.Latency["x2"].BatchMs(b, 90)
			if b > 1 {
				x = max(x, sv.BatchMs[b-2])
			}
			sv.BatchMs = append(sv.BatchMs, x)
		}
		out = append(out, sv)
	}
	return out
}

// TestAdaptiveMeetsTheSLOWhereTheLargestCannot runs the real thing briefly:
// two clients over NATS links that drop from 800 to 300 kbit/s. Full-size
// frames (static-largest) cannot cross 300 kbit/s at 15 a second and miss;
// the adaptive policy sees the drop in the links' ack bandwidth, moves the
// client to a smaller input, and keeps its misses low.
func TestAdaptiveMeetsTheSLOWhereTheLargestCannot(t *testing.T) {
	env, err := onnx.Open("")
	if err != nil {
		t.Skipf("no ONNX Runtime (scripts/setup.sh): %v", err)
	}
	dir := filepath.Join("..", "..", "examples", "fashion", "data")
	imgs, err := modelzoo.ReadIDXFile(filepath.Join(dir, "test-images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	labels, err := modelzoo.ReadIDXFile(filepath.Join(dir, "test-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := relay.ParseTrace("t.csv", strings.NewReader("t_s,kbit_s\n0,800\n4,300\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var timeline []harness.TimelineRow
	cfg := harness.Config{Clients: 2, Workers: 2, SLO: 100 * time.Millisecond, Rate: 15, Trace: tr, Duration: 8 * time.Second,
		Variants: zoo(t), Images: imgs.Floats(), Labels: labels.Data, Env: env,
		Timeline: func(r harness.TimelineRow) { mu.Lock(); timeline = append(timeline, r); mu.Unlock() }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results := map[string]*harness.Result{}
	for _, p := range []string{"adaptive", "static-largest"} {
		cfg.Policy = p
		r, err := harness.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d requests, miss %.3f, accuracy %.2f, p50 %.1f ms, p99 %.1f ms", p, r.Requests, r.SLOMissRate, r.Accuracy, r.P50Ms, r.P99Ms)
		if r.Requests < 2*15*7 {
			t.Fatalf("%s: %d requests in 8 s from 2 clients at 15/s", p, r.Requests)
		}
		results[p] = r
	}
	ad, big := results["adaptive"], results["static-largest"]
	if big.SLOMissRate < 0.10 {
		t.Errorf("static-largest missed %.3f: the trace does not bind", big.SLOMissRate)
	}
	// A cliff from 800 to 300 kbit/s costs the frames in flight when it
	// comes (the estimate needs a few acks to see it); on a shared
	// machine a stall costs a few more. The bench's 30 s runs hold the
	// 2%; this short one holds adaptive well under the largest. A ratio
	// within the run, not a fixed share: beside two busy cores (CI's
	// go test -p 2) adaptive missed 0.121 against the largest's 0.542.
	if ad.SLOMissRate > big.SLOMissRate/4 {
		t.Errorf("adaptive missed %.3f (static-largest %.3f)", ad.SLOMissRate, big.SLOMissRate)
	}
	// The schedule followed the links: frames crossed a 300 kbit/s link
	// smaller, on average, than an 800 kbit/s one.
	mean := func(xs []int) float64 {
		sum := 0
		for _, x := range xs {
			sum += x
		}
		return float64(sum) / float64(max(len(xs), 1))
	}
	var at300, at800 []int
	for _, r := range timeline {
		if r.AtS < 1 {
			continue // the first estimates
		}
		if r.ShapedKbit == 300 {
			at300 = append(at300, r.Side)
		} else {
			at800 = append(at800, r.Side)
		}
	}
	if len(at300) == 0 || len(at800) == 0 || mean(at300) >= mean(at800) {
		t.Errorf("sides at 300 kbit/s %v, at 800 kbit/s %v", at300, at800)
	}
}
