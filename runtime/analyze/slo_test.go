package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
)

// The latency-SLO timeline prints, per source, the bandwidth the acks
// estimate beside the shaped one and the variant (input size) run, a row
// each time one of them changed, not every second.
func TestSLOTimelineShowsBandwidthAndVariantOverTime(t *testing.T) {
	lat := &control.LatencyInput{SLOMs: 100, Calls: []control.LatencyCall{{Call: "classify", Variant: "fit-28",
		Variants: []control.JFVariant{{Name: "fit-14", Side: 14}, {Name: "fit-28", Side: 28}}}}}
	link := func(kbit, shaped float64) control.Estimates {
		return control.Estimates{Samples: 2, Links: []control.LinkEstimate{
			{Link: relay.LinkID{Query: "q", Edge: 1}, From: "e1", To: "h1", AckBandwidthBps: kbit * 1000 / 8, ShapedBps: shaped * 1000 / 8},
			{Link: relay.LinkID{Query: "q", Edge: 2}, From: "h1", To: "h1"}, // local: no client
		}}
	}
	var tl []control.SLOSample
	tl = append(tl, control.SLOSamples(1, link(7900, 8000), lat)...)
	tl = append(tl, control.SLOSamples(2, link(7800, 8000), lat)...) // no change worth a row
	tl = append(tl, control.SLOSamples(3, link(2300, 2400), lat)...)
	lat.Calls[0].Variant = "fit-14"
	tl = append(tl, control.SLOSamples(4, link(2350, 2400), lat)...)
	if len(tl) != 4 || tl[0].Source != "e1" || tl[0].Variants != "classify=fit-28 (28x28)" {
		t.Fatalf("samples %+v", tl)
	}
	r := &Report{Query: "q", State: "finished", SLOTimeline: tl}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "latency SLO by source")
	if i < 0 {
		t.Fatalf("no SLO timeline:\n%s", out)
	}
	sec := out[i:]
	for _, want := range []string{"ack est kbit/s", "shaped kbit/s", "7900", "8000", "2300", "2400", "classify=fit-28 (28x28)", "classify=fit-14 (14x14)"} {
		if !strings.Contains(sec, want) {
			t.Errorf("SLO timeline lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "7800") {
		t.Errorf("a sample that changed nothing was printed:\n%s", sec)
	}
}
