package dataflow

import (
	"reflect"
	"slices"
	"testing"
	"time"
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

// The evidence a bound is held with: n samples' smallest holds the next
// with probability n/(n+1), so p asks for p/(1-p) of them.
func TestEvidenceSamples(t *testing.T) {
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
}

// runs is samples as runs of (value, count) pairs, oldest first.
func runs(rs ...float64) []float64 {
	var out []float64
	for i := 0; i+1 < len(rs); i += 2 {
		for range int(rs[i+1]) {
			out = append(out, rs[i])
		}
	}
	return out
}

// A bound holds for the next message by how the samples moved from where
// the link is now: the share of the samples on the current one's side of
// the bound whose successor fell under it, (u+1)/(n+1) at most 1-p, on at
// least the evidence p asks for (49 transitions for 0.98), whatever the
// samples were. A message overdue on the link is the current evidence when
// it bounds the bandwidth lower.
func TestLinkRiskHolds(t *testing.T) {
	var dips []float64
	for range 60 {
		dips = append(dips, runs(100, 10, 30, 1)...)
	}
	for _, c := range []struct {
		name string
		b    LinkBandwidth
		bps  float64
		p    float64
		want bool
	}{
		{"no samples: no evidence", LinkBandwidth{Mean: 100, Latest: 90}, 80, 0.98, false},
		{"steady over the bound", LinkBandwidth{Samples: runs(100, 60)}, 80, 0.98, true},
		{"now under the bound", LinkBandwidth{Samples: runs(100, 60, 30, 1)}, 80, 0.98, false},
		{"back after a long slow spell: too little evidence over the bound", LinkBandwidth{Samples: runs(30, 200, 100, 2)}, 80, 0.98, false},
		{"back after a slow spell to a level long held before it", LinkBandwidth{Samples: runs(100, 120, 30, 200, 100, 2)}, 80, 0.98, true},
		{"a few samples that never fell", LinkBandwidth{Samples: runs(100, 5)}, 80, 0.98, false},
		{"one fall in 150: 2/151 within 2%", LinkBandwidth{Samples: runs(100, 100, 30, 5, 100, 55)}, 80, 0.98, true},
		{"one fall in 150: over 1%", LinkBandwidth{Samples: runs(100, 100, 30, 5, 100, 55)}, 80, 0.99, false},
		{"fades: a fall in every 60 good samples", LinkBandwidth{Samples: runs(100, 60, 30, 5, 100, 60, 30, 5, 100, 60, 30, 5, 100, 10)}, 80, 0.98, false},
		{"the same fades under a lower bound: never fell under it", LinkBandwidth{Samples: runs(100, 60, 30, 5, 100, 60, 30, 5, 100, 60, 30, 5, 100, 10)}, 25, 0.98, true},
		{"a one-sample dip that always came back (60 times): under now, over next", LinkBandwidth{Samples: dips}, 80, 0.98, true},
		{"the same with 40 dips: too little evidence for a sample under the bound", LinkBandwidth{Samples: dips[len(dips)-40*11:]}, 80, 0.98, false},
		{"good samples, a message overdue under the bound", LinkBandwidth{Samples: runs(100, 60), Overdue: 40}, 80, 0.98, false},
		{"good samples, an overdue bound over it", LinkBandwidth{Samples: runs(100, 60), Overdue: 500}, 80, 0.98, true},
	} {
		if got := c.b.Risk(c.bps, nil).Holds(c.p); got != c.want {
			t.Errorf("%s: Risk(%v).Holds(%v) = %v, want %v", c.name, c.bps, c.p, got, c.want)
		}
	}
}

// A message overdue on the link by more than the link ever fell is a fall
// no sample has shown: it counts as one more fall under any bound, so a
// bound 60 good samples held no longer holds, and its risk says so
// (Falling). A link whose samples once fell that far, or that drifts by
// small steps, has seen it: nothing changes.
func TestLinkRiskFallingUnseen(t *testing.T) {
	walk := []float64{100}
	for i := range 80 {
		walk = append(walk, walk[len(walk)-1]*[]float64{0.9, 1.12, 0.95, 1.05}[i%4])
	}
	for _, c := range []struct {
		name    string
		b       LinkBandwidth
		falling bool
		holds   bool
	}{
		{"60 good samples, a message overdue at 0.6 of them", LinkBandwidth{Samples: runs(100, 60), Overdue: 60}, true, false},
		{"the same link once fell to 0.55", LinkBandwidth{Samples: runs(100, 60, 55, 1, 100, 60), Overdue: 60}, false, true},
		{"the same message not yet overdue", LinkBandwidth{Samples: runs(100, 60), Overdue: 120}, false, true},
		{"a walk of 10% steps, overdue at 0.92 of its latest", LinkBandwidth{Samples: walk, Overdue: 0.92 * walk[len(walk)-1]}, false, true},
		{"the walk, overdue at 0.5 of its latest", LinkBandwidth{Samples: walk, Overdue: 0.5 * walk[len(walk)-1]}, true, false},
	} {
		least := slices.Min(c.b.Samples)
		r := c.b.Risk(least/3, nil)
		if c.b.FallingUnseen() != c.falling || r.Falling != c.falling {
			t.Errorf("%s: FallingUnseen %v, risk %+v, want falling %v", c.name, c.b.FallingUnseen(), r, c.falling)
		}
		if got := r.Holds(0.98); got != c.holds {
			t.Errorf("%s: a bound a third of the least sample holds %v, want %v (%+v)", c.name, got, c.holds, r)
		}
		if c.falling && !r.Fell {
			t.Errorf("%s: the unseen fall is not counted as one: %+v", c.name, r)
		}
	}
}

// A fall whose damage outlasts the message costs what its cost says: three
// falls in 300 good samples hold at 2% when each costs one message, not
// when each costs three (a large frame and the two behind it); the cost is
// asked of the sample the link fell to, and never counts under one. The
// loss, what a message costs if the link falls under it, is the dearest.
func TestLinkRiskPricesTheFall(t *testing.T) {
	b := LinkBandwidth{Samples: runs(100, 100, 30, 1, 100, 100, 20, 1, 100, 100, 30, 1, 100, 10)}
	if r := b.Risk(80, nil); !r.Holds(0.98) || r.N != 309 || !r.Fell || !r.Above {
		t.Fatalf("falls at one each: %+v, want to hold on 309 transitions", r)
	}
	var asked []float64
	r := b.Risk(80, func(fall []float64) float64 { asked = append(asked, fall...); return 3 })
	if r.Holds(0.98) {
		t.Errorf("falls at three each: %+v holds", r)
	}
	if want := (9.0 + 3) / 310; r.Expected != want {
		t.Errorf("expected cost %v, want %v", r.Expected, want)
	}
	if r.Loss != 3 {
		t.Errorf("loss %v, want 3: what the next message costs if the link falls under it", r.Loss)
	}
	if r := b.Risk(10, func([]float64) float64 { return 3 }); r.Fell || r.Loss != 1 {
		t.Errorf("a need the link never fell under: %+v, want a loss of one message", r)
	}
	if !reflect.DeepEqual(asked, []float64{30, 20, 30, 20}) {
		t.Errorf("cost asked of %v, want the samples fallen to, then the least (the next, unseen)", asked)
	}
	if r := b.Risk(80, func([]float64) float64 { return 0 }); r.Expected != (3.0+1)/310 {
		t.Errorf("a cost under one: %v, want each fall at one", r.Expected)
	}
}

// A message is acknowledged at the first ack event that covered it, not at
// the latest: a reader that looks once a batch and finds two acks since
// (its batch's and the next one's) settles its batch at its own.
func TestAckedAtIsTheFirstEventThatCovered(t *testing.T) {
	t0 := time.Unix(100, 0)
	st := LinkState{Acks: 9, LastAck: t0.Add(90 * time.Millisecond), AckTimes: []AckTime{
		{Acked: 5, At: t0}, {Acked: 7, At: t0.Add(30 * time.Millisecond)}, {Acked: 8, At: t0.Add(60 * time.Millisecond)}, {Acked: 9, At: t0.Add(90 * time.Millisecond)}}}
	for n, want := range map[uint64]time.Time{6: t0.Add(30 * time.Millisecond), 7: t0.Add(30 * time.Millisecond), 8: t0.Add(60 * time.Millisecond), 9: st.LastAck, 3: t0} {
		if got := st.AckedAt(n); !got.Equal(want) {
			t.Errorf("message %d acknowledged at %v, want %v", n, got.Sub(t0), want.Sub(t0))
		}
	}
	if got := st.AckedAt(10); !got.IsZero() {
		t.Errorf("message 10, not acknowledged yet: %v, want the zero time", got)
	}
	// Events no longer kept: the latest ack bounds it.
	if got := (LinkState{Acks: 4, LastAck: t0}).AckedAt(2); !got.Equal(t0) {
		t.Errorf("no events kept: %v, want LastAck", got)
	}
}

// A fall under way that the link makes on at most 1-p of its transitions is
// read from those falls alone, each scaled to the latest sample: the share
// that ends under a need. A fall as common as more than 1-p of them (a
// walk's drift), one not under way, and one no sample has shown
// (FallingUnseen's) are not read here.
func TestLinkBandwidthFallUnderWay(t *testing.T) {
	walk := []float64{100}
	for i := range 80 {
		walk = append(walk, walk[len(walk)-1]*[]float64{0.9, 1.12, 0.95, 1.05}[i%4])
	}
	rare := LinkBandwidth{Samples: runs(130, 20, 67, 100), Overdue: 45}
	under, ok := rare.FallUnderWay(0.98)
	if !ok {
		t.Fatalf("one fall of 0.52 in 119 transitions, overdue at 0.67 of the latest: not read")
	}
	if got := under(40); got != 1 {
		t.Errorf("the fall scaled to the latest ends at 34.8: share under 40 %v, want 1", got)
	}
	if got := under(30); got != 0 {
		t.Errorf("share under 30 %v, want 0", got)
	}
	for _, c := range []struct {
		name string
		b    LinkBandwidth
	}{
		{"the walk, overdue at 0.92 of its latest: a fall that deep on a quarter of its transitions", LinkBandwidth{Samples: walk, Overdue: 0.92 * walk[len(walk)-1]}},
		{"nothing overdue under the latest", LinkBandwidth{Samples: runs(130, 20, 67, 100), Overdue: 70}},
		{"a fall no sample has shown", LinkBandwidth{Samples: runs(100, 60), Overdue: 60}},
		{"two falls that deep in 40 transitions, over 1-p", LinkBandwidth{Samples: runs(130, 10, 67, 10, 130, 10, 67, 11), Overdue: 45}},
	} {
		if _, ok := c.b.FallUnderWay(0.98); ok {
			t.Errorf("%s: read as a rare fall under way", c.name)
		}
	}
}
