package control

import (
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/relay"
)

// driftInput is a query planned at 100 rows/s, its model call mlp on h1 at
// 0.5 ms per item, 1 MB/s over edge->hub, with the live estimates given.
func driftInput(ops []OperatorEstimate, links []LinkEstimate) PolicyInput {
	return PolicyInput{Query: "q", Workers: []string{"e1", "h1", "c1"}, Registered: []string{"c1", "e1", "h1"}, Age: time.Minute,
		Estimates: Estimates{Samples: 5, Operators: ops, Links: links},
		Assumed: &Assumed{
			Streams: []AssumedStream{{Stream: "s", Rate: 100}},
			Models:  []AssumedModel{{Call: "m", Variant: "mlp", Workers: []string{"h1"}, MsPerItem: 0.5, Demand: 50}},
			Links:   []AssumedLink{{From: "edge", To: "hub", NeedBps: 1e6}},
			Tiers:   map[string]string{"e1": "edge", "h1": "hub", "c1": "cloud"},
		}}
}

func TestDriftThresholds(t *testing.T) {
	link := func(bps, stalled float64) []LinkEstimate {
		return []LinkEstimate{{Link: relay.LinkID{Query: "q"}, From: "e1", To: "h1", BandwidthBps: bps, Stalled: stalled}}
	}
	// The plan expects the filter before m to keep half the rows.
	ops := func(rate, msPerBatch float64) []OperatorEstimate {
		return []OperatorEstimate{{Operator: "scan s", InputRate: rate}, {Operator: "model m", InputRate: rate / 2, BatchRows: 10, ModelMsPerBatch: msPerBatch}}
	}
	kept := func(share float64) []OperatorEstimate {
		return []OperatorEstimate{{Operator: "scan s", InputRate: 100}, {Operator: "model m", InputRate: 100 * share, BatchRows: 10, ModelMsPerBatch: 5}}
	}
	p := Drift{Factor: 2, MinStalled: 0.2, MinAge: time.Second, MinSamples: 3}
	for _, c := range []struct {
		name  string
		in    PolicyInput
		want  string // in the reason; "" for no decision
		check func(*testing.T, *Overrides)
	}{
		{name: "as planned", in: driftInput(ops(110, 6), link(1.1e6, 0.05))},
		{name: "just under 2x", in: driftInput(ops(199, 9.9), link(1e6, 0))},
		{name: "rate up", in: driftInput(ops(250, 5), link(2.5e6, 0)), want: "stream s at 250 rows/s, planned 100",
			check: func(t *testing.T, o *Overrides) {
				if o.StreamRates["s"] != 250 || len(o.Models) != 0 || len(o.Links) != 0 {
					t.Errorf("overrides %+v, want the stream's rate alone", o)
				}
			}},
		// A rate under the plan's is a pause or an end: no trigger.
		{name: "rate down", in: driftInput(ops(10, 5), link(1e5, 0))},
		{name: "model slower", in: driftInput(ops(100, 11), link(1e6, 0)), want: "model m (mlp) at 1.1 ms per item, planned 0.5",
			check: func(t *testing.T, o *Overrides) {
				if len(o.Models) != 1 || o.Models[0].MsPerItem != 1.1 || o.Models[0].Workers[0] != "h1" || o.Models[0].Variant != "mlp" {
					t.Errorf("overrides %+v, want mlp on h1 at 1.1 ms", o)
				}
			}},
		{name: "model faster", in: driftInput(ops(100, 2), link(1e6, 0)), want: "model m (mlp) at 0.2 ms per item"},
		{name: "link short and stalled", in: driftInput(ops(100, 5), link(4e4, 0.9)), want: "link edge->hub carries 4e+04 B/s, the plan needs 1e+06",
			check: func(t *testing.T, o *Overrides) {
				if len(o.Links) != 1 || o.Links[0] != (LinkCapacity{From: "edge", To: "hub", Bps: 4e4}) {
					t.Errorf("overrides %+v, want edge->hub at 40 kB/s", o)
				}
			}},
		{name: "filter keeps all", in: driftInput(kept(1.01), link(1e6, 0)), want: "1.01 rows into model m per row of s, planned 0.5",
			check: func(t *testing.T, o *Overrides) {
				if len(o.InputRatios) != 1 || o.InputRatios["m"] != 1.01 {
					t.Errorf("overrides %+v, want m's input ratio 1.01", o)
				}
			}},
		{name: "filter keeps a fifth", in: driftInput(kept(0.2), link(1e6, 0)), want: "0.2 rows into model m per row of s"},
		{name: "filter within 2x", in: driftInput(kept(0.9), link(1e6, 0))},
		// A paused stream says nothing of its filter.
		{name: "stream paused", in: driftInput([]OperatorEstimate{{Operator: "scan s", InputRate: 10}, {Operator: "model m", InputRate: 10, BatchRows: 10, ModelMsPerBatch: 5}}, nil)},
		// Short but not waiting: the source sends less, the link is fine.
		{name: "link a little short, stalled", in: driftInput(ops(100, 5), link(6e5, 0.9))},
		{name: "link short, not stalled", in: driftInput(ops(100, 5), link(4e4, 0.05))},
		{name: "too young", in: func() PolicyInput { in := driftInput(ops(500, 50), nil); in.Age = 500 * time.Millisecond; return in }()},
		{name: "too few samples", in: func() PolicyInput { in := driftInput(ops(500, 50), nil); in.Estimates.Samples = 2; return in }()},
		{name: "placed by rules", in: func() PolicyInput { in := driftInput(ops(500, 50), nil); in.Assumed = nil; return in }()},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(c.in)
			if c.want == "" {
				if d != nil {
					t.Fatalf("decided %+v, want nothing", d)
				}
				return
			}
			if d == nil || !strings.Contains(d.Reason, c.want) || d.Live == nil || len(d.Exclude) != 0 {
				t.Fatalf("decision %+v, want live numbers for %q", d, c.want)
			}
			if c.check != nil {
				c.check(t, d.Live)
			}
		})
	}
}

// TestPoliciesCompose: SlowLink and Drift both see a stalled link; one
// decision carries both the exclusion and the measured capacity.
func TestPoliciesCompose(t *testing.T) {
	in := driftInput([]OperatorEstimate{{Operator: "scan s", InputRate: 100}},
		[]LinkEstimate{{From: "e1", To: "h1", BandwidthBps: 4e4, Stalled: 0.9}})
	d := Policies{SlowLink{MaxStalled: 0.5}, Drift{Factor: 2, MinStalled: 0.2}}.Decide(in)
	if d == nil || len(d.Exclude) != 1 || d.Exclude[0] != "h1" || d.Live == nil || len(d.Live.Links) != 1 ||
		!strings.Contains(d.Reason, "stalled 90%") || !strings.Contains(d.Reason, "drift: link edge->hub") {
		t.Fatalf("decision %+v", d)
	}
	if d := (Policies{SlowLink{MaxStalled: 0.95}, Drift{Factor: 2, MinStalled: 0.95}}).Decide(in); d != nil {
		t.Fatalf("neither policy fires, decided %+v", d)
	}
}

// TestOverridesMerge: a later measurement of the same thing replaces the
// earlier one; others stay.
func TestOverridesMerge(t *testing.T) {
	o := &Overrides{}
	o.Merge(&Overrides{StreamRates: map[string]float64{"s": 200}, Models: []ModelTime{{Call: "m", Variant: "a", Workers: []string{"h1", "h2"}, MsPerItem: 1}},
		Links: []LinkCapacity{{From: "edge", To: "hub", Bps: 5}}})
	o.Merge(&Overrides{Models: []ModelTime{{Call: "m", Variant: "a", Workers: []string{"h1"}, MsPerItem: 3}}, Links: []LinkCapacity{{From: "edge", To: "hub", Bps: 7}}})
	if o.StreamRates["s"] != 200 || len(o.Models) != 2 || o.Models[0].MsPerItem != 3 || o.Models[1].Workers[0] != "h2" || o.Models[1].MsPerItem != 1 ||
		len(o.Links) != 1 || o.Links[0].Bps != 7 {
		t.Fatalf("merged %+v", o)
	}
}

// TestStalledCarriesOver: a sender that reports a 3 s wait at once (it
// counts a wait when it ends) reads as stalled for the intervals after, not
// as one capped interval.
func TestStalledCarriesOver(t *testing.T) {
	l := NewLive()
	t0 := time.Unix(1000, 0)
	link := relay.LinkID{Query: "q"}
	stalled := func(d time.Duration) []relay.LinkStats {
		return []relay.LinkStats{{Link: link, Direction: relay.Send, Bytes: 1, Stalled: d}}
	}
	ops := []dataflow.InstanceStats{{Operator: "scan s", OperatorID: 0}}
	l.Observe(t0, ops, stalled(0), nil, nil)
	l.Observe(t0.Add(time.Second), ops, stalled(0), nil, nil)
	l.Observe(t0.Add(2*time.Second), ops, stalled(3*time.Second), nil, nil)
	for k := 3; k <= 4; k++ {
		l.Observe(t0.Add(time.Duration(k)*time.Second), ops, stalled(3*time.Second), nil, nil)
	}
	// Samples 0, 1, 1, 1: 0 -> 0.3 -> 0.51 -> 0.657.
	near(t, "stalled", l.Estimates().Links[0].Stalled, 1-(1-Alpha)*(1-Alpha)*(1-Alpha))
}
