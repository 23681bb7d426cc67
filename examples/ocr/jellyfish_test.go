package ocr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/cluster"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/control"
)

// latencyQuery reads the scenes with id < n under a latency bound: the
// planner sends the frames (about 18 KiB each, PNG or JPEG) from the edge
// to the detector in the cloud and picks det-480 for the accuracy.
func latencyQuery(n int) string {
	return fmt.Sprintf(`SELECT s.id, d.x0, d.y0, d.x1, d.y1, d.score, r.text, r.confidence
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text, confidence)
WHERE s.id < %d
WITH (ACCURACY >= 80, LATENCY <= 600 MS);
`, n)
}

// shapedKbit is the edge->cloud link once shaped: it carries the stream's
// 2 frames a second (about 300 kbit/s) at under 0.6 of its rate, so the
// frames still arrive, but a frame's transfer (about 230 ms) leaves det-480
// less than twice its profiled call (the catalog's P90 at batch 1) of the
// 600 ms bound: Jellyfish's eq. 1 and 6 with the link's measured bandwidth.
const shapedKbit = 640

// TestJellyfishShrinksTheDetectorOnAShapedLink is the Jellyfish policy
// acting on the scene-text workflow on the embedded cluster: the frames
// cross the edge->cloud link whole (an encoded frame has no adapt step:
// every detector variant costs the link the same bytes), so when the link
// is shaped its transfer time eats into the LATENCY bound and only a
// smaller detector side fits what is left. The policy reads the relay's
// ack estimate and has the coordinator cut the query over, at an epoch,
// from det-480 to a smaller side; every scene's rows are, row for row,
// the bare ONNX Runtime pipeline's for det-480 or for the side that
// answered it (nothing mixed, lost or duplicated).
//
// Short form: eight scenes on a link shaped from the start. Long form:
// the whole stream on a link that runs at 20 Mbit/s for 5 s (the policy
// keeps det-480: the link leaves it its compute) and then falls.
func TestJellyfishShrinksTheDetectorOnAShapedLink(t *testing.T) {
	modelDir(t)
	sc := scenes(t)
	n, fall := 8, 0
	if testenv.IsLong() {
		n, fall = len(sc), 5
	}
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	trace := fmt.Sprintf("t_s,kbit_s\n0,%d\n600,%d\n", shapedKbit, shapedKbit)
	if fall > 0 {
		trace = fmt.Sprintf("t_s,kbit_s\n0,20000\n%d,%d\n600,%d\n", fall, shapedKbit, shapedKbit)
	}
	tr, err := relay.ParseTrace("ocr.csv", strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c := clustertest.StartHooked(t, ctx, cluster.Options{Infra: inf, Catalog: "catalog.yaml"}, cluster.Hooks{
		Shaper: func(from, to string) relay.Shaper {
			if strings.HasPrefix(from, "edge") && !strings.HasPrefix(to, "edge") {
				return relay.TraceShaper{Trace: tr, Start: start}
			}
			return nil
		}})
	defer c.Close()
	var out, stats bytes.Buffer
	q := latencyQuery(n)
	err = c.RunScript(ctx, "latency.sql", q, cluster.ScriptOptions{Catalog: "catalog.yaml", BaseDir: ".", Replay: true, Stats: &stats,
		NewOutput: func() (sinks.Writer, error) { return sinks.New("json", &out) }})
	if err != nil {
		t.Fatal(err)
	}
	var s control.Summary
	if err := json.Unmarshal(stats.Bytes(), &s); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	t.Logf("replans %+v; dropped %v; latency %+v; slo timeline %+v", s.Replans, s.Dropped, s.LatencyMs, s.SLOTimeline)

	var down *control.Replan
	for i, r := range s.Replans {
		if !strings.HasPrefix(r.Reason, "jellyfish: ") {
			t.Errorf("replan %d: %q, want the Jellyfish policy's", i, r.Reason)
		}
		if down == nil && strings.Contains(r.Old, "det-480") && strings.Contains(r.New, "det-320") {
			down = &s.Replans[i]
		}
	}
	if down == nil {
		t.Fatalf("replans %+v: want a cut-over from det-480 to det-320 on the shaped link", s.Replans)
	}
	if !strings.Contains(down.Reason, "detect: det-480 -> det-320 (320x320) for LATENCY 600 ms") {
		t.Errorf("step down %q: want the detector's variant and side named with the bound", down.Reason)
	}
	if fall > 0 && down.Cut != nil && down.Cut.Decided.Before(start.Add(time.Duration(fall)*time.Second)) {
		t.Errorf("stepped down at %v, before the link fell at %ds: the unshaped link leaves det-480 its compute",
			down.Cut.Decided.Sub(start), fall)
	}

	// Every scene's rows are one variant's, row for row.
	got := reads(t, decodeRows(t, &out))
	refs := map[string][]Read{"det-480": referenceReads(t, sc, n, 480, 320), "det-320": referenceReads(t, sc, n, 320, 320)}
	byScene := func(rs []Read) map[int64][]Read {
		m := map[int64][]Read{}
		for _, r := range rs {
			m[r.ID] = append(m[r.ID], r)
		}
		return m
	}
	gotBy := byScene(got)
	refBy := map[string]map[int64][]Read{}
	for v, rs := range refs {
		refBy[v] = byScene(rs)
	}
	answered := map[string]int{}
	for id, rs := range gotBy {
		which := ""
		for _, v := range []string{"det-480", "det-320"} {
			if len(DiffReads(rs, refBy[v][id])) == 0 {
				which = v
				break
			}
		}
		if which == "" {
			t.Errorf("scene %d: rows %v are neither det-480's %v nor det-320's %v", id, rs, refBy["det-480"][id], refBy["det-320"][id])
			continue
		}
		answered[which]++
	}
	t.Logf("scenes answered: %v of %d (dropped %v)", answered, n, s.Dropped)
	if answered["det-320"] == 0 {
		t.Errorf("no scene answered at det-320 after the step down: %v", answered)
	}
	// A scene not in the result was dropped past its deadline (counted),
	// never lost.
	missing := 0
	for id, rs := range refBy["det-480"] {
		if len(rs) > 0 && len(gotBy[id]) == 0 {
			missing++
		}
	}
	if missing > 0 && s.Dropped["deadline"] == 0 {
		t.Errorf("%d of %d scenes have no rows and no row was dropped past its deadline: rows lost", missing, n)
	}
}
