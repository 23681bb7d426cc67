package relay_test

import (
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
)

// TestAckBandwidthSamples: a link's meter folds each acknowledged message
// into the one-second harmonic mean, the latest sample, and the larger of
// the last two (RecentAckBps: a drop counts once two acks in a row were
// slow, not at one slow ack).
func TestAckBandwidthSamples(t *testing.T) {
	m := relay.NewMeter(relay.LinkID{Query: "q"}, relay.Send)
	t0 := time.Now().Add(-600 * time.Millisecond)
	ack := func(k int, rt time.Duration) {
		sent := t0.Add(time.Duration(k) * 50 * time.Millisecond)
		m.Ack(10_000, sent, sent.Add(rt))
	}
	for k := range 8 {
		ack(k, 10*time.Millisecond) // 1 MB/s
	}
	st := m.Snapshot()
	if st.AckBandwidthBps != 1e6 || st.LastAckBps != 1e6 || st.RecentAckBps != 1e6 {
		t.Fatalf("steady link: mean %v, last %v, recent %v, want 1e6 each", st.AckBandwidthBps, st.LastAckBps, st.RecentAckBps)
	}
	ack(8, 100*time.Millisecond) // one slow ack: 100 kB/s
	st = m.Snapshot()
	if st.LastAckBps != 1e5 || st.RecentAckBps != 1e6 {
		t.Fatalf("one slow ack: last %v, recent %v, want 1e5 and still 1e6", st.LastAckBps, st.RecentAckBps)
	}
	ack(9, 50*time.Millisecond) // a second one: 200 kB/s
	st = m.Snapshot()
	if st.RecentAckBps != 2e5 {
		t.Fatalf("two slow acks: recent %v, want the larger of them, 2e5", st.RecentAckBps)
	}
	if st.AckBandwidthBps < 4e5 {
		t.Fatalf("two slow acks among ten: mean %v, want it still above 4e5 (it lags the drop)", st.AckBandwidthBps)
	}
}

// The transfer rate (round trip less the base, the least of the progress
// messages') keeps the larger of its last two samples too.
func TestTransferRecentSamples(t *testing.T) {
	m := relay.NewMeter(relay.LinkID{Query: "q"}, relay.Send)
	t0 := time.Now().Add(-600 * time.Millisecond)
	m.AckEmpty(t0, t0.Add(5*time.Millisecond)) // base round trip 5 ms
	ack := func(k int, rt time.Duration) {
		sent := t0.Add(time.Duration(k) * 50 * time.Millisecond)
		m.Ack(10_000, sent, sent.Add(rt))
	}
	ack(1, 15*time.Millisecond) // 10 ms on the link: 1 MB/s
	ack(2, 105*time.Millisecond)
	if st := m.Snapshot(); st.LastTransferBps != 1e5 || st.RecentTransferBps != 1e6 {
		t.Fatalf("one slow transfer: last %v, recent %v, want 1e5 and 1e6", st.LastTransferBps, st.RecentTransferBps)
	}
	ack(3, 55*time.Millisecond)
	if st := m.Snapshot(); st.RecentTransferBps != 2e5 {
		t.Fatalf("two slow transfers: recent %v, want 2e5", st.RecentTransferBps)
	}
}

// A link acknowledged thousands of times a second turns its samples over
// many times: the mean is still that of the last second's samples only,
// however often the window slid past the old ones.
func TestAckBandwidthWindowSlides(t *testing.T) {
	m := relay.NewMeter(relay.LinkID{Query: "q"}, relay.Send)
	const perSecond = 4000
	step := time.Second / perSecond
	t0 := time.Now().Add(-5 * time.Second)
	// Four seconds at 1 MB/s, then one second at 250 kB/s ending now.
	for k := range 5 * perSecond {
		sent := t0.Add(time.Duration(k) * step)
		rt := time.Millisecond
		if k >= 4*perSecond {
			rt = 4 * time.Millisecond
		}
		m.Ack(1000, sent, sent.Add(rt))
	}
	st := m.Snapshot()
	if st.AckBandwidthBps < 2.49e5 || st.AckBandwidthBps > 2.6e5 {
		t.Fatalf("after the rate fell a second ago: mean %v, want the last second's 2.5e5", st.AckBandwidthBps)
	}
}

// BenchmarkMeterAck is one ack's bookkeeping on a link acknowledged 4,000
// times a second (64-row batches at full speed, acks riding on grants),
// with a second of samples kept.
func BenchmarkMeterAck(b *testing.B) {
	m := relay.NewMeter(relay.LinkID{Query: "q"}, relay.Send)
	step := time.Second / 4000
	t0 := time.Now()
	for k := 0; k < b.N; k++ {
		sent := t0.Add(time.Duration(k) * step)
		m.Ack(17_800, sent, sent.Add(time.Millisecond))
	}
}
