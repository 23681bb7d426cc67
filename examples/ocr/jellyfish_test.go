package ocr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
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

// latencyQuery is latency.sql over the scenes with id < n: under its
// latency bound the planner sends the frames (about 18 KiB each, PNG or
// JPEG) from the edge to the detector in the cloud and picks det-480 for
// the accuracy.
func latencyQuery(t testing.TB, n int) string {
	t.Helper()
	src, err := os.ReadFile("latency.sql")
	if err != nil {
		t.Fatal(err)
	}
	q := strings.Replace(string(src), "WITH (", fmt.Sprintf("WHERE s.id < %d\nWITH (", n), 1)
	if q == string(src) {
		t.Fatal("latency.sql has no WITH clause")
	}
	return q
}

// shapedKbit is the edge->cloud link once shaped: it carries the stream's
// 2 frames a second (about 300 kbit/s) at under 0.6 of its rate, so the
// frames still arrive, but a frame's transfer (about 230 ms) leaves det-480
// less than twice its profiled call (the catalog's P90 at batch 1) of the
// 600 ms bound: Jellyfish's eq. 1 and 6 with the link's measured bandwidth.
const shapedKbit = 640

// How soon the Jellyfish policy must step down once the link falls, from
// the link's and the policy's own periods (Jellyfish 3.3 and 7.1: the
// scheduler runs every half second on the bandwidth the requests' acks
// measured). The stream sends a frame every framePeriod (the catalog's
// rate: 2 a second, 18.2 KiB each); the relay's estimate shows the drop
// at the second slow ack (relay.LinkStats.RecentAckBps, the larger of the
// latest two), so the frame sent just before the fall and the next one,
// a framePeriod later, must cross at the shaped rate (frameAtShaped
// each); the worker reports a slow link at once, and at the latest at its
// status tick (reportPeriod, the worker's min(heartbeat, 500 ms)), where
// the coordinator's policy decides.
const (
	framePeriod   = 500 * time.Millisecond
	frameAtShaped = time.Duration(18.2 * 1024 * 8 / (shapedKbit * 1000) * float64(time.Second))
	reportPeriod  = 500 * time.Millisecond
	stepDownBound = 2*framePeriod + frameAtShaped + reportPeriod
)

// shapedRun is one run of latency.sql over the first n scenes on the
// embedded cluster, the edge->cloud link shaped to trace (CSV t_s,kbit_s),
// with the Jellyfish policy or without it.
type shapedRun struct {
	summary control.Summary
	reads   []Read
	// linkStart is the trace's time 0: when the query's first part
	// opened the shaped link (the cluster's own start, models loaded,
	// takes seconds more on a busy machine, and the link's trace must
	// not run out before the query uses it).
	linkStart time.Time
	// decisions are the Jellyfish policy's, with what it read, in order
	// (nil without the policy).
	decisions []jfDecision
}

// runShaped runs with the Jellyfish policy's rule (control.DefaultJellyfish,
// what the coordinator runs for a LATENCY query) when jellyfish, recording
// each of its decisions with its inputs; rule replaces it when not nil (a
// broken rule, to check that the test catches it).
func runShaped(t *testing.T, n int, trace string, jellyfish bool) shapedRun {
	return runShapedRule(t, n, trace, jellyfish, nil)
}

func runShapedRule(t *testing.T, n int, trace string, jellyfish bool, rule control.Policy) shapedRun {
	t.Helper()
	inf, err := infra.LoadFile("infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := relay.ParseTrace("ocr.csv", strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := cluster.Options{Infra: inf, Catalog: "catalog.yaml"}
	if rule == nil {
		rule = control.DefaultJellyfish
	}
	rec := &jfRecorder{rule: rule}
	opts.Policies = clustertest.SLO(rec)
	if !jellyfish {
		opts.Policies = clustertest.SLO(nil)
	}
	var (
		opened    sync.Once
		linkStart time.Time
	)
	c := clustertest.StartHooked(t, ctx, opts, cluster.Hooks{
		Shaper: func(from, to string) relay.Shaper {
			if strings.HasPrefix(from, "edge") && !strings.HasPrefix(to, "edge") {
				// Every generation's link runs on the one trace.
				opened.Do(func() { linkStart = time.Now() })
				return relay.TraceShaper{Trace: tr, Start: linkStart}
			}
			return nil
		}})
	defer c.Close()
	var out, stats bytes.Buffer
	err = c.RunScript(ctx, "latency.sql", latencyQuery(t, n), cluster.ScriptOptions{Catalog: "catalog.yaml", BaseDir: ".", Replay: true, Stats: &stats,
		NewOutput: func() (sinks.Writer, error) { return sinks.New("json", &out) }})
	if err != nil {
		t.Fatal(err)
	}
	opened.Do(func() { t.Fatal("the edge->cloud link was never opened") })
	r := shapedRun{linkStart: linkStart, decisions: rec.all()}
	if err := json.Unmarshal(stats.Bytes(), &r.summary); err != nil {
		t.Fatalf("stats %q: %v", stats.String(), err)
	}
	r.reads = reads(t, decodeRows(t, &out))
	return r
}

// byScene groups reads by scene.
func byScene(rs []Read) map[int64][]Read {
	m := map[int64][]Read{}
	for _, r := range rs {
		m[r.ID] = append(m[r.ID], r)
	}
	return m
}

// answeredBy is, for each scene of got, the detector variant of refs
// (det-480, det-320, ...: the bare pipeline's reads with that detector)
// whose rows it has, row for row; a scene that is none's is an error,
// unless partial (lines dropped past their deadline, counted) and its rows
// are some of one variant's ("<variant> partial").
func answeredBy(t *testing.T, got []Read, refs map[string][]Read, partial bool) map[string]int {
	t.Helper()
	refBy := map[string]map[int64][]Read{}
	var names []string
	for v, rs := range refs {
		refBy[v] = byScene(rs)
		names = append(names, v)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	out := map[string]int{}
	for id, rs := range byScene(got) {
		which := ""
		for _, v := range names {
			if len(DiffReads(rs, refBy[v][id])) == 0 {
				which = v
				break
			}
		}
		for _, v := range names {
			if which == "" && partial && subset(rs, refBy[v][id]) {
				which = v + " partial"
			}
		}
		if which == "" {
			t.Errorf("scene %d: rows %v are none of the bare pipeline's %v", id, rs, names)
			continue
		}
		out[which]++
	}
	return out
}

// subset reports whether every read of got is one of want's.
func subset(got, want []Read) bool {
	for _, g := range got {
		if !slices.ContainsFunc(want, func(w Read) bool { return len(DiffReads([]Read{g}, []Read{w})) == 0 }) {
			return false
		}
	}
	return true
}

// jfDecision is one call of the Jellyfish policy's rule during a run: when,
// what it read for the detector's call, and what it asked for.
type jfDecision struct {
	At  time.Time
	Age time.Duration
	// Samples are the estimates' samples (the rule waits for one).
	Samples int
	SLOMs   float64
	// Variant is the detector's variant running; Zoo its variants as the
	// policy has them (the frame's bytes, the catalog's P90 by batch).
	Variant string
	Zoo     []control.JFVariant
	// BwBps is the edge's uplink as the policy reads it (the slowest link
	// with acks out of the call's sources, its plan bandwidth; 0: no acks
	// yet). Rate is the stream's rate at the detector, rows a second per
	// source (0: no detector running yet).
	BwBps, Rate float64
	// Reason is the decision's ("": keep the running variant).
	Reason string
}

// jfRecorder is the policy under test, unchanged, with a log of its
// decisions and their inputs: what the test judges the policy by.
type jfRecorder struct {
	rule control.Policy
	mu   sync.Mutex
	log  []jfDecision
}

func (r *jfRecorder) Decide(in control.PolicyInput) *control.Decision {
	d := r.rule.Decide(in)
	x := jfDecision{At: time.Now(), Age: in.Age, Samples: in.Estimates.Samples}
	if d != nil {
		x.Reason = d.Reason
	}
	if in.Latency != nil {
		x.SLOMs = in.Latency.SLOMs
		for _, c := range in.Latency.Calls {
			if c.Call != "detect" {
				continue
			}
			x.Variant, x.Zoo = c.Variant, c.Variants
			srcs := 0
			seen := map[string]bool{}
			for _, l := range in.Estimates.Links {
				if l.AckBandwidthBps <= 0 || l.From == "" || l.From == l.To || len(c.Sources) > 0 && !slices.Contains(c.Sources, l.From) {
					continue
				}
				if !seen[l.From] {
					seen[l.From] = true
					srcs++
				}
				if v := l.Bandwidth().PlanBps(); x.BwBps == 0 || v < x.BwBps {
					x.BwBps = v
				}
			}
			for _, o := range in.Estimates.Operators {
				if o.Operator == "model detect" {
					x.Rate = 1 // the policy's rate before one is measured
					if o.InputRate > 0 {
						x.Rate = o.InputRate / float64(max(srcs, 1))
					}
				}
			}
		}
	}
	r.mu.Lock()
	r.log = append(r.log, x)
	r.mu.Unlock()
	return d
}

func (r *jfRecorder) all() []jfDecision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// carries is Jellyfish's rule (the paper's eq. 1 and 6, section 4) for the
// detector's variant name on what the policy read at decision d, stated
// here apart from the scheduler's code: a frame crosses the link in
// bytes / bandwidth, and the bound less that is what the variant has to
// compute in; it serves the stream when some batch of b frames runs twice
// within it (a frame may wait behind one batch, then run in its own:
// 2 l(b)) at a throughput b / l(b) that carries the stream's rate (both
// in the scheduler's half a row a second), and the stream takes at most
// MaxUtilization of the link. The compute l(b) is the profile's (the
// catalog's P90), as the policy's, never the machine's of the moment: what
// a run measures that the policy reads is the link's acks and the stream's
// rate, and the test judges each decision on those, as read.
func carries(d jfDecision, name string) (bool, string) {
	i := slices.IndexFunc(d.Zoo, func(v control.JFVariant) bool { return v.Name == name })
	if i < 0 {
		return false, name + " not in the zoo"
	}
	v := d.Zoo[i]
	const step = 0.5 // the scheduler's rate resolution, rows a second
	netMs := v.Bytes / d.BwBps * 1000
	budget := d.SLOMs - netMs
	why := fmt.Sprintf("a %.1f KiB frame %.0f ms over %.0f kbit/s leaves %s %.0f of %g ms; stream %.2f frames/s", v.Bytes/1024, netMs, d.BwBps*8/1000, name, budget, d.SLOMs, d.Rate)
	if u := control.DefaultJellyfish.MaxUtilization; u > 0 && d.Rate*v.Bytes > u*d.BwBps {
		return false, why + fmt.Sprintf(", over %.0f%% of the link", 100*u)
	}
	need := math.Ceil(d.Rate/step-1e-9) * step
	for b := len(v.BatchMs); b >= 1; b-- {
		l := v.BatchMs[b-1]
		if 2*l > budget {
			continue
		}
		if cap := math.Floor(float64(b)/l*1000/step) * step; cap >= need {
			return true, why + fmt.Sprintf(": batch %d, 2 x %.0f ms fits, %.1f frames/s carry it", b, l, cap)
		}
	}
	return false, why + fmt.Sprintf(": no batch of %s fits twice and carries it (batch 1: %.0f ms)", name, v.BatchMs[0])
}

// judgeDecisions checks each of the policy's decisions on det-480 against
// carries, on what the policy read then (misjudged): det-480 kept where it
// carries the stream, and stepped down to det-320 where it does not. A
// rule that steps down at once, never, or late fails here, whatever the
// machine did to the link's acks and the stream's rate.
func judgeDecisions(t *testing.T, ds []jfDecision, fell time.Time) {
	t.Helper()
	judged, wrong := misjudged(ds, fell)
	if judged == 0 {
		t.Errorf("no decision of the policy on det-480 with the link's acks and the stream's rate (%d decisions)", len(ds))
	}
	for i, w := range wrong {
		if i == 3 {
			t.Errorf("... %d decisions of %d judged wrong in all", len(wrong), judged)
			break
		}
		t.Error(w)
	}
}

// misjudged is how many of ds the rule was judged on (det-480 running,
// the plan past the policy's MinAge, the link's acks and the detector's
// rate read), and those it decided against carries, each with what it
// read; fell, when set, is the link's fall, for the message.
func misjudged(ds []jfDecision, fell time.Time) (judged int, wrong []string) {
	for _, d := range ds {
		if d.Variant != "det-480" || d.Age < control.DefaultJellyfish.MinAge || d.Samples < 1 || d.BwBps <= 0 || d.Rate <= 0 {
			continue // the rule has nothing to judge yet (the plan settling, no acks, no detector)
		}
		judged++
		ok, why := carries(d, "det-480")
		at := fmt.Sprintf("decision at %v from the fall", d.At.Sub(fell).Round(time.Millisecond))
		if fell.IsZero() {
			at = fmt.Sprintf("decision at plan age %v", d.Age.Round(time.Millisecond))
		}
		switch down := strings.Contains(d.Reason, "det-480 -> det-320"); {
		case ok && d.Reason != "":
			wrong = append(wrong, fmt.Sprintf("%s: %q where det-480 carries the stream (%s)", at, d.Reason, why))
		case !ok && !down:
			wrong = append(wrong, fmt.Sprintf("%s: %q, want det-480 -> det-320: %s", at, d.Reason, why))
		}
	}
	return judged, wrong
}

// TestJellyfishJudgeCatchesABrokenRule is the judge of the Jellyfish test
// on readings as a run gives them (the detector's zoo as the policy has
// it from catalog.yaml: the frame's bytes, the P90 by batch): the
// coordinator's rule passes on the unshaped link, on the fallen one, and
// on a burst of frames over det-480's profile (a busy machine's, where
// stepping down is right on what it read); a rule that never steps down,
// or steps down at once, is judged wrong.
func TestJellyfishJudgeCatchesABrokenRule(t *testing.T) {
	zoo := []control.JFVariant{
		{Name: "det-320", Side: 320, Bytes: 18.2*1024 + 64, Accuracy: 0.8222, BatchMs: []float64{339, 664.1}},
		{Name: "det-480", Side: 480, Bytes: 18.2*1024 + 64, Accuracy: 0.9778, BatchMs: []float64{224, 1354}},
		{Name: "det-640", Side: 640, Bytes: 18.2*1024 + 64, Accuracy: 0.9333, BatchMs: []float64{461.4, 2543}},
	}
	input := func(kbit, rate float64) control.PolicyInput {
		bps := kbit * 1000 / 8
		return control.PolicyInput{Query: "q", Age: 3 * time.Second,
			Latency: &control.LatencyInput{SLOMs: 600, Calls: []control.LatencyCall{{Call: "detect", Variant: "det-480", Variants: zoo, Sources: []string{"edge-x2"}}}},
			Estimates: control.Estimates{Samples: 5,
				Operators: []control.OperatorEstimate{{Operator: "model detect", InputRate: rate}},
				Links:     []control.LinkEstimate{{From: "edge-x2", To: "cloud-x2-1", BandwidthBps: bps, AckBandwidthBps: bps, RecentAckBps: bps}}}}
	}
	readings := map[string]control.PolicyInput{
		"the unshaped link":              input(20000, 2),
		"the fallen link":                input(shapedKbit, 2),
		"a burst over det-480's profile": input(20000, 5),
	}
	stepsDown := func(in control.PolicyInput) *control.Decision {
		return &control.Decision{Reason: "jellyfish: detect: det-480 -> det-320 (320x320)", Constraints: control.Constraints{Variants: map[string]string{"detect": "det-320"}}}
	}
	for _, c := range []struct {
		rule  control.Policy
		name  string
		wrong []string // the readings it must be judged wrong on
	}{
		{control.DefaultJellyfish, "the coordinator's", nil},
		{policyFunc(func(control.PolicyInput) *control.Decision { return nil }), "never stepping down", []string{"the fallen link", "a burst over det-480's profile"}},
		{policyFunc(stepsDown), "stepping down at once", []string{"the unshaped link"}},
	} {
		for what, in := range readings {
			rec := &jfRecorder{rule: c.rule}
			rec.Decide(in)
			judged, wrong := misjudged(rec.all(), time.Time{})
			if judged != 1 {
				t.Fatalf("%s on %s: %d decisions judged, want 1", c.name, what, judged)
			}
			if want := slices.Contains(c.wrong, what); want != (len(wrong) > 0) {
				t.Errorf("%s on %s: judged wrong %v, want %v (%v)", c.name, what, len(wrong) > 0, want, wrong)
			}
		}
	}
}

// policyFunc is a rule as a function.
type policyFunc func(control.PolicyInput) *control.Decision

func (f policyFunc) Decide(in control.PolicyInput) *control.Decision { return f(in) }

// stepDown is the run's re-plan from det-480 to det-320, nil when none;
// every re-plan must be the Jellyfish policy's.
func stepDown(t *testing.T, s control.Summary) *control.Replan {
	t.Helper()
	var down *control.Replan
	for i, r := range s.Replans {
		if !strings.HasPrefix(r.Reason, "jellyfish: ") {
			t.Errorf("replan %d: %q, want the Jellyfish policy's", i, r.Reason)
		}
		if down == nil && strings.Contains(r.Old, "det-480") && strings.Contains(r.New, "det-320") {
			down = &s.Replans[i]
		}
	}
	return down
}

// jellyfishRuns bounds the long form's runs: one that stepped down before
// the link fell, on what the machine made of the link's acks or the
// stream's rate (judged right by judgeDecisions), runs again.
const jellyfishRuns = 3

// jellyfishRun runs the test's query with the Jellyfish policy (rule: the
// default's, unless set) and judges every decision it made on what it read
// (judgeDecisions). It returns the run and its step down from det-480 to
// det-320, nil (the test failed) when there is none. In the long form
// (fall > 0) a run whose step down came before the link fell, every
// decision right on what the policy read (the unshaped link read slow, or
// the stream's rate over det-480's profile: a busy machine's acks and
// bursts), left nothing to judge of the fall: it runs again, up to
// jellyfishRuns in all, then fails naming what was read.
func jellyfishRun(t *testing.T, n int, trace string, fall int, rule control.Policy) (shapedRun, *control.Replan) {
	t.Helper()
	var early []string
	for try := 1; ; try++ {
		r := runShapedRule(t, n, trace, true, rule)
		s := r.summary
		t.Logf("run %d: replans %+v; dropped %v; latency %+v", try, s.Replans, s.Dropped, s.LatencyMs)
		var fell time.Time
		if fall > 0 {
			fell = r.linkStart.Add(time.Duration(fall) * time.Second)
		}
		judgeDecisions(t, r.decisions, fell)
		down := stepDown(t, s)
		if down == nil {
			t.Errorf("replans %+v: want a cut-over from det-480 to det-320 on the shaped link", s.Replans)
			return r, nil
		}
		if fall == 0 || t.Failed() {
			return r, down
		}
		if down.Cut == nil {
			t.Errorf("step down %+v: no cut-over times", down)
			return r, nil
		}
		if !down.Cut.Decided.Before(fell) {
			return r, down
		}
		// Stepped down before the fall, and right to on what it read:
		// the first decision that asked for it says what that was.
		for _, d := range r.decisions {
			if d.Reason != "" {
				_, why := carries(d, "det-480")
				early = append(early, fmt.Sprintf("run %d: %v before the fall, %s", try, fell.Sub(d.At).Round(time.Millisecond), why))
				break
			}
		}
		if try == jellyfishRuns {
			t.Errorf("every run stepped down before the link fell, on the machine's readings (%s): the fall was never judged", strings.Join(early, "; "))
			return r, nil
		}
		t.Logf("%s: the machine's reading, not the fall's: once more", early[len(early)-1])
	}
}

// keptRun runs the whole stream with the Jellyfish policy on a link that
// carries det-480 throughout (trace), judging every decision on what the
// policy read (judgeDecisions). A run that re-planned, each decision right
// on what it read (a busy machine's late acks read the fast link as slow,
// or a burst of frames read the stream's rate over det-480's profile: the
// machine's, not the policy's), left nothing to judge of keeping det-480:
// it runs again, up to jellyfishRuns in all, then fails naming what was
// read. A decision judged wrong fails the test at once.
func keptRun(t *testing.T, n int, trace string) shapedRun {
	t.Helper()
	var read []string
	for try := 1; ; try++ {
		r := runShaped(t, n, trace, true)
		judgeDecisions(t, r.decisions, time.Time{})
		if len(r.summary.Replans) == 0 || t.Failed() {
			return r
		}
		for _, d := range r.decisions {
			if d.Reason != "" {
				_, why := carries(d, "det-480")
				read = append(read, fmt.Sprintf("run %d: %q on %s", try, d.Reason, why))
				break
			}
		}
		if try == jellyfishRuns {
			t.Errorf("every run re-planned on the machine's readings (%s): keeping det-480 was never judged", strings.Join(read, "; "))
			return r
		}
		t.Logf("%s: the machine's reading, not the link's: once more", read[len(read)-1])
	}
}

// TestJellyfishShrinksTheDetectorOnAShapedLink is the Jellyfish policy
// acting on the scene-text workflow on the embedded cluster: the frames
// cross the edge->cloud link whole (an encoded frame has no adapt step:
// every detector variant costs the link the same bytes), so when the link
// is shaped its transfer time eats into the LATENCY bound and only a
// smaller detector side fits what is left. The policy reads the relay's
// ack estimate and has the coordinator cut the query over, at an epoch,
// from det-480 to det-320; every scene's rows are, row for row, the bare
// ONNX Runtime pipeline's for det-480 or for det-320 (nothing mixed, lost
// or duplicated; a scene missing was dropped past its deadline, counted).
//
// Short form: eight scenes on a link shaped from the start. Long form:
// the whole stream on a link that runs at 20 Mbit/s for 5 s from when
// the query opens it (the policy keeps det-480: the link leaves it its
// compute) and then falls: the policy steps down after the fall, within
// stepDownBound of it. Both forms judge every decision of the policy on
// what it read then (judgeDecisions, carries): det-480 kept while the
// link's acks and the stream's rate say it carries the stream within the
// bound, det-320 asked for when they say it does not. A step down before
// the fall that the readings called for (a busy machine's late acks read
// the fast link as slow, or a burst of frames read the stream's rate over
// det-480's profile) is the machine's, not the policy's: that run judged
// nothing of the fall, and the long form runs again (jellyfishRun). So
// does either form when every scene after the cut-over was dropped past
// its deadline (a machine too busy to compute one in time): no det-320
// row was there to judge.
func TestJellyfishShrinksTheDetectorOnAShapedLink(t *testing.T) {
	modelDir(t)
	sc := scenes(t)
	n, fall := 8, 0
	trace := fmt.Sprintf("t_s,kbit_s\n0,%d\n600,%d\n", shapedKbit, shapedKbit)
	if testenv.IsLong() {
		n, fall = len(sc), 5
		trace = fmt.Sprintf("t_s,kbit_s\n0,20000\n%d,%d\n600,%d\n", fall, shapedKbit, shapedKbit)
	}
	want480, want320 := referenceReads(t, sc, n, 480, 320), referenceReads(t, sc, n, 320, 320)
	var r shapedRun
	var down *control.Replan
	var answered map[string]int
	for try := 1; ; try++ {
		if r, down = jellyfishRun(t, n, trace, fall, nil); down == nil {
			return
		}
		answered = answeredBy(t, r.reads, map[string][]Read{"det-480": want480, "det-320": want320}, r.summary.Dropped["deadline"] > 0)
		// Every scene after the cut-over dropped past its deadline is
		// a machine too busy to compute one within the bound (counted,
		// as it should be): that run judged no det-320 row.
		if answered["det-320"] > 0 || r.summary.Dropped["deadline"] == 0 || try == jellyfishRuns || t.Failed() {
			break
		}
		t.Logf("run %d: no scene answered at det-320, %d dropped past their deadline: the machine's compute, which judges nothing of the cut-over: once more", try, r.summary.Dropped["deadline"])
	}
	s := r.summary
	if !strings.Contains(down.Reason, "detect: det-480 -> det-320 (320x320) for LATENCY 600 ms over edge-x2 ") {
		t.Errorf("step down %q: want the detector's variant and side named with the bound and the edge's link", down.Reason)
	}
	// The policy's view over time: the edge's uplink (the detector's
	// source), det-480 on it before the cut-over, at the link's first
	// rate (shaped from the start: what the policy stepped down on; in
	// the long form the unshaped link, which kept det-480: the timeline
	// samples once a second and the policy reacts faster, so a sample of
	// the fallen link on det-480 is there only by chance); not the
	// detector's own worker sending its crops on.
	first := shapedKbit
	if fall > 0 {
		first = 20000
	}
	before := false
	for _, x := range s.SLOTimeline {
		if x.Source != "edge-x2" {
			t.Errorf("SLO timeline sample %+v: want the edge's uplink only", x)
		}
		before = before || x.ShapedKbit == float64(first) && strings.Contains(x.Variants, "detect=det-480 (480x480)")
	}
	if !before {
		t.Errorf("SLO timeline %+v: want the edge at %d kbit/s on det-480 (480x480)", s.SLOTimeline, first)
	}
	if fall > 0 {
		fell := r.linkStart.Add(time.Duration(fall) * time.Second)
		after := down.Cut.Decided.Sub(fell)
		t.Logf("stepped down %v after the link fell (bound %v)", after, stepDownBound)
		if after > stepDownBound {
			t.Errorf("stepped down %v after the link fell, want within %v (two frames' acks at the shaped rate and a report)", after, stepDownBound)
		}
	}
	t.Logf("scenes answered: %v of %d", answered, n)
	if answered["det-320"] == 0 {
		t.Errorf("no scene answered at det-320 after the step down: %v", answered)
	}
	// Every scene answered once, or what is missing of it counted
	// dropped past its deadline: across the cut-over too.
	assertAccounted(t, r.reads, map[string][]Read{"det-480": want480, "det-320": want320}, s, "det-480", n)
}

// TestJellyfishTradeOnTheShapedLink measures what the policy trades on the
// whole stream (docs/ocr.md's table): the link at 20 Mbit/s with the
// policy, and at 640 kbit/s without it and with it: which detector answered
// the scenes, the lines read right against the labels (a box at IoU >= 0.5
// with the label's text), the rows dropped past their deadline, the
// latency and the share of rows over the bound. The unshaped link keeps
// det-480; the shaped one, with the policy, steps down. Every decision of
// the policy is judged on what it read (judgeDecisions); on the unshaped
// link a run that re-planned on a busy machine's readings runs again
// (keptRun).
func TestJellyfishTradeOnTheShapedLink(t *testing.T) {
	testenv.Long(t, "three runs of the whole stream on the embedded cluster, about 2 minutes on 2 cores")
	modelDir(t)
	sc := scenes(t)
	refs := map[string][]Read{"det-480": referenceReads(t, sc, len(sc), 480, 320), "det-320": referenceReads(t, sc, len(sc), 320, 320)}
	flat := func(kbit int) string { return fmt.Sprintf("t_s,kbit_s\n0,%d\n600,%d\n", kbit, kbit) }
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "| link | Jellyfish | scenes answered | lines read right | dropped past the deadline | latency p50 / p95 ms | rows over 600 ms |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range []struct {
		kbit      int
		jellyfish bool
	}{{20000, true}, {shapedKbit, false}, {shapedKbit, true}} {
		var r shapedRun
		if c.jellyfish && c.kbit != shapedKbit {
			r = keptRun(t, len(sc), flat(c.kbit))
		} else {
			r = runShaped(t, len(sc), flat(c.kbit), c.jellyfish)
			if c.jellyfish {
				judgeDecisions(t, r.decisions, time.Time{})
			}
		}
		s := r.summary
		answered := answeredBy(t, r.reads, refs, s.Dropped["deadline"] > 0)
		assertAccounted(t, r.reads, refs, s, "det-480", len(sc))
		down := stepDown(t, s)
		switch {
		case c.kbit == shapedKbit && c.jellyfish && down == nil:
			t.Errorf("%d kbit/s with the policy: replans %+v, want det-480 -> det-320", c.kbit, s.Replans)
		case c.kbit != shapedKbit && len(s.Replans) > 0:
			t.Errorf("%d kbit/s: replans %+v, want det-480 kept", c.kbit, s.Replans)
		}
		var keys []string
		for k := range answered {
			keys = append(keys, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(keys)))
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s: %d", k, answered[k]))
		}
		m := Match(sc, r.reads)
		miss := 0.0
		if s.SLOMissRate != nil {
			miss = *s.SLOMissRate
		}
		fmt.Fprintf(&tbl, "| %d kbit/s | %v | %s | %d of %d (%.1f%%) | %d | %.0f / %.0f | %.1f%% |\n", c.kbit, map[bool]string{true: "on", false: "off"}[c.jellyfish],
			strings.Join(parts, ", "), m.Correct, m.Lines, m.Accuracy(), s.Dropped["deadline"], s.LatencyMs.P50, s.LatencyMs.P95, 100*miss)
	}
	t.Logf("the trade on the whole stream (%d scenes, LATENCY <= 600 MS):\n%s", len(sc), tbl.String())
}
