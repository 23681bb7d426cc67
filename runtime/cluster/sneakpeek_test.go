package cluster_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/inference/sched"
)

const sneakpeekQuery = `EXPLAIN ANALYZE (DURATION 2)
SELECT c.label, s.true_label
FROM labelled AS s
CROSS JOIN LATERAL classify(s.image) AS c(label, score)
WITH (LATENCY <= 500 MS);
`

// served runs the labelled stream through classify on an embedded cluster
// whose workers schedule with policy, and returns the rows each variant's
// session ran (by model file), the rows that ended after their deadline,
// and the measured accuracy.
func served(t *testing.T, policy string, ev dataaware.Evidence) (map[string]int64, int64, float64) {
	t.Helper()
	dir := fashionDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cat := filepath.Join(dir, "catalog.yaml")
	c := clustertest.StartEmbedded(t, ctx, cluster.Options{Infra: clustertest.LoadInfra(t, dir), Catalog: cat, Heartbeat: 200 * time.Millisecond,
		Sched: policy, Evidence: ev})
	defer c.Close()
	sc := deploy.Script{Filename: filepath.Join(dir, "sneakpeek.sql"), Source: sneakpeekQuery, BaseDir: dir, Catalog: cat, Nth: 1}
	rep, err := c.ExplainAnalyze(ctx, sc, cluster.AnalyzeOptions{For: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{}
	var late int64
	for _, w := range c.Workers {
		for _, sv := range w.Scheduler().Served() {
			rows[filepath.Base(strings.Split(sv.Key, "@")[0])] += sv.Rows
			late += sv.Late
		}
	}
	acc := -1.0
	for _, ch := range rep.Checks {
		if strings.HasPrefix(ch.What, "accuracy (") {
			acc = ch.Measured
		}
	}
	return rows, late, acc
}

// TestSneakPeekSchedulingOnTheEngine: workers scheduling with sneakpeek
// run the classify batches of one query on the variant each batch's
// estimated classes favour (the mlp-large is the better on shirts,
// dresses, sneakers and ankle boots, the cnn on coats, pullovers and
// T-shirts: the labelled stream holds all of them), every row within its
// LATENCY; maxacc-edf runs every batch on the cnn.
func TestSneakPeekSchedulingOnTheEngine(t *testing.T) {
	dir := fashionDir(t)
	s, err := fashion.LoadTrainSample(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := dataaware.NewKNN(s.Images, s.Labels, 784, fashion.Labels, 5, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, late, acc := served(t, sched.SneakPeekName, ev)
	t.Logf("sneakpeek: rows by variant %v, %d late, accuracy %.2f", rows, late, acc)
	var total int64
	for _, n := range rows {
		total += n
	}
	if total < 100 || len(rows) < 2 || late != 0 {
		t.Fatalf("sneakpeek ran %v (%d late): want batches on more than one variant, none late", rows, late)
	}
	mx, mxLate, mxAcc := served(t, sched.MaxAccEDFName, nil)
	t.Logf("maxacc-edf: rows by variant %v, %d late, accuracy %.2f", mx, mxLate, mxAcc)
	if len(mx) != 1 || mx["cnn.onnx"] == 0 {
		t.Fatalf("maxacc-edf ran %v: want every batch on the cnn", mx)
	}
}
