package dataaware_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay/frame"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/dataaware"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/modelzoo"
	"github.com/tierflow/tierflow/runtime/policy"
)

var fashionLabels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

const liveScript = `CREATE STREAM live (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR)
  FROM JETSTREAM 'shelf.live' FORMAT ARROW AT TIER edge RATE 200 PER SECOND;
SELECT id, true_label, c.label
FROM live CROSS JOIN LATERAL classify(image) AS c(label, score)
WITH (ACCURACY >= 85%s);
`

const oneBox = `tiers: [{name: edge, locations: 1}]
worker_types: [{name: x2, vcpus: 2, memory_gb: 4, price: 1}]
workers: [{name: edge-x2, type: x2, tier: edge, count: 1}]
`

type liveRun struct {
	rows    map[int64][2]string // id -> true label, predicted label
	replans []string
	// estimate is the final plan's accuracy (what EXPLAIN ANALYZE holds
	// the measured accuracy against).
	estimate float64
}

// runLive runs the live query on a one-worker embedded cluster while rows
// of the given ids are published to its JetStream subject at about 200 rows
// a second, with the data-aware policy fed by a tap on that subject.
func runLive(t *testing.T, dataAware bool, x []float32, y []uint8, ids []int) liveRun {
	return runLiveWith(t, dataAware, x, y, ids, false)
}

// runLiveWith is runLive; with engine, the coordinator runs the SneakPeek
// policy itself (runtime/policy: its own estimator and tap on the query's
// stream, from the evidence), as `run --replan-data-aware` does.
func runLiveWith(t *testing.T, dataAware bool, x []float32, y []uint8, ids []int, engine bool) liveRun {
	t.Helper()
	dir := t.TempDir()
	infPath := filepath.Join(dir, "infra.yaml")
	if err := os.WriteFile(infPath, []byte(oneBox), 0o644); err != nil {
		t.Fatal(err)
	}
	inf, err := infra.LoadFile(infPath)
	if err != nil {
		t.Fatal(err)
	}
	catPath, err := filepath.Abs(filepath.Join("..", "..", "examples", "fashion", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.LoadFile(catPath)
	if err != nil {
		t.Fatal(err)
	}
	tx, ty := loadIDX(t, "train-sample")
	ix, err := dataaware.NewKNN(tx, ty, 784, fashionLabels, 5, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A window of 200 rows: the mix follows a shift within a second or
	// two at 200 rows a second.
	est, err := dataaware.NewEstimator(ix, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]float64{}
	for _, c := range cat.Model("classify").Variants[0].Classes {
		base[c.Class] = float64(c.Support)
	}
	pol := &dataaware.Policy{Model: "classify", Estimator: est, MinRows: 150, MinAge: time.Second, Drift: 0.15, Base: base}

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	policies := clustertest.Replan(pol)
	if engine {
		policies = policy.With(policy.Defaults(), policy.SneakPeek{Evidence: ix})
	}
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: catPath, Policies: policies})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SHELF", Subjects: []string{"shelf.live"}}); err != nil {
		t.Fatal(err)
	}
	if !engine {
		tap, err := dataaware.TapNATS(nc, "shelf.live", "image", est, "")
		if err != nil {
			t.Fatal(err)
		}
		defer tap.Close()
	}

	var out bytes.Buffer
	var runErr error
	done := make(chan struct{})
	suffix := ""
	if dataAware {
		suffix = " DATA AWARE"
	}
	var log bytes.Buffer
	go func() {
		defer close(done)
		runErr = c.RunScript(ctx, filepath.Join(dir, "live.sql"), fmt.Sprintf(liveScript, suffix), cluster.ScriptOptions{
			BaseDir: dir, Catalog: catPath, Log: &log, BatchSize: 20,
			NewOutput: func() (sinks.Writer, error) { return sinks.NewCSV(&out), nil }})
	}()
	// Publish once the query runs, so that it reads the rows as they come
	// (as the tap sees them).
	for deadline := time.Now().Add(60 * time.Second); ; {
		qs := c.Coordinator.Queries()
		if len(qs) == 1 && qs[0].State == deploy.StateRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the query did not start: %+v\n%s", qs, log.String())
		}
		select {
		case <-done:
			t.Fatalf("the query ended before its rows: %v\n%s", runErr, log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	mem := memory.NewGoAllocator()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for start := 0; start < len(ids); start += 20 {
		<-tick.C
		end := min(start+20, len(ids))
		msg := encodeRows(t, mem, x, y, ids[start:end], start)
		if _, err := js.Publish(ctx, "shelf.live", msg); err != nil {
			t.Fatal(err)
		}
	}
	endMsg := nats.NewMsg("shelf.live")
	endMsg.Header.Set("Tierflow-End", "1")
	if _, err := js.PublishMsg(ctx, endMsg); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("the query did not finish\n%s", log.String())
	}
	if runErr != nil {
		t.Fatalf("%v\n%s", runErr, log.String())
	}
	res := liveRun{rows: map[int64][2]string{}}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		id, err := strconv.ParseInt(r[0], 10, 64)
		if err != nil {
			t.Fatalf("row %v", r)
		}
		if _, dup := res.rows[id]; dup {
			t.Fatalf("row %d twice", id)
		}
		res.rows[id] = [2]string{r[1], r[2]}
	}
	for _, q := range c.Coordinator.Queries() {
		for _, r := range q.Replans {
			res.replans = append(res.replans, fmt.Sprintf("epoch %d: %s", r.Epoch, r.Reason))
		}
		if q.Estimate != nil {
			res.estimate = q.Estimate.Accuracy
		}
	}
	return res
}

func encodeRows(t *testing.T, mem memory.Allocator, x []float32, y []uint8, rows []int, first int) []byte {
	t.Helper()
	idb := array.NewInt64Builder(mem)
	tsb := array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
	lb := array.NewStringBuilder(mem)
	vals := make([]float32, 0, len(rows)*784)
	for i, r := range rows {
		idb.Append(int64(first + i))
		// Event time: 5 ms a row from 2026-01-01, so epochs advance
		// with the stream (a re-plan cuts over at one).
		tsb.Append(arrow.Timestamp(1767225600000000 + int64(first+i)*5000))
		lb.Append(fashionLabels[y[r]])
		vals = append(vals, x[r*784:(r+1)*784]...)
	}
	ids, ts, labels := idb.NewArray(), tsb.NewArray(), lb.NewArray()
	defer ids.Release()
	defer ts.Release()
	defer labels.Release()
	img, err := ml.NewTensorColumn(mem, []int64{1, 28, 28}, vals)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		ml.TensorField("image", []int64{1, 28, 28}), {Name: "true_label", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{ids, ts, img, labels}, int64(len(rows)))
	defer rec.Release()
	var b bytes.Buffer
	if err := frame.EncodeRecord(&b, rec, mem); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func loadIDX(t *testing.T, name string) ([]float32, []uint8) {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "fashion", "data")
	x, err := modelzoo.ReadIDXFile(filepath.Join(dir, name+"-images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	yy, err := modelzoo.ReadIDXFile(filepath.Join(dir, name+"-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return x.Floats(), yy.Data
}

func accuracy(rows map[int64][2]string, from, to int) (float64, int) {
	ok, n := 0, 0
	for id := from; id < to; id++ {
		r, seen := rows[int64(id)]
		if !seen {
			continue
		}
		n++
		if r[0] == r[1] {
			ok++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return 100 * float64(ok) / float64(n), n
}

// TestLiveMixShiftSwitchesVariant is the "done when" for the
// runtime: a live query with WITH (ACCURACY >= 85 DATA AWARE) reads a
// JetStream stream whose class mix shifts from footwear and bags to coats,
// pullovers, T-shirts and dresses. The profiled choice (mlp-small, 87.02 on
// the test set) measures below 85 on the second half; the data-aware query
// is re-planned as the estimated mix moves, switches variant at an epoch,
// and measures at least 85 there.
func TestLiveMixShiftSwitchesVariant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two live queries on an embedded cluster (about 40 s)")
	}
	t.Parallel() // clusters of its own, paced by their publishers
	x, y := loadIDX(t, "test")
	var shoes, tops []int
	for i, l := range y {
		switch l {
		case 5, 7, 8, 9:
			shoes = append(shoes, i)
		case 0, 2, 3, 4:
			tops = append(tops, i)
		}
	}
	ids := append(append(append(append([]int(nil), shoes...), tops...), tops...), tops...)
	shift := len(shoes)
	// The last of three passes over the tops is what the query runs once
	// the estimate has followed the shift and the re-plan has cut over
	// (the estimate needs its window, the policy a settled mix, the
	// coordinator a new generation).
	from, to := shift+2*len(tops), len(ids)

	// The two runs are independent clusters, each paced by its publisher
	// (20 rows a 100 ms tick): they wait side by side, not one after the
	// other.
	var profiled, aware liveRun
	t.Run("runs", func(t *testing.T) {
		t.Run("profiled", func(t *testing.T) {
			t.Parallel()
			profiled = runLive(t, false, x, y, ids)
		})
		t.Run("data-aware", func(t *testing.T) {
			t.Parallel()
			aware = runLive(t, true, x, y, ids)
		})
	})
	if t.Failed() {
		return
	}
	if len(profiled.rows) != len(ids) {
		t.Fatalf("profiled run: %d rows of %d", len(profiled.rows), len(ids))
	}
	pAcc, _ := accuracy(profiled.rows, from, to)
	if len(aware.rows) != len(ids) {
		t.Fatalf("data-aware run: %d rows of %d (replans %v)", len(aware.rows), len(ids), aware.replans)
	}
	aAcc, n := accuracy(aware.rows, from, to)
	pAll, _ := accuracy(profiled.rows, shift, to)
	aAll, _ := accuracy(aware.rows, shift, to)
	t.Logf("last pass (%d rows): profiled choice %.2f%%, data aware %.2f%%; whole shifted phase: %.2f%% and %.2f%%; replans %v", n, pAcc, aAcc, pAll, aAll, aware.replans)
	if pAcc >= 85 {
		t.Fatalf("the profiled choice measures %.2f on the shifted mix: no test", pAcc)
	}
	if aAcc < 85 {
		t.Fatalf("data-aware query measures %.2f after the shift, want >= 85 (replans %v)", aAcc, aware.replans)
	}
	switched := false
	for _, r := range aware.replans {
		switched = switched || strings.Contains(r, "classify: ") && strings.Contains(r, "-> cnn")
	}
	if !switched {
		t.Fatalf("no re-plan switched classify to cnn: %v", aware.replans)
	}
	if len(profiled.replans) != 0 {
		t.Fatalf("the profiled query was re-planned: %v", profiled.replans)
	}
	// The final plan's estimate: the profiled 87.02 is far off on this
	// stream; the data-aware plan's is the cnn's recall weighed by the
	// estimated mix, close to what its rows measure.
	t.Logf("estimated vs measured on the last pass: profiled plan %.2f vs %.2f, data-aware plan %.2f vs %.2f", profiled.estimate, pAcc, aware.estimate, aAcc)
	if profiled.estimate != 87.02 || aware.estimate < 85 || math.Abs(aware.estimate-aAcc) > math.Abs(profiled.estimate-pAcc) {
		t.Fatalf("estimates: profiled plan %.2f (want 87.02), data-aware plan %.2f (want >= 85 and nearer its measured %.2f)", profiled.estimate, aware.estimate, aAcc)
	}
}
