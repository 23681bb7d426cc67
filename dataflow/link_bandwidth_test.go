package dataflow

import (
	"reflect"
	"testing"
)

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
	if got := NewLinkBandwidth(ack, xfer); !reflect.DeepEqual(got, xfer) {
		t.Errorf("measured transfers: %+v, want them", got)
	}
	if got := NewLinkBandwidth(ack, LinkBandwidth{}); !reflect.DeepEqual(got, ack) {
		t.Errorf("no transfers: %+v, want the acks'", got)
	}
	s := LinkState{BandwidthBps: 50, LastBps: 20, TransferBps: 120, LastTransferBps: 110}
	if got := s.Bandwidth(); !reflect.DeepEqual(got, LinkBandwidth{Mean: 120, Latest: 110}) {
		t.Errorf("LinkState's view %+v", got)
	}
}

// The tail a bound is held with: n samples' smallest holds the next with
// probability n/(n+1), so p asks for p/(1-p) of them; the tail is the
// smallest of those, so a fall counts at its first slow sample and a rise
// once the slow one is older than the evidence.
func TestLinkBandwidthTail(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want int
	}{{0.5, 1}, {0.9, 9}, {0.98, 49}, {0.99, 99}, {0, 1}} {
		if got := EvidenceSamples(c.p); got != c.want {
			t.Errorf("EvidenceSamples(%v) = %d, want %d", c.p, got, c.want)
		}
	}
	if got := Attainment(0); got != DefaultAttainment {
		t.Errorf("no PERCENTILE: %v, want %v", got, DefaultAttainment)
	}
	if got := Attainment(99); got != 0.99 {
		t.Errorf("PERCENTILE 99: %v", got)
	}
	steady := make([]float64, 60)
	for i := range steady {
		steady[i] = 100
	}
	fell := append(append([]float64(nil), steady...), 30)
	for _, c := range []struct {
		name string
		b    LinkBandwidth
		p    float64
		want float64
	}{
		{"no samples: the batch's rule", LinkBandwidth{Mean: 100, Latest: 40}, 0.98, 40},
		{"steady", LinkBandwidth{Mean: 100, Samples: steady}, 0.98, 100},
		{"a fall, at its first sample", LinkBandwidth{Mean: 99, Samples: fell}, 0.98, 30},
		{"the fall 49 samples back: still evidence at 0.98", LinkBandwidth{Mean: 100, Samples: append(append([]float64(nil), fell...), steady[:48]...)}, 0.98, 30},
		{"the fall 50 samples back: aged out at 0.98", LinkBandwidth{Mean: 100, Samples: append(append([]float64(nil), fell...), steady[:49]...)}, 0.98, 100},
		{"the fall 50 samples back: still evidence at 0.99", LinkBandwidth{Mean: 100, Samples: append(append([]float64(nil), fell...), steady[:49]...)}, 0.99, 30},
		{"fewer samples than asked: the smallest there is", LinkBandwidth{Mean: 100, Samples: []float64{120, 80, 110}}, 0.98, 80},
	} {
		if got := c.b.TailBps(c.p); got != c.want {
			t.Errorf("%s: TailBps %v, want %v", c.name, got, c.want)
		}
	}
}
