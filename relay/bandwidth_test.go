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
