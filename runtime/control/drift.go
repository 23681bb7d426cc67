package control

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Assumed is what the plan a query runs by assumed of the numbers the
// runtime measures: the other side of Drift's comparison. The coordinator
// fills it from the optimizer's plan (after a re-plan with live numbers,
// from that plan, so the live numbers become the assumption); a query
// placed by rules has none.
type Assumed struct {
	// Streams are the source streams at the rates the plan was made for.
	Streams []AssumedStream `json:"streams,omitempty"`
	// Models are the plan's model calls: variant, workers, time per item.
	Models []AssumedModel `json:"models,omitempty"`
	// Links are the tier pairs the plan sends data over.
	Links []AssumedLink `json:"links,omitempty"`
	// Tiers names each registered worker's tier, to fold the relay's
	// worker-to-worker links into the plan's tier links.
	Tiers map[string]string `json:"tiers,omitempty"`
}

// AssumedStream is a source stream at its planned rate (rows/s).
type AssumedStream struct {
	Stream string  `json:"stream"`
	Rate   float64 `json:"rate"`
}

// AssumedModel is one model call of the plan (Call is its name in the
// query, as the runtime's "model <call>" operator is named).
type AssumedModel struct {
	Call    string   `json:"call"`
	Variant string   `json:"variant"`
	Workers []string `json:"workers"`
	// MsPerItem is the latency per item the plan priced the call at on its
	// workers (their mean); Demand the items per second it planned into
	// the call (the stream's rate times the estimated selectivity of the
	// filters and joins before it).
	MsPerItem float64 `json:"ms_per_item"`
	Demand    float64 `json:"demand"`
}

// AssumedLink is the traffic the plan puts on a tier pair and the pair's
// capacity (bytes per second; capacity 0: unlimited).
type AssumedLink struct {
	From        string  `json:"from"`
	To          string  `json:"to"`
	NeedBps     float64 `json:"need_bps"`
	CapacityBps float64 `json:"capacity_bps,omitempty"`
}

// Overrides are live numbers that replace the catalog's and the
// infrastructure's when the coordinator plans a query again: the one input
// by which a policy tells the planner what it measured.
type Overrides struct {
	// StreamRates are rows per second by stream name.
	StreamRates map[string]float64 `json:"stream_rates,omitempty"`
	// Models are measured times per item of a call's variant on workers.
	Models []ModelTime `json:"models,omitempty"`
	// Links are measured capacities of tier pairs.
	Links []LinkCapacity `json:"links,omitempty"`
	// InputRatios are measured items into a model call per item of the
	// query's stream, by call: the selectivity of what runs before it.
	InputRatios map[string]float64 `json:"input_ratios,omitempty"`
}

// ModelTime is a model call's variant measured at MsPerItem on Workers.
type ModelTime struct {
	Call      string   `json:"call"`
	Variant   string   `json:"variant"`
	Workers   []string `json:"workers"`
	MsPerItem float64  `json:"ms_per_item"`
}

// LinkCapacity is a tier pair measured to carry at most Bps bytes a second.
type LinkCapacity struct {
	From string  `json:"from"`
	To   string  `json:"to"`
	Bps  float64 `json:"bps"`
}

func (o *Overrides) empty() bool {
	return o == nil || len(o.StreamRates) == 0 && len(o.Models) == 0 && len(o.Links) == 0 && len(o.InputRatios) == 0
}

// Merge adds b's live numbers to o; b's win where both measured the same
// thing (a stream; a call's variant on a worker; a tier pair). The
// coordinator keeps a query's merged overrides, so a number measured once
// stays in the query's planning when another drifts: a variant measured
// slow is not taken back at its catalog time by the next re-plan.
func (o *Overrides) Merge(b *Overrides) {
	if b == nil {
		return
	}
	for k, v := range b.StreamRates {
		if o.StreamRates == nil {
			o.StreamRates = map[string]float64{}
		}
		o.StreamRates[k] = v
	}
	for _, m := range b.Models {
		for _, w := range m.Workers {
			one := ModelTime{Call: m.Call, Variant: m.Variant, Workers: []string{w}, MsPerItem: m.MsPerItem}
			i := slices.IndexFunc(o.Models, func(x ModelTime) bool {
				return x.Call == m.Call && x.Variant == m.Variant && slices.Equal(x.Workers, one.Workers)
			})
			if i >= 0 {
				o.Models[i] = one
			} else {
				o.Models = append(o.Models, one)
			}
		}
	}
	for k, v := range b.InputRatios {
		if o.InputRatios == nil {
			o.InputRatios = map[string]float64{}
		}
		o.InputRatios[k] = v
	}
	for _, l := range b.Links {
		i := slices.IndexFunc(o.Links, func(x LinkCapacity) bool { return x.From == l.From && x.To == l.To })
		if i >= 0 {
			o.Links[i] = l
		} else {
			o.Links = append(o.Links, l)
		}
	}
}

// Drift re-plans a query with live numbers when one drifts from what its
// plan assumed:
//   - a source stream's rate above Factor times the planned rate (a rate
//     below it is what a stream that pauses or ends looks like, and the
//     plan still keeps up, so it is no trigger);
//   - a model call's time per item (model time per batch over rows per
//     batch) above Factor times, or below 1/Factor of, the plan's;
//   - the selectivity before a model call (rows into the call per row of
//     the stream) past Factor either way of the plan's estimate, while the
//     stream flows (at least 1/Factor of its planned rate); only for a
//     query over one stream, where that ratio is the filters' and joins';
//   - a tier link that carries less than 1/Factor of what the plan needs
//     on it while its senders wait at least MinStalled of the time (the
//     link, not the source, is what holds the data back: what it carries
//     is its capacity; a link a little short of the plan's traffic on a
//     busy machine is no trigger).
//
// The Decision carries the live numbers as Overrides; the coordinator runs
// the planner (variant choice and placement) with them in place of the
// catalog's and the infrastructure's, and cuts over only when the new plan
// differs. The plan made with live numbers becomes the assumption, so a
// number that stays where it drifted to asks once, not every second.
type Drift struct {
	Factor     float64
	MinStalled float64
	// MinAge lets a new plan settle (a cut-over replays the streams to the
	// committed epoch as fast as they read) before it is judged;
	// MinSamples are the estimates' samples it needs.
	MinAge     time.Duration
	MinSamples int
}

// DefaultDrift is the drift policy of `--replan`: 2x on rates and model
// times, a tier link short of the plan's traffic while its senders wait
// 20% of the time (a shaped sender counts a wait when it ends, so a slow
// link's share climbs in steps), judged after 3 s and 3 samples.
var DefaultDrift = Drift{Factor: 2, MinStalled: 0.2, MinAge: 3 * time.Second, MinSamples: 3}

func (p Drift) Decide(in PolicyInput) *Decision {
	a := in.Assumed
	if a == nil || in.Age < p.MinAge || in.Estimates.Samples < max(p.MinSamples, 2) {
		return nil
	}
	f := p.Factor
	if f <= 1 {
		f = 2
	}
	ops := map[string]OperatorEstimate{}
	for _, e := range in.Estimates.Operators {
		ops[e.Operator] = e
	}
	var reasons []string
	o := &Overrides{}
	for _, s := range a.Streams {
		e, ok := ops["scan "+s.Stream]
		if !ok || s.Rate <= 0 || e.InputRate <= f*s.Rate {
			continue
		}
		if o.StreamRates == nil {
			o.StreamRates = map[string]float64{}
		}
		o.StreamRates[s.Stream] = e.InputRate
		reasons = append(reasons, fmt.Sprintf("stream %s at %.4g rows/s, planned %.4g (over %gx)", s.Stream, e.InputRate, s.Rate, f))
	}
	for _, m := range a.Models {
		e, ok := ops["model "+m.Call]
		if !ok || m.MsPerItem <= 0 || e.ModelMsPerBatch <= 0 || e.BatchRows <= 0 {
			continue
		}
		live := e.ModelMsPerBatch / e.BatchRows
		if live <= f*m.MsPerItem && live >= m.MsPerItem/f {
			continue
		}
		o.Models = append(o.Models, ModelTime{Call: m.Call, Variant: m.Variant, Workers: m.Workers, MsPerItem: live})
		reasons = append(reasons, fmt.Sprintf("model %s (%s) at %.4g ms per item, planned %.4g (past %gx)", m.Call, m.Variant, live, m.MsPerItem, f))
	}
	if len(a.Streams) == 1 {
		s := a.Streams[0]
		src, ok := ops["scan "+s.Stream]
		for _, m := range a.Models {
			e, ok2 := ops["model "+m.Call]
			if !ok || !ok2 || s.Rate <= 0 || m.Demand <= 0 || src.InputRate < s.Rate/f || e.InputRate <= 0 {
				continue
			}
			planned, live := m.Demand/s.Rate, e.InputRate/src.InputRate
			if live <= f*planned && live >= planned/f {
				continue
			}
			if o.InputRatios == nil {
				o.InputRatios = map[string]float64{}
			}
			o.InputRatios[m.Call] = live
			reasons = append(reasons, fmt.Sprintf("%.3g rows into model %s per row of %s, planned %.3g (past %gx)", live, m.Call, s.Stream, planned, f))
		}
	}
	for _, l := range p.links(in, a, f) {
		o.Links = append(o.Links, LinkCapacity{From: l.from, To: l.to, Bps: l.bps})
		reasons = append(reasons, fmt.Sprintf("link %s->%s carries %.4g B/s, the plan needs %.4g (under 1/%g; senders stalled %.0f%%)", l.from, l.to, l.bps, l.need, f, 100*l.stalled))
	}
	if o.empty() {
		return nil
	}
	return &Decision{Reason: "drift: " + strings.Join(reasons, "; "), Constraints: Constraints{Live: o}}
}

type tierLoad struct {
	from, to           string
	bps, need, stalled float64
}

// links folds the live worker links into tier pairs and returns those
// carrying less than 1/f of the plan's traffic while stalled.
func (p Drift) links(in PolicyInput, a *Assumed, f float64) []tierLoad {
	loads := map[[2]string]*tierLoad{}
	for _, l := range in.Estimates.Links {
		from, to := a.Tiers[l.From], a.Tiers[l.To]
		if from == "" || to == "" || from == to {
			continue
		}
		k := [2]string{from, to}
		t := loads[k]
		if t == nil {
			t = &tierLoad{from: from, to: to}
			loads[k] = t
		}
		t.bps += l.BandwidthBps
		t.stalled = max(t.stalled, l.Stalled)
	}
	var out []tierLoad
	for _, al := range a.Links {
		t := loads[[2]string{al.From, al.To}]
		if t == nil || al.NeedBps <= 0 || t.stalled < p.MinStalled || t.bps*f >= al.NeedBps {
			continue
		}
		t.need = al.NeedBps
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from+out[i].to < out[j].from+out[j].to })
	return out
}

// Policies asks every policy and merges what they ask for into one
// Decision (reasons joined, exclusions and live numbers together), so
// policies compose instead of one knowing of another.
type Policies []Policy

// DefaultPolicies are the policies of `--replan`.
var DefaultPolicies = Policies{DefaultSlowLink, DefaultDrift}

func (ps Policies) Decide(in PolicyInput) *Decision {
	var out *Decision
	for _, p := range ps {
		d := p.Decide(in)
		if d == nil {
			continue
		}
		if out == nil {
			out = &Decision{}
		}
		if out.Reason != "" {
			out.Reason += "; "
		}
		out.Reason += d.Reason
		out.Constraints.Add(d.Constraints)
	}
	return out
}
