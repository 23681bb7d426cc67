package inference

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// runPaced runs the fashion logreg model through the executor on the shelf
// images replayed as a stream at 200 rows/s (slices of 10 rows every 50 ms,
// 300 rows) and returns the model operator's counters.
func runPaced(t *testing.T, cfg Config) map[string]int64 {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st := &catalog.Stream{Name: "shelf", Source: "file", Format: "arrow", Rate: 200,
		Subject: filepath.Join(fashionDir, "data", "shelf.arrow"),
		Columns: []catalog.Column{{Name: "id", Type: "BIGINT"}, {Name: "image", Type: "TENSOR(FLOAT, 1, 28, 28)"}}}
	scan, err := logical.NewScan(st, nil, "s", nil, logical.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	lat := logical.NewLateralModel(scan, fashionModel(), "classify",
		[]expr.Expr{&expr.Column{Index: 1, Name: "image", DataType: scan.Schema().Field(1).Type}}, "c", labelScore, logical.Pos{})
	cfg.Variants = map[string]string{"classify": "logreg"}
	rt := New(cfg)
	q, err := exec.Build(&logical.Plan{Root: &logical.Sink{Input: lat}}, exec.Options{Allocator: mem, Output: &labels{}, Lateral: rt.Lateral,
		Pace: func(s *catalog.Stream) sources.Pacing { return sources.Pacing{Rate: s.Rate, MaxRows: 300} }})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := dataflow.BuildLocal(q.Graph(), dataflow.Config{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dataflow.RunWorkers(ctx, ws); err != nil {
		t.Fatal(err)
	}
	for _, s := range ws[0].Stats() {
		if s.Attributes["variant"] == "logreg" {
			if s.Counters["model_rows"] != 300 {
				t.Fatalf("model ran %d rows, want 300: %v", s.Counters["model_rows"], s.Counters)
			}
			return s.Counters
		}
	}
	t.Fatal("no model operator in the stats")
	return nil
}

// TestEngineBatchesAdaptively runs a real ONNX model at a slow rate: the
// engine's batcher is adaptive, so it learns the rate and the batch
// latencies, holds a target far below MaxBatch and cuts each arriving slice
// at once; the same run with fixed batching makes every slice wait out
// MaxDelay for a batch of 32 that never fills. A loaded machine moves what
// the batcher learns (a stalled source sends its slices back to back, a
// descheduled model call looks slow: 1 run in 7 missed a bound on CI's 2
// cores), so the test takes the first of three pairs of runs that meets
// every bound; a batcher that does not adapt fails all three.
func TestEngineBatchesAdaptively(t *testing.T) {
	var problems []string
	for run := 1; run <= 3; run++ {
		if problems = adaptiveBatchingRun(t, run); len(problems) == 0 {
			return
		}
		t.Logf("run %d: %s", run, strings.Join(problems, "; "))
	}
	t.Errorf("in 3 runs of 3: %s", strings.Join(problems, "; "))
}

// adaptiveBatchingRun is one pair of runs of TestEngineBatchesAdaptively,
// adaptive and fixed; it returns what missed the bounds.
func adaptiveBatchingRun(t *testing.T, run int) (problems []string) {
	batch := ml.BatchConfig{MaxBatch: 32, MaxDelay: 5 * time.Millisecond}
	ad := runPaced(t, Config{Batch: batch})
	fx := runPaced(t, Config{Batch: batch, FixedBatch: true})
	t.Logf("run %d: adaptive %v", run, ad)
	t.Logf("run %d: fixed    %v", run, fx)
	miss := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// 200 rows/s x 5 ms: a batch fills to 2 rows within the delay, so the
	// adaptive target stays at or below that (the batcher's fill cap).
	if ad["batch_target"] < 1 || ad["batch_target"] > 2 {
		miss("adaptive target %d, want 1..2 (1 + rate x MaxDelay)", ad["batch_target"])
	}
	// Every slice (10 rows) reaches the adaptive target: cut as it comes.
	if ad["cut_size"] < ad["model_batches"]-1 || ad["cut_delay"] > 1 {
		miss("adaptive: %d of %d batches cut on size, %d on delay; want the slices cut as they come", ad["cut_size"], ad["model_batches"], ad["cut_delay"])
	}
	// No slice reaches 32 rows: fixed batches wait out the delay (only
	// slices a stalled source sends back to back can fill one).
	if fx["batch_target"] != 32 || fx["cut_delay"] < 1 || fx["cut_size"]*4 > fx["cut_delay"] {
		miss("fixed: target %d, %d of %d cut on size, %d on delay; want every slice to wait for the delay", fx["batch_target"], fx["cut_size"], fx["model_batches"], fx["cut_delay"])
	}
	// Every fixed batch waited at least MaxDelay; the adaptive ones hardly.
	if min := fx["cut_delay"] * batch.MaxDelay.Microseconds(); fx["queue_wait_us"] < min {
		miss("fixed waited %d us in all, below %d", fx["queue_wait_us"], min)
	}
	if ad["queue_wait_us"]*2 > fx["queue_wait_us"] {
		miss("adaptive waited %d us in all, fixed %d: no gain", ad["queue_wait_us"], fx["queue_wait_us"])
	}
	if ad["model_batch_max"] > 32 || fx["model_batch_max"] > 32 {
		// Not the load's: MaxBatch holds on any machine.
		t.Errorf("batches above MaxBatch: %d, %d", ad["model_batch_max"], fx["model_batch_max"])
	}
	return problems
}
