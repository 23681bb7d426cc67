package dataflow

import "testing"

// The two rules over the one view: a plan takes a drop at its second slow
// ack (the larger of the latest two under the mean), a batch at its first
// if it is a real step (under LinkDropRatio of the mean); neither takes a
// rise until the mean has it; the transfer rate stands for the acks'
// where the sender measures it.
func TestLinkBandwidthRules(t *testing.T) {
	for _, c := range []struct {
		name        string
		b           LinkBandwidth
		plan, batch float64
	}{
		{"steady", LinkBandwidth{Mean: 100, Latest: 95, Recent: 98}, 98, 100},
		{"one slow ack", LinkBandwidth{Mean: 100, Latest: 40, Recent: 100}, 100, 40},
		{"jitter", LinkBandwidth{Mean: 100, Latest: 70, Recent: 100}, 100, 100},
		{"two slow acks", LinkBandwidth{Mean: 100, Latest: 40, Recent: 45}, 45, 40},
		{"a rise", LinkBandwidth{Mean: 100, Latest: 300, Recent: 300}, 100, 100},
		{"no ack yet", LinkBandwidth{}, 0, 0},
	} {
		if got := c.b.PlanBps(); got != c.plan {
			t.Errorf("%s: PlanBps %v, want %v", c.name, got, c.plan)
		}
		if got := c.b.BatchBps(); got != c.batch {
			t.Errorf("%s: BatchBps %v, want %v", c.name, got, c.batch)
		}
	}
	ack, xfer := LinkBandwidth{Mean: 50, Latest: 50}, LinkBandwidth{Mean: 120, Latest: 110}
	if got := NewLinkBandwidth(ack, xfer); got != xfer {
		t.Errorf("measured transfers: %+v, want them", got)
	}
	if got := NewLinkBandwidth(ack, LinkBandwidth{}); got != ack {
		t.Errorf("no transfers: %+v, want the acks'", got)
	}
	s := LinkState{BandwidthBps: 50, LastBps: 20, TransferBps: 120, LastTransferBps: 110}
	if got := s.Bandwidth(); got != (LinkBandwidth{Mean: 120, Latest: 110}) {
		t.Errorf("LinkState's view %+v", got)
	}
}
