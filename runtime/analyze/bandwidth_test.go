package analyze

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tierflow/tierflow/relay"
	"github.com/tierflow/tierflow/runtime/control"
)

// TestLinkEstimatesShowAckAndShapedBandwidth: a link shaped by a trace is
// printed with what the acks estimate beside what the trace gave it.
func TestLinkEstimatesShowAckAndShapedBandwidth(t *testing.T) {
	r := &Report{Query: "q", State: "finished", Estimates: &control.Estimates{Samples: 3, Links: []control.LinkEstimate{
		{Link: relay.LinkID{Query: "q", Edge: 1}, From: "e1", To: "h1", BandwidthBps: 40_000, RTTMs: 1, AckBandwidthBps: 45_000, ShapedBps: 50_000, SRTTMs: 72},
		{Link: relay.LinkID{Query: "q", Edge: 2, Receiver: 1}, From: "h1", To: "c1", BandwidthBps: 1000, RTTMs: 1},
	}}}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "live link estimates")
	if i < 0 {
		t.Fatalf("no link estimates:\n%s", out)
	}
	sec := out[i:]
	for _, want := range []string{"ack est kbit/s", "shaped kbit/s", "srtt ms", "360", "400", "72"} {
		if !strings.Contains(sec, want) {
			t.Errorf("link estimates lack %q:\n%s", want, sec)
		}
	}
	if lines := strings.Split(sec, "\n"); !strings.Contains(strings.Join(lines, "\n"), "-") {
		t.Errorf("an unshaped link should print - :\n%s", sec)
	}
}
