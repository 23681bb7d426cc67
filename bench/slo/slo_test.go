package slo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/runtime/control"
)

func TestBenchSLORejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("t_s,kbit_s\n0,800\n-1,300\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", bad}, bad + ":3: bad bandwidth trace"},
		{[]string{"--policy", "fastest"}, `unknown --policy "fastest"`},
		{[]string{"--clients", "0"}, "--clients and --workers must be at least 1"},
		{[]string{"--encode", "png"}, `unknown --encode "png"`},
		{[]string{"--encode", "uint8"}, "--encode uint8 is the harness's"},
		{[]string{"--zoo", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{[]string{"--random", "2", "--kinds", "bursts"}, `unknown trace kind "bursts"`},
		{[]string{"--random", "-1"}, "--random must not be negative"},
		{[]string{"--harness", "--random", "2"}, "--harness runs one trace"},
	} {
		code, _, errs := runCLI(t, "", append([]string{"bench", "slo"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, exitBadInput, c.want)
		}
	}
}

// TestBenchSLORuns runs the bench briefly on the engine (an embedded
// cluster: a shaped tier link per client, one LATENCY query over the
// clients' replayed streams) and checks its JSON: the rows' shape, every
// frame accounted for, and the engine's own SLO timeline per client link
// (the shaped bandwidth of the built-in trace, client 1 half a period
// ahead, and the variant the query ran).
func TestBenchSLORuns(t *testing.T) {
	dir := filepath.Join("..", "..")
	code, out, errs := runCLI(t, "", "bench", "slo", "--duration", "3s", "--clients", "2", "--policy", "adaptive,static-largest", "--analyze",
		"--zoo", filepath.Join(dir, "examples", "fashion", "sizes.yaml"), "--data", filepath.Join(dir, "examples", "fashion", "data"), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Policies []map[string]any `json:"policies"`
		Sources  []sloSourceRow   `json:"sources"`
		Timeline []sloSpanRow     `json:"timeline"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rows := res.Policies
	if len(rows) != 2 || rows[0]["policy"] != "adaptive" || rows[1]["policy"] != "static-largest" {
		t.Fatalf("rows %v", rows)
	}
	var keys []string
	for k := range rows[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "accuracy,clients,p50_ms,p99_ms,policy,requests,slo_miss_rate,slo_ms,trace" {
		t.Fatalf("fields %s", got)
	}
	for _, r := range rows {
		// 2 clients x 15 frames/s x 3 s, each either in time or a miss.
		miss := r["slo_miss_rate"].(float64)
		if r["requests"].(float64) != 90 || r["slo_ms"].(float64) != 100 || r["clients"].(float64) != 2 || miss < 0 || miss > 1 {
			t.Errorf("row %v", r)
		}
		if acc := r["accuracy"].(float64); miss < 1 && (acc < 50 || acc > 100 || r["p50_ms"].(float64) <= 0 || r["p99_ms"].(float64) < r["p50_ms"].(float64)) {
			t.Errorf("row %v: want an accuracy and latencies of the answers in time", r)
		}
	}
	if len(res.Sources) != 4 {
		t.Fatalf("sources %+v, want 2 per policy", res.Sources)
	}
	for _, s := range res.Sources {
		if s.Requests != 45 || s.Late+s.Dropped > s.Requests {
			t.Errorf("source %+v", s)
		}
	}
	// The built-in trace starts at 800 kbit/s; client 1 starts half its
	// 30 s period ahead, at 300.
	shaped := map[string]float64{}
	for _, x := range res.Timeline {
		if x.Policy == "adaptive" && x.FromS == 0 && strings.Contains(x.Variant, "classify_sized=fit-") {
			shaped[x.Source] = x.ShapedKbitS
		}
	}
	if shaped["cam0"] != 800 || shaped["cam1"] != 300 {
		t.Errorf("timeline %+v: want cam0 shaped at 800 and cam1 at 300 kbit/s from the start", res.Timeline)
	}
}

// TestBenchSLOHarness runs the bench's own harness (--harness) briefly.
func TestBenchSLOHarness(t *testing.T) {
	dir := filepath.Join("..", "..")
	code, out, errs := runCLI(t, "", "bench", "slo", "--harness", "--duration", "2s", "--clients", "2", "--policy", "adaptive",
		"--zoo", filepath.Join(dir, "examples", "fashion", "sizes.yaml"), "--data", filepath.Join(dir, "examples", "fashion", "data"), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 1 || rows[0]["policy"] != "adaptive" || rows[0]["requests"].(float64) < 50 {
		t.Fatalf("rows %v", rows)
	}
}

// TestSLOScore: a frame's latency counts from its capture on the client's
// schedule (a frame its source sent late, held back by the link, is late
// even when its own trip was quick); after a cut-over the stream runs on
// a schedule of its own, and the pause is reported, not counted in any
// frame; a frame never answered is a miss.
func TestSLOScore(t *testing.T) {
	t0 := time.Unix(1000, 0)
	frame := func(id int64) time.Time { return t0.Add(time.Duration(id) * 100 * time.Millisecond) }
	answer := func(ingest time.Time, trip time.Duration) sloAnswer {
		return sloAnswer{ingest: ingest, written: ingest.Add(trip), correct: true}
	}
	// 10 frames a second, SLO 100 ms: frames 0-4 sent on time, 5-7 held
	// 300 ms at the source, 8 and 9 never answered.
	held := map[int64]sloAnswer{}
	for id := int64(0); id < 8; id++ {
		at := frame(id)
		if id >= 5 {
			at = at.Add(300 * time.Millisecond)
		}
		held[id] = answer(at, 50*time.Millisecond)
	}
	sc, paused := score(held, 10, 10, 100*time.Millisecond, nil)
	if sc.requests != 10 || sc.answered != 8 || sc.inTime != 5 || sc.correct != 5 || paused != 0 {
		t.Errorf("held frames: %+v, paused %v; want 10 requests, 8 answered, 5 in time", sc, paused)
	}
	// A cut-over at frame 5: the new plan replays from it 2 s late, on its
	// own schedule, and answers frame 5 again (the old plan's answer, a
	// wrong one, does not count).
	cut := map[int64]sloAnswer{}
	for id := int64(0); id < 10; id++ {
		cut[id] = answer(frame(id), 50*time.Millisecond)
	}
	cut[5] = sloAnswer{ingest: frame(5), written: frame(5).Add(50 * time.Millisecond)}
	for id := int64(5); id < 10; id++ {
		cut[id] = answer(frame(id).Add(2*time.Second), 60*time.Millisecond)
	}
	sc, paused = score(cut, 10, 10, 100*time.Millisecond, []int64{5})
	if sc.answered != 10 || sc.inTime != 10 || sc.correct != 10 || paused != 2*time.Second {
		t.Errorf("cut-over: %+v, paused %v; want all 10 in time and right, a 2s pause", sc, paused)
	}
	// The new plan dropped frame 7: the old plan's answer is not the
	// committed one, so frame 7 is a miss, and it does not pull the new
	// schedule 2 s earlier (which would make every frame after the cut
	// look late).
	cut[7] = answer(frame(7), 50*time.Millisecond)
	sc, _ = score(cut, 10, 10, 100*time.Millisecond, []int64{5})
	if sc.answered != 9 || sc.inTime != 9 {
		t.Errorf("cut-over with a dropped frame: %+v; want 9 answered, all in time", sc)
	}
}

// TestSLOCutOverBreakdown: a cut-over's pause splits into the frames the
// new plan sends again (its first frame was due on the old schedule before
// the decision), the coordinator's steps up to the start, and the new
// source's wait for its first frame; the line adds them up.
func TestSLOCutOverBreakdown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	frame := func(id int64) time.Time { return t0.Add(time.Duration(id) * 100 * time.Millisecond) }
	// 10 frames a second; the re-plan resumes at frame 5 (due at 0.5 s),
	// decided at 0.6 s, started 20 ms later; the new source sends frame 5
	// 30 ms after that.
	decided := frame(6)
	newStart := decided.Add(50 * time.Millisecond)
	answers := map[int64]sloAnswer{}
	for id := int64(0); id < 10; id++ {
		at := frame(id)
		if id >= 5 {
			at = newStart.Add(time.Duration(id-5) * 100 * time.Millisecond)
		}
		answers[id] = sloAnswer{ingest: at, written: at.Add(20 * time.Millisecond), correct: true}
	}
	epoch := uint64(fashion.StreamEpoch.UnixMicro() + 4*fashion.StreamInterval.Microseconds()) // frame 4 committed: the cut's first id is 5
	s := control.Summary{Replans: []control.Replan{{Epoch: epoch, Cut: &control.CutOver{Decided: decided, PlanMs: 5, StopMs: 3, DeployMs: 7, BuildMs: 4, StartMs: 20}}}}
	if ids := cutIDs(s); len(ids) != 1 || ids[0] != 5 {
		t.Fatalf("cut ids %v, want [5]", ids)
	}
	sc, paused := score(answers, 10, 10, 100*time.Millisecond, cutIDs(s))
	cuts := cutsOf(s, sc, 10)
	if len(cuts) != 1 {
		t.Fatalf("cuts %+v, want one", cuts)
	}
	c := cuts[0]
	if c.commitLag != 100*time.Millisecond || c.firstFrame != 30*time.Millisecond || c.pause != 150*time.Millisecond || paused != c.pause {
		t.Fatalf("cut %+v (score paused %v): want 100 ms sent again, 30 ms to the first frame, 150 ms paused", c, paused)
	}
	line := cutLine(cuts)
	for _, want := range []string{"mean of 1: 150 ms", "behind the decision 100 ms", "decision to start 20 ms", "plan 5", "stopped 3", "deployed 7", "built 4", "first frame 30 ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}
