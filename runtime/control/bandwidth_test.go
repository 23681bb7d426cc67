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

// TestAckBandwidthIsTakenAtEveryReport: a report closer than MinInterval
// to the last sample (another worker reported just before) adds no rate
// sample, but the sender's ack bandwidth, a mean over the last second
// already, replaces the link's at once: the latency-SLO policy, asked at
// every report, sees a link step down at its sender's next report.
func TestAckBandwidthIsTakenAtEveryReport(t *testing.T) {
	l := NewLive()
	t0 := time.Unix(1000, 0)
	link := relay.LinkID{Query: "q", Edge: 0, Sender: 0, Receiver: 1}
	send := func(at time.Duration, bytes uint64, bw float64) {
		l.Observe(t0.Add(at), nil, []relay.LinkStats{{Link: link, Direction: relay.Send, Bytes: bytes, AckBandwidthBps: bw,
			SRTT: 20 * time.Millisecond, Acks: bytes / 1000}}, nil, nil)
	}
	send(0, 0, 0)
	send(time.Second, 100_000, 100_000)
	send(1200*time.Millisecond, 110_000, 30_000) // 200 ms later: no rate sample
	e := l.Estimates()
	if e.Samples != 1 {
		t.Fatalf("%d samples, want 1: a report 200 ms after the last is not a rate sample", e.Samples)
	}
	near(t, "ack bandwidth", e.Links[0].AckBandwidthBps, 30_000)
	near(t, "carried", e.Links[0].BandwidthBps, 100_000)
}
