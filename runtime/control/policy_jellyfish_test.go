package control

import (
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
)

// sizedZoo is a 14/20/28 zoo like examples/fashion/sizes.yaml's: float32
// frames plus a little framing per row.
func sizedZoo() []JFVariant {
	var zoo []JFVariant
	for i, side := range []int{14, 20, 28} {
		zoo = append(zoo, JFVariant{Name: []string{"fit-14", "fit-20", "fit-28"}[i], Side: side, Bytes: float64(side*side*4 + 64),
			Accuracy: []float64{0.84, 0.87, 0.89}[i], BatchMs: []float64{1, 1.2, 1.4, 1.6}})
	}
	return zoo
}

func jfInput(running string, kbits ...float64) PolicyInput {
	in := PolicyInput{Query: "q", Age: 5 * time.Second,
		Latency:   &LatencyInput{SLOMs: 100, Calls: []LatencyCall{{Call: "classify", Variant: running, Variants: sizedZoo()}}},
		Estimates: Estimates{Samples: 3, Operators: []OperatorEstimate{{Operator: "model classify", InputRate: 15 * float64(len(kbits))}}}}
	for i, k := range kbits {
		from := []string{"e1", "e2", "e3"}[i]
		in.Estimates.Links = append(in.Estimates.Links, LinkEstimate{Link: relay.LinkID{Query: "q", Edge: 1, Sender: uint32(i)},
			From: from, To: "h1", AckBandwidthBps: k * 1000 / 8})
	}
	return in
}

// The policy follows the slowest source's link: the largest variant while
// every link carries its frames in the budget, a smaller input size when
// one steps down, and back up when it recovers; nothing while the plan is
// young or the variant is already right.
func TestJellyfishPolicyFollowsTheLinks(t *testing.T) {
	p := DefaultJellyfish
	if d := p.Decide(jfInput("fit-28", 800, 800)); d != nil {
		t.Fatalf("800 kbit/s links, running fit-28: %+v, want no change", d)
	}
	d := p.Decide(jfInput("fit-28", 800, 200))
	if d == nil || d.Variants["classify"] != "fit-14" {
		t.Fatalf("one link at 200 kbit/s: %+v, want classify pinned to fit-14", d)
	}
	if !strings.Contains(d.Reason, "fit-28 -> fit-14 (14x14)") || !strings.Contains(d.Reason, "e2 200 kbit/s") {
		t.Errorf("reason %q", d.Reason)
	}
	if d := p.Decide(jfInput("fit-28", 350, 800)); d == nil || d.Variants["classify"] != "fit-20" {
		t.Fatalf("one link at 350 kbit/s: %+v, want fit-20", d)
	}
	if d := p.Decide(jfInput("fit-14", 800, 800)); d == nil || d.Variants["classify"] != "fit-28" {
		t.Fatalf("links back at 800 kbit/s, running fit-14: %+v, want fit-28", d)
	}
	young := jfInput("fit-28", 150)
	young.Age = 100 * time.Millisecond
	if d := p.Decide(young); d != nil {
		t.Fatalf("a plan 100 ms old was judged: %+v", d)
	}
	noSLO := jfInput("fit-28", 150)
	noSLO.Latency = nil
	if d := p.Decide(noSLO); d != nil {
		t.Fatalf("a query without LATENCY: %+v", d)
	}
}

// A step up to a larger input size from a plan the policy chose waits for
// the plan to be StepUpAge old and for the larger rows to fit with the
// step-up headroom: a cut-over pauses the stream, so the policy does not
// flap on an estimate near the edge. Stepping down is immediate. The
// submitted plan (no re-plan yet: the planner's smallest variant, chosen
// without live numbers) steps up as soon as the first acks allow.
func TestJellyfishStepsUpWithHeadroom(t *testing.T) {
	p := DefaultJellyfish
	young := jfInput("fit-14", 800)
	young.Age, young.Replans = 2*time.Second, 1
	if d := p.Decide(young); d != nil {
		t.Fatalf("running fit-14 for 2 s on 800 kbit/s: %+v, want no step up yet", d)
	}
	young.Replans = 0
	if d := p.Decide(young); d == nil || d.Variants["classify"] != "fit-28" {
		t.Fatalf("the submitted plan on fit-14 for 2 s on 800 kbit/s: %+v, want fit-28 at once", d)
	}
	first := jfInput("fit-14", 500)
	first.Age = p.MinAge
	if d := p.Decide(first); d == nil || d.Variants["classify"] != "fit-20" {
		t.Fatalf("the submitted plan on fit-14 at its first estimate, 500 kbit/s: %+v, want fit-20 (fit-28 does not fit in half the link)", d)
	}
	if d := p.Decide(jfInput("fit-14", 800)); d == nil || d.Variants["classify"] != "fit-28" {
		t.Fatalf("running fit-14 for 5 s on 800 kbit/s: %+v, want fit-28", d)
	}
	// 700 kbit/s carries fit-28's 15 frames a second (384 kbit/s) at 55%:
	// enough to stay on it (0.6), not to step up to it (0.5).
	if d := p.Decide(jfInput("fit-20", 700)); d != nil {
		t.Fatalf("running fit-20 on 700 kbit/s: %+v, want no step up to fit-28", d)
	}
	if d := p.Decide(jfInput("fit-28", 700)); d != nil {
		t.Fatalf("running fit-28 on 700 kbit/s: %+v, want it kept", d)
	}
	down := jfInput("fit-28", 400)
	down.Age = 1500 * time.Millisecond
	if d := p.Decide(down); d == nil || d.Variants["classify"] != "fit-20" {
		t.Fatalf("running fit-28 for 1.5 s on 400 kbit/s: %+v, want fit-20 at once", d)
	}
}

// With a call per source (a query over two cameras), each call follows its
// own source's link: the camera behind 150 kbit/s steps down to 14x14, the
// one at 800 kbit/s keeps 28x28, and the timeline shows each source its
// own call.
func TestJellyfishPolicyPerSource(t *testing.T) {
	in := jfInput("fit-28", 800, 150)
	in.Latency.Calls = []LatencyCall{
		{Call: "classify#1", Variant: "fit-28", Variants: sizedZoo(), Sources: []string{"e1"}},
		{Call: "classify#2", Variant: "fit-28", Variants: sizedZoo(), Sources: []string{"e2"}},
	}
	in.Estimates.Operators = []OperatorEstimate{{Operator: "model classify#1", InputRate: 15}, {Operator: "model classify#2", InputRate: 15}}
	d := DefaultJellyfish.Decide(in)
	if d == nil || len(d.Variants) != 1 || d.Variants["classify#2"] != "fit-14" {
		t.Fatalf("e2 at 150 kbit/s, e1 at 800: %+v, want classify#2 alone pinned to fit-14", d)
	}
	if strings.Contains(d.Reason, "e1") {
		t.Errorf("reason %q: e1 does not feed classify#2", d.Reason)
	}
	in.Latency.Calls[1].Variant = "fit-14"
	samples := SLOSamples(1, in.Estimates, in.Latency)
	if len(samples) != 2 || samples[0].Variants != "classify#1=fit-28 (28x28)" || samples[1].Variants != "classify#2=fit-14 (14x14)" {
		t.Errorf("timeline %+v: want each source with its own call", samples)
	}
	if d := DefaultJellyfish.Decide(in); d != nil {
		t.Errorf("each call on its link's variant: %+v, want no change", d)
	}
}

// A link that steps down shows in its last two acks before the one-second
// mean follows: the policy takes the lower, so it steps down at the
// second slow ack; one slow ack alone, or a recent rise, changes nothing.
func TestJellyfishStepsDownAtTheSecondSlowAck(t *testing.T) {
	p := DefaultJellyfish
	in := jfInput("fit-28", 900) // the mean still carries fit-28
	in.Estimates.Links[0].RecentAckBps = 300 * 1000 / 8
	if d := p.Decide(in); d == nil || d.Variants["classify"] != "fit-14" {
		t.Fatalf("mean 900 kbit/s, last two acks at 300: %+v, want fit-14 at once", d)
	}
	in.Estimates.Links[0].RecentAckBps = 2000 * 1000 / 8 // a rise: wait for the mean
	if d := p.Decide(in); d != nil {
		t.Fatalf("mean 900 kbit/s, last two acks at 2000: %+v, want fit-28 kept", d)
	}
	in = jfInput("fit-14", 900)
	in.Replans = 1
	in.Estimates.Links[0].RecentAckBps = 300 * 1000 / 8
	if d := p.Decide(in); d != nil {
		t.Fatalf("fit-14, mean 900 kbit/s, last two acks at 300: %+v, want no step up", d)
	}
}

// Where the relay knows the link's base round trip, the policy reads its
// transfer rate: small frames' acks (mostly base round trip) read a fast
// link as slow, and the policy would keep the stream small.
func TestJellyfishReadsTheTransferRate(t *testing.T) {
	in := jfInput("fit-14", 300) // the acks of 14x14 frames: 300 kbit/s
	in.Replans = 1
	in.Estimates.Links[0].TransferBps = 900 * 1000 / 8
	in.Estimates.Links[0].RecentTransferBps = 950 * 1000 / 8
	if d := DefaultJellyfish.Decide(in); d == nil || d.Variants["classify"] != "fit-28" {
		t.Fatalf("acks 300 kbit/s, transfer 900: %+v, want fit-28", d)
	}
	in.Estimates.Links[0].RecentTransferBps = 300 * 1000 / 8 // the last two transfers slow
	if d := DefaultJellyfish.Decide(in); d != nil {
		t.Fatalf("transfer mean 900 kbit/s, last two at 300: %+v, want fit-14 kept", d)
	}
}

// With the adapt step picking each batch's side, the pinned variant is a
// ceiling that only compute holds down: a link that would not carry
// fit-28's frames (350 kbit/s, 150 kbit/s) keeps it (the adapt step sends
// the batches small), a ceiling below it steps up whatever the link, and
// where compute holds it up (fit-28 at 150 ms a call) it steps down.
func TestJellyfishSidesPerBatchCeilingIsCompute(t *testing.T) {
	p := DefaultJellyfish
	sided := func(running string, kbit float64) PolicyInput {
		in := jfInput(running, kbit)
		in.Latency.Calls[0].SidesPerBatch = true
		return in
	}
	if d := p.Decide(jfInput("fit-28", 350)); d == nil || d.Variants["classify"] != "fit-20" {
		t.Fatalf("frames at the variant's size over a 350 kbit/s link: %+v, want fit-20", d)
	}
	for _, kbit := range []float64{350, 150} {
		if d := p.Decide(sided("fit-28", kbit)); d != nil {
			t.Fatalf("sides per batch over a %v kbit/s link: %+v, want fit-28 kept", kbit, d)
		}
	}
	if d := p.Decide(sided("fit-14", 150)); d == nil || d.Variants["classify"] != "fit-28" {
		t.Fatalf("sides per batch from fit-14 over a 150 kbit/s link: %+v, want the ceiling at fit-28", d)
	}
	slow := sided("fit-28", 150)
	slow.Latency.Calls[0].Variants[2].BatchMs = []float64{150, 160, 170, 180}
	if d := p.Decide(slow); d == nil || d.Variants["classify"] == "fit-28" {
		t.Fatalf("sides per batch, fit-28 at 150 ms a call: %+v, want a smaller ceiling", d)
	}
}

// The first plan of a call whose batches follow their link is the
// ceiling Decide would set at the first report (no links yet, no rate);
// a call whose frames go whole waits for its links.
func TestJellyfishFirstPlanSetsTheCeiling(t *testing.T) {
	p := DefaultJellyfish
	in := jfInput("fit-14").Latency
	if d := p.FirstPlan(in); d != nil {
		t.Fatalf("whole frames: %+v, want nothing before the links are measured", d)
	}
	in.Calls[0].SidesPerBatch = true
	if d := p.FirstPlan(in); d == nil || d.Variants["classify"] != "fit-28" {
		t.Fatalf("sides per batch from fit-14: %+v, want the ceiling at fit-28", d)
	}
	in.Calls[0].Variant = "fit-28"
	if d := p.FirstPlan(in); d != nil {
		t.Fatalf("sides per batch on fit-28: %+v, want it kept", d)
	}
	in.Calls[0].Variant = "fit-14"
	in.Calls[0].Variants[2].BatchMs = []float64{150, 160, 170, 180}
	if d := p.FirstPlan(in); d == nil || d.Variants["classify"] != "fit-20" {
		t.Fatalf("fit-28 at 150 ms a call under a 100 ms bound: %+v, want fit-20", d)
	}
	whole := p
	whole.WholeFrames = true
	in.Calls[0].Variants[2].BatchMs = []float64{1, 1.2, 1.4, 1.6}
	if d := whole.FirstPlan(in); d != nil {
		t.Fatalf("WholeFrames: %+v, want nothing", d)
	}
}

// A call no operator runs (its name before the plan split it per source)
// is left alone.
func TestJellyfishLeavesACallNotRunning(t *testing.T) {
	gone := jfInput("fit-28", 150)
	gone.Estimates.Operators = nil
	if d := DefaultJellyfish.Decide(gone); d != nil {
		t.Fatalf("a call no operator runs: %+v", d)
	}
}

// frameZoo is examples/ocr's detector: one network at three input sides,
// called on encoded frames that cross the link whole (18.2 KiB each,
// whatever the side), with by-batch latencies as a side's pixels make them.
func frameZoo() []JFVariant {
	frame := 18.2*1024 + 64
	return []JFVariant{
		{Name: "det-320", Side: 320, Bytes: frame, Accuracy: 0.82, BatchMs: []float64{100, 180}},
		{Name: "det-480", Side: 480, Bytes: frame, Accuracy: 0.98, BatchMs: []float64{220, 390}},
		{Name: "det-640", Side: 640, Bytes: frame, Accuracy: 0.93, BatchMs: []float64{460, 1200}},
	}
}

// On a call whose frames cross whole, a slower link costs every variant the
// same bytes and leaves each the same less of the bound to compute in
// (eq. 1): det-480 while a frame's transfer leaves it twice its call,
// det-320 when the link falls to 640 kbit/s (a frame takes 235 ms of the
// 600), and back to det-480 when it recovers, held as any step up is
// (a larger side is a step up at equal bytes: JFVariant.larger).
func TestJellyfishShrinksAnEncodedFrameCallByCompute(t *testing.T) {
	p := DefaultJellyfish
	in := func(running string, kbit float64, age time.Duration, replans int) PolicyInput {
		return PolicyInput{Query: "q", Age: age, Replans: replans,
			Latency: &LatencyInput{SLOMs: 600, Calls: []LatencyCall{{Call: "detect", Variant: running, Variants: frameZoo(), Sources: []string{"edge"}}}},
			Estimates: Estimates{Samples: 3, Operators: []OperatorEstimate{{Operator: "model detect", InputRate: 2}},
				Links: []LinkEstimate{
					{Link: relay.LinkID{Query: "q", Edge: 1}, From: "edge", To: "cloud-1", AckBandwidthBps: kbit * 1000 / 8},
					// The detector's worker sending crops on: not a client.
					{Link: relay.LinkID{Query: "q", Edge: 2}, From: "cloud-1", To: "cloud-2", AckBandwidthBps: 100},
				}}}
	}
	if d := p.Decide(in("det-480", 20000, 5*time.Second, 0)); d != nil {
		t.Fatalf("det-480 on 20 Mbit/s: %+v, want it kept", d)
	}
	d := p.Decide(in("det-480", 640, 5*time.Second, 0))
	if d == nil || d.Variants["detect"] != "det-320" || !strings.Contains(d.Reason, "det-480 -> det-320 (320x320)") {
		t.Fatalf("det-480 on 640 kbit/s: %+v, want det-320", d)
	}
	if d := p.Decide(in("det-320", 20000, 2*time.Second, 1)); d != nil {
		t.Fatalf("det-320, chosen 2 s ago, on 20 Mbit/s: %+v, want the step up held", d)
	}
	if d := p.Decide(in("det-320", 20000, 6*time.Second, 1)); d == nil || d.Variants["detect"] != "det-480" {
		t.Fatalf("det-320, chosen 6 s ago, on 20 Mbit/s: %+v, want det-480 back", d)
	}
}
