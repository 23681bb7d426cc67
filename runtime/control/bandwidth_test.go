package control

import (
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
)

// TestLinkEstimatesCarryTheAckBandwidth: the sender end's ack-based
// bandwidth (already a one-second harmonic mean) and smoothed round trip
// reach the link's estimate as they are, beside the carried bytes.
func TestLinkEstimatesCarryTheAckBandwidth(t *testing.T) {
	l := NewLive()
	t0 := time.Unix(1000, 0)
	link := relay.LinkID{Query: "q", Edge: 0, Sender: 0, Receiver: 1}
	for k, bw := range []float64{0, 50_000, 25_000} {
		links := []relay.LinkStats{{Link: link, Direction: relay.Send, Bytes: uint64(k) * 30_000,
			AckBandwidthBps: bw, SRTT: time.Duration(k) * 40 * time.Millisecond, Acks: uint64(k * 10), ShapedBps: 50_000}}
		l.Observe(t0.Add(time.Duration(k)*time.Second), nil, links, nil, nil)
	}
	e := l.Estimates()
	if len(e.Links) != 1 {
		t.Fatalf("links %+v", e.Links)
	}
	ln := e.Links[0]
	near(t, "ack bandwidth", ln.AckBandwidthBps, 25_000)
	near(t, "srtt", ln.SRTTMs, 80)
	near(t, "carried", ln.BandwidthBps, 30_000)
	near(t, "shaped", ln.ShapedBps, 50_000)
}
