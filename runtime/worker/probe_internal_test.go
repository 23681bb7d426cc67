package worker

import (
	"testing"

	"github.com/tierflow/tierflow/relay"
)

// A LATENCY query's part reports a link early when its ack bandwidth fell
// below linkDrop of the last report's, on the sending end only, and not
// for a link it has not reported yet.
func TestLinkDropped(t *testing.T) {
	up := relay.LinkID{Query: "q", Edge: 1}
	other := relay.LinkID{Query: "q", Edge: 2}
	reported := ackBandwidths([]relay.LinkStats{
		{Link: up, Direction: relay.Send, AckBandwidthBps: 100_000},
		{Link: other, Direction: relay.Recv, AckBandwidthBps: 100_000},
	})
	for _, c := range []struct {
		name  string
		links []relay.LinkStats
		want  bool
	}{
		{"steady", []relay.LinkStats{{Link: up, Direction: relay.Send, AckBandwidthBps: 90_000}}, false},
		{"stepped down", []relay.LinkStats{{Link: up, Direction: relay.Send, AckBandwidthBps: 60_000}}, true},
		{"stepped up", []relay.LinkStats{{Link: up, Direction: relay.Send, AckBandwidthBps: 300_000}}, false},
		{"receiving end", []relay.LinkStats{{Link: other, Direction: relay.Recv, AckBandwidthBps: 10_000}}, false},
		{"not reported yet", []relay.LinkStats{{Link: other, Direction: relay.Send, AckBandwidthBps: 10_000}}, false},
	} {
		if got := linkDropped(c.links, reported); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
