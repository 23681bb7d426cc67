package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/coordinator"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

const sharedDecls = `CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28)) OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (cnn FROM '%[1]s/models/cnn.onnx');
CREATE STREAM frames (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '%[1]s/data/shelf.arrow' FORMAT ARROW RATE 100 PER SECOND;
CREATE TABLE archive (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE '%[1]s/data/shelf.arrow' FORMAT ARROW;
`

// A real-time and a best-effort query calling one model on one deepquery
// worker: both run on the worker's one session of the variant, the
// best-effort one's batches (cut into parts around the real-time frames)
// still count every row of its table, and each query's info carries its
// priority, its share of the worker and, for the best-effort one, its
// progress over the table's rows.
func TestRealtimeAndBestEffortShareOneWorker(t *testing.T) {
	inf, err := infra.Parse("one.yaml", []byte("tiers: [{name: edge}]\nworker_types: [{name: x2, vcpus: 2, price: 1}]\nworkers: [{name: edge, type: x2, tier: edge, count: 1}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: inf, Placement: coordinator.PlaceRules, Sched: sched.DeepQueryName})
	defer c.Close()
	fashion, err := filepath.Abs("../../examples/fashion")
	if err != nil {
		t.Fatal(err)
	}
	decls := fmt.Sprintf(sharedDecls, fashion)
	script := func(q string) deploy.Script {
		return deploy.Script{Filename: filepath.Join(t.TempDir(), "q.sql"), Source: decls + q, Replay: true}
	}
	// The real-time query reads the whole stream (20 s at 100 frames/s) and
	// is stopped once the best-effort one is done, so the two overlap
	// however long the second takes to deploy on a loaded machine.
	rt := script("SELECT f.id, c.label FROM frames AS f CROSS JOIN LATERAL classify(f.image) AS c(label, score)\nWITH (PRIORITY REALTIME, LATENCY <= 500 MS);")
	be := script("SELECT count(*) AS n FROM archive AS a CROSS JOIN LATERAL classify(a.image) AS c(label, score)\nWITH (PRIORITY BEST_EFFORT);")
	s := c.Workers[0].Scheduler()

	// Who uses the sessions, watched until both queries are done.
	var mu sync.Mutex
	maxSessions, maxUsers := 0, 0
	watch, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watch.Err() == nil {
			mu.Lock()
			maxSessions = max(maxSessions, s.Sessions())
			maxUsers = max(maxUsers, usersOfAny(s))
			mu.Unlock()
			time.Sleep(time.Millisecond) // a sampling period, not a synchronisation
		}
	}()

	type result struct {
		info deploy.QueryInfo
		err  error
	}
	rtDone := make(chan result, 1)
	go func() {
		info, err := c.Client().Submit(ctx, rt, "rt", discardWriter{})
		rtDone <- result{info, err}
	}()
	// The best-effort query starts while the real-time one runs.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if q, ok := c.Coordinator.Query("rt"); ok && q.State == deploy.StateRunning && len(s.Stats()) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the real-time query did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var out bytes.Buffer
	w := sinks.NewCSV(&out)
	beInfo, err := c.Client().Submit(ctx, be, "be", w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Client().Stop(ctx, "rt", false); err != nil {
		t.Fatal(err)
	}
	r := <-rtDone
	stopWatch()
	<-watched
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := strings.TrimSpace(out.String()); got != "n\n2000" {
		t.Fatalf("best-effort count: %q, want every one of the 2000 rows", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxSessions != 1 || maxUsers != 2 {
		t.Fatalf("sessions %d, users of one session %d: want one session both queries use", maxSessions, maxUsers)
	}
	if r.info.Priority != "REALTIME" || beInfo.Priority != "BEST_EFFORT" {
		t.Fatalf("priorities %q and %q", r.info.Priority, beInfo.Priority)
	}
	if st, ok := r.info.Sched["edge"]; !ok || st.Rows == 0 || st.Priority != "REALTIME" {
		t.Fatalf("real-time query's scheduler stats on edge: %+v", r.info.Sched)
	}
	if beInfo.InputRows != 2000 || beInfo.Progress != 1 || beInfo.Sched["edge"].Rows != 2000 {
		t.Fatalf("best-effort input rows %d, progress %g, model rows %d: want 2000, 1, 2000", beInfo.InputRows, beInfo.Progress, beInfo.Sched["edge"].Rows)
	}
}

// usersOfAny is the most queries any one session of s has.
func usersOfAny(s *sched.Scheduler) int {
	n := 0
	for _, k := range s.Keys() {
		n = max(n, len(s.Users(k)))
	}
	return n
}

type discardWriter = discard
