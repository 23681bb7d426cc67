package ocr

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/analyze"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// analyzeTolerance is how far EXPLAIN ANALYZE's measured throughput and
// costs may be from the plan's estimates on this workflow (issue 31).
const analyzeTolerance = 0.15

// explainAnalyze runs the first query of query.sql (ACCURACY >= acc) on the
// embedded cluster of infra.yaml as EXPLAIN ANALYZE does, the scenes
// replayed at the rate this machine sustains now (sustainableCatalog), rows
// of them (0: all). It also times the stages through bare ONNX Runtime in
// the middle of the run and after it (stageClock.frame), so that the run
// can be judged against the machine it ran on: during reports the slower.
func explainAnalyze(t *testing.T, acc string, rows int64) (rep *analyze.Report, rate float64, during time.Duration) {
	t.Helper()
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("query.sql")
	if err != nil {
		t.Fatal(err)
	}
	if acc != "" {
		src = bytes.ReplaceAll(src, []byte("ACCURACY >= 70"), []byte("ACCURACY >= "+acc))
	}
	clock := newStageClock(t, inf, src)
	defer clock.Close()
	cat, rate := sustainableCatalog(t, clock.frame(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.StartEmbedded(ctx, cluster.Options{Infra: inf, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One frame timed halfway through the replay, beside the stream: a
	// share of the cores lost in the middle of the run and back by its end
	// shows there, not after the run.
	frames := float64(rows)
	if rows == 0 {
		frames = float64(len(scenes(t)))
	}
	halfway := time.Duration(frames / rate / 2 * float64(time.Second))
	ended, mid := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		select {
		case <-time.After(halfway):
			mid <- clock.frameOnce()
		case <-ended: // the run ended before its middle: nothing timed there
			mid <- 0
		}
	}()
	script := deploy.Script{Filename: "query.sql", Source: string(src), BaseDir: ".", Catalog: cat, Nth: 1}
	rep, err = c.ExplainAnalyze(ctx, script, cluster.AnalyzeOptions{MaxRows: rows})
	close(ended)
	midFrame := <-mid
	if err != nil {
		t.Fatal(err)
	}
	after := clock.frame(t)
	t.Logf("a frame's stages during the run: %v halfway, %v after", midFrame, after)
	return rep, rate, max(midFrame, after)
}

// utilisation is the most of the machine's measured capacity for the
// workflow that the replay may ask for. A server busy a share u of the
// time keeps a frame waiting about u/(2(1-u)) of its service on average
// (M/D/1): at a half, half a frame's time, so the last frames of a short
// run do not meet a backlog the first did not, and the run's span is its
// data's, not a queue's. A frame's service is its stages' times summed:
// the embedded cluster's workers share this process and the machine's
// cores with everything else running on it, so the detector of one frame
// and the recogniser of another take from the same cores.
const utilisation = 0.5

// changedUtilisation is how busy the replay's rate keeps the machine, at
// the stages' speed timed during the run, past which the run did not have
// the machine it was planned on: at three quarters a frame waits about one
// and a half frames' time (M/D/1), three times what utilisation allows,
// and an 8-frame run's span grows by the backlog. A share of the cores
// lost that way (make test's other packages starting beside this one) is
// the machine's, not the estimate's; such a run is repeated at the speed
// timed then (withinEstimate).
const changedUtilisation = 0.75

// stageClock times one frame's stages (detector, then the recogniser on
// each of its boxes) through bare ONNX Runtime with the variants the plan
// of the first query of a script chose: wall time, what a stage's thread
// gets of the cores now.
type stageClock struct {
	ref      *Reference
	scenes   []*Scene
	det, rec int
	mu       sync.Mutex // one timing at a time on ref's sessions

	// The first frame's timing: each scene's stages and their mean, the
	// scale of frameOnce's one scene.
	firstScene []time.Duration
	firstFrame time.Duration
}

func newStageClock(t *testing.T, inf *infra.Infra, src []byte) *stageClock {
	t.Helper()
	cat, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	script, err := lang.Parse("query.sql", string(src))
	if err != nil || len(script.Statements) == 0 {
		t.Fatalf("query.sql: %v", err)
	}
	res, err := planner.PlanStatement(context.Background(), script.Statements[0], cat, inf, session.New().Planner)
	if err != nil {
		t.Fatal(err)
	}
	side := map[string]int{}
	for _, op := range res.Physical.Operators {
		if m := cat.Model(op.Model); m != nil && op.Variant != "" {
			if v := m.Variant(op.Variant); v != nil && len(v.InputSize) == 2 {
				side[op.Model] = v.InputSize[1]
			}
		}
	}
	if side["detect"] == 0 || side["recognize"] == 0 {
		t.Fatalf("the plan's variants have no input sizes: %v", side)
	}
	ref, err := NewReference(modelDir(t), side["detect"], side["recognize"], 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &stageClock{ref: ref, scenes: scenes(t)[:4], det: side["detect"], rec: side["recognize"]}
	if _, err := ref.Read(c.scenes[0].ID, c.scenes[0].Bytes); err != nil { // warm-up: first calls allocate
		ref.Close()
		t.Fatal(err)
	}
	return c
}

func (c *stageClock) Close() { c.ref.Close() }

// frame is one frame's stages, the mean over three scenes, logged.
func (c *stageClock) frame(t *testing.T) time.Duration {
	t.Helper()
	var det, rec time.Duration
	each := make([]time.Duration, len(c.scenes))
	for i, s := range c.scenes[1:] {
		d, r, err := c.time(s)
		if err != nil {
			t.Fatal(err)
		}
		det, rec, each[i+1] = det+d, rec+r, d+r
	}
	n := time.Duration(len(c.scenes) - 1)
	t.Logf("a frame's stages now: detector at %d %v, recogniser at %d %v", c.det, det/n, c.rec, rec/n)
	if c.firstFrame == 0 {
		c.firstScene, c.firstFrame = each, (det+rec)/n
	}
	return (det + rec) / n
}

// frameOnce is frame from one scene's stages, for a goroutine (no t): the
// first frame scaled by this scene's time against its first, so that it
// costs a third of frame beside the stream. 0 on an error, which frame,
// on the test's goroutine, reports.
func (c *stageClock) frameOnce() time.Duration {
	const scene = 1
	d, r, err := c.time(c.scenes[scene])
	if err != nil || c.firstScene[scene] <= 0 {
		return 0
	}
	return time.Duration(float64(c.firstFrame) * float64(d+r) / float64(c.firstScene[scene]))
}

func (c *stageClock) time(s *Scene) (det, rec time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	img, boxes, err := c.ref.Detect(s.Bytes)
	if err != nil {
		return 0, 0, err
	}
	mid := time.Now()
	for i := range boxes {
		if _, _, err := c.ref.Recognise(img, boxes[i:i+1]); err != nil {
			return 0, 0, err
		}
	}
	return mid.Sub(start), time.Since(mid), nil
}

// sustainableCatalog is the catalog EXPLAIN ANALYZE plans with, and the
// scenes' rate in it: catalog.yaml, unless this machine, as loaded as it is
// now, cannot sustain the scenes' rate. The plan's throughput is the rate
// the stream is replayed at; its profiles were measured on a quieter
// machine. So where the stream's rate would keep the machine busy with the
// frames' stages (frame, timed now) more than utilisation of the time, the
// scenes are replayed at the rate that keeps it so, from a copy of the
// catalog in a temporary directory. The estimate is then one this machine
// can meet, and the run is held to it within the same 15%.
func sustainableCatalog(t *testing.T, frame time.Duration) (string, float64) {
	t.Helper()
	cat, err := catalog.LoadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := cat.Stream("scenes")
	if st == nil || st.Rate <= 0 {
		t.Fatal("catalog.yaml: no stream scenes with a rate")
	}
	most := utilisation / frame.Seconds()
	t.Logf("%.2f frames/s at %.0f%% busy; the stream's rate %g", most, 100*utilisation, st.Rate)
	if st.Rate <= most {
		return "catalog.yaml", st.Rate
	}
	b, err := os.ReadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	rate := math.Floor(most*100) / 100
	old := fmt.Sprintf("rate: %g,", st.Rate)
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("catalog.yaml: the scenes' %q not found", old)
	}
	b = bytes.Replace(b, []byte(old), []byte(fmt.Sprintf("rate: %g,", rate)), 1)
	b = bytes.ReplaceAll(b, []byte("../../.cache/"), []byte(filepath.Join(abs, "..", "..", ".cache")+"/"))
	b = bytes.ReplaceAll(b, []byte("subject: data/"), []byte("subject: "+filepath.Join(abs, "data")+"/"))
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("replaying the scenes at %g frames/s (catalog copy %s)", rate, path)
	return path, rate
}

// estimateMisses checks the plan's headline estimates against the run:
// the throughput it was planned for, its network cost (frames or crops
// across the edge's uplink, priced) and its compute cost (the workers its
// stages ran on). It returns a line per estimate missed by more than
// analyzeTolerance, and the report's text with them.
func estimateMisses(t *testing.T, rep *analyze.Report) []string {
	t.Helper()
	t.Logf("window %v, span %v, end-to-end latency ms %+v", rep.Window, rep.Span, rep.Latency)
	checks := map[string]analyze.Check{}
	for _, c := range rep.Checks {
		checks[c.What] = c
	}
	var misses []string
	for _, what := range []string{"throughput", "network cost", "compute cost"} {
		c, ok := checks[what]
		if !ok || c.Error == nil || c.Estimated <= 0 {
			misses = append(misses, fmt.Sprintf("%s: no estimate to hold the run to: %+v", what, c))
			continue
		}
		t.Logf("%s: measured %.4g, estimated %.4g (%+.1f%%)", what, c.Measured, c.Estimated, 100**c.Error)
		if math.Abs(*c.Error) > analyzeTolerance {
			misses = append(misses, fmt.Sprintf("%s: measured %.4g, estimated %.4g (%+.1f%%, want within %.0f%%)", what, c.Measured, c.Estimated, 100**c.Error, 100*analyzeTolerance))
		}
	}
	if len(misses) > 0 {
		var b bytes.Buffer
		_ = rep.Write(&b)
		misses = append(misses, "EXPLAIN ANALYZE:\n"+b.String())
	}
	return misses
}

// withinEstimate runs explainAnalyze and holds the run to the plan's
// estimates. A run that misses them while the machine changed under it is
// run again, at the speed timed then, up to changedRuns times, and the last
// run is judged. Two witnesses say the machine changed: the stages timed
// beside the stream (at the replay's rate they kept it busier than
// changedUtilisation), and the workflow's own model calls (their callback
// time over the run, stagesBusy, past the same share). The second catches
// a stall between the clock's two readings (a CI run read 464 and 533 ms a
// frame beside the stream while the detector's batches took 1.5 s at p90).
// A wrong estimate misses on a machine that did not change (no second
// run); one the engine itself makes slow misses on every run.
func withinEstimate(t *testing.T, acc string, rows int64) {
	t.Helper()
	for run := 1; ; run++ {
		rep, rate, during := explainAnalyze(t, acc, rows)
		misses := estimateMisses(t, rep)
		clock, stages := rate*during.Seconds(), stagesBusy(rep)
		t.Logf("run %d: the stages kept the machine %.0f%% busy timed beside the stream, %.0f%% in the workflow's model calls (planned %.0f%%)", run, 100*clock, 100*stages, 100*utilisation)
		if len(misses) == 0 {
			return
		}
		if run < changedRuns && max(clock, stages) > changedUtilisation {
			t.Logf("run %d missed its estimates while the machine changed under it (over %.0f%% busy): run again at the speed now:\n%s",
				run, 100*changedUtilisation, strings.Join(misses, "\n"))
			continue
		}
		for _, m := range misses {
			t.Error(m)
		}
		return
	}
}

// changedRuns is how many runs withinEstimate makes while the machine
// changes under each: make test's other packages start and end beside
// this one for a minute or two, longer than two runs of eight frames.
const changedRuns = 3

// stagesBusy is the share of the run's time the model calls' instances
// spent in their callbacks (the report's busy is per instance): the frames'
// stages as the workflow timed them, the same sum utilisation plans.
func stagesBusy(rep *analyze.Report) float64 {
	var b float64
	for _, op := range rep.Operators {
		if op.Batching == nil { // not a model call
			continue
		}
		b += op.Busy * float64(max(1, len(op.Workers)))
	}
	return b
}

// TestExplainAnalyzeWithinEstimate: EXPLAIN ANALYZE of the workflow on the
// embedded cluster measures its throughput, network cost and compute cost
// within 15% of the plan's estimates: eight scenes (four seconds at the
// catalog's two a second) here, the whole stream and the plan of ACCURACY
// >= 80 (det-480 with rec-320) in the long suite.
func TestExplainAnalyzeWithinEstimate(t *testing.T) {
	modelDir(t)
	withinEstimate(t, "", 8)
	if !testenv.IsLong() {
		return
	}
	for _, acc := range []string{"", "80"} {
		withinEstimate(t, acc, 0)
	}
}
