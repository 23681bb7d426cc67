package slo_test

import (
	"context"
	"math"
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
//
// It is judged by #30's rule, not a ratio tuned to one machine's load:
// adaptive misses no more than max(2%, static-smallest's misses) — the
// smallest run here, in the same process under the same load, so a busy
// machine's stalls count against both alike — plus the frames the cliff
// itself costs (cliffFrames) and three standard deviations of the
// difference of two miss counts.
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
		Variants: zoo(t), Images: imgs.Floats(), Labels: labels.Data, Env: env}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	results := map[string]*harness.Result{}
	for _, p := range []string{"adaptive", "static-smallest", "static-largest"} {
		cfg.Policy = p
		cfg.Timeline = nil
		if p == "adaptive" {
			cfg.Timeline = func(r harness.TimelineRow) { mu.Lock(); timeline = append(timeline, r); mu.Unlock() }
		}
		r, err := harness.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d requests, %d missed (%.3f), accuracy %.2f, p50 %.1f ms, p99 %.1f ms", p, r.Requests, missed(r), r.SLOMissRate, r.Accuracy, r.P50Ms, r.P99Ms)
		if r.Requests < 2*15*7 {
			t.Fatalf("%s: %d requests in 8 s from 2 clients at 15/s", p, r.Requests)
		}
		results[p] = r
	}
	ad, small, big := results["adaptive"], results["static-smallest"], results["static-largest"]
	cliff := cliffFrames(cfg, 1)
	// The trace binds: the largest misses more than the smallest by more
	// than the cliff and the noise could explain.
	if d, allowed := missed(big)-missed(small), float64(cliff)+noise(big, small); float64(d) <= allowed {
		t.Errorf("static-largest missed %d, static-smallest %d: the trace does not bind (%d more, %.1f allowed by chance and the cliff)", missed(big), missed(small), d, allowed)
	}
	floor := max(int(math.Floor(0.02*float64(ad.Requests))), missed(small))
	if allowed := float64(floor+cliff) + noise(ad, small); float64(missed(ad)) > allowed {
		t.Errorf("adaptive missed %d of %d: more than max(2%%, static-smallest's %d) + the cliff's %d frames + 3 sd (%.1f allowed; static-largest %d)",
			missed(ad), ad.Requests, missed(small), cliff, allowed, missed(big))
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

// missed is a run's count of late, dropped and lost frames.
func missed(r *harness.Result) int { return int(math.Round(r.SLOMissRate * float64(r.Requests))) }

// noise is three standard deviations of the difference of two runs' miss
// counts, each read as a Poisson count (its variance its mean).
func noise(a, b *harness.Result) float64 { return 3 * math.Sqrt(float64(missed(a)+missed(b))) }

// cliffFrames is what drops in a trace cost any policy that reads the link
// from its acks: a frame whose life (sent to deadline, one SLO) spans a
// drop was sized for the old rate, and so may every frame sent before an
// ack from after the drop can return, which is within one more SLO (an ack
// later than that was for a frame already late). Two SLOs of each client's
// frames per drop.
func cliffFrames(cfg harness.Config, drops int) int {
	return drops * cfg.Clients * int(math.Ceil(2*cfg.SLO.Seconds()*cfg.Rate))
}
