package control

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tierflow/tierflow/dataflow"
)

// LatencyInput is what the Jellyfish policy knows of a latency-bound query
// beyond its live estimates: its LATENCY bound and each model call's zoo.
type LatencyInput struct {
	SLOMs float64 `json:"slo_ms"`
	// Percentile is the bound's PERCENTILE (0: none named): the share of
	// rows that must meet it (dataflow.Attainment).
	Percentile float64       `json:"percentile,omitempty"`
	Calls      []LatencyCall `json:"calls"`
}

// LatencyCall is one model call: the variant it runs now and its zoo,
// smallest first (each variant's Bytes are what one row takes on a link
// at its input size; BatchMs its profiled latency by batch size).
type LatencyCall struct {
	Call     string      `json:"call"`
	Variant  string      `json:"variant"`
	Variants []JFVariant `json:"variants"`
	// Sources are the workers whose streams feed the call (their scans
	// run there); empty: every source worker of the query. A query over
	// several sources has a call per source (rewrite.SplitCallsBySource),
	// so each gets the variant its own link allows.
	Sources []string `json:"sources,omitempty"`
	// SidesPerBatch: the call's adapt step picks each batch's side from
	// its link (any zoo size up to the variant's) and the model call runs
	// a smaller side on the variant of that size, so the pinned variant
	// is a ceiling, not what every frame costs the link (Jellyfish).
	SidesPerBatch bool `json:"sides_per_batch,omitempty"`
}

// feeds reports whether source worker s feeds c.
func (c LatencyCall) feeds(s string) bool {
	if len(c.Sources) == 0 {
		return true
	}
	for _, x := range c.Sources {
		if x == s {
			return true
		}
	}
	return false
}

// Jellyfish is the latency-SLO policy (Jellyfish 5) on the engine: every
// time the coordinator asks (at every status report of the query, about
// twice a second per worker), it maps the sources that feed each model call
// to the call's variants with the scheduler (JFProblem.Schedule: DP for the
// mapping, annealing for the variant; one variant per call, as the engine
// runs one per call, and a call per source when a query reads several:
// LatencyCall.Sources) and asks for a re-plan that pins the chosen variant
// when it is not the one running. The new plan cuts over at the committed
// epoch (the coordinator's re-plan path), so the change of variant and of
// input size happens between epochs and no row is lost.
//
// One rule decides, with nothing to tune per trace: a variant fits a source
// when its frames reach the model in time, and the link carries its stream,
// at the bandwidth the link gives with the probability the query asks for
// (its PERCENTILE, dataflow.Attainment), read from the link's measured
// distribution (dataflow.LinkBandwidth.TailBps), not from its mean with a
// headroom. It steps up as soon as that evidence says the larger variant
// fits and down as soon as it says the running one does not. A call whose
// adapt step picks each batch's side (LatencyCall.SidesPerBatch) applies
// the same rule per batch (operators/ml's sidePlan), at the next batch
// where a re-plan takes a cut-over: its pinned variant is a ceiling on
// those sides, and only the workers' compute holds it down (the scheduler
// with the links left out), so a change of the link costs no cut-over and
// no frame.
type Jellyfish struct {
	// MinAge lets a new plan settle (its first seconds replay) and its
	// links show acks before it is judged.
	MinAge time.Duration
	// WholeFrames weighs every frame at its variant's size on the link even
	// where the adapt step picks sides per batch: the ceiling then follows
	// the link by re-plans (the cut-over path, which tests exercise).
	WholeFrames bool
	Anneal      JFAnneal
}

// DefaultJellyfish is the policy the coordinator runs for LATENCY queries.
var DefaultJellyfish = Jellyfish{MinAge: time.Second, Anneal: DefaultJFAnneal}

func (p Jellyfish) Decide(in PolicyInput) *Decision {
	if in.Latency == nil || in.Latency.SLOMs <= 0 || in.Age < p.MinAge || in.Estimates.Samples < 1 {
		return nil
	}
	attain := dataflow.Attainment(in.Latency.Percentile)
	// One client per source worker: the slowest of its links with acks,
	// at the bandwidth it gives with probability attain.
	// stalled is the share of the time a source's sender waited for its
	// link: the rate measured behind it is the link's, not the stream's.
	bw, stalled := map[string]float64{}, map[string]float64{}
	for _, l := range in.Estimates.Links {
		if l.AckBandwidthBps <= 0 || l.From == "" || l.From == l.To {
			continue
		}
		tail := l.Bandwidth().TailBps(attain)
		if b, ok := bw[l.From]; !ok || tail < b {
			bw[l.From] = tail
		}
		stalled[l.From] = max(stalled[l.From], l.Stalled)
	}
	if len(bw) == 0 {
		return nil
	}
	var srcs []string
	for s := range bw {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	pins := map[string]string{}
	var why []string
	for _, call := range in.Latency.Calls {
		var mine []string
		for _, s := range srcs {
			if call.feeds(s) {
				mine = append(mine, s)
			}
		}
		if len(call.Variants) == 0 || len(mine) == 0 {
			continue
		}
		// A call with no operator running (a call's name before the plan
		// split it per source) has nothing to judge.
		rate, running := 1.0, false
		for _, o := range in.Estimates.Operators {
			if o.Operator == "model "+call.Call {
				running = true
				if o.InputRate > 0 {
					rate = o.InputRate / float64(len(mine))
				}
			}
		}
		if !running {
			continue
		}
		pr := &JFProblem{Variants: call.Variants, Workers: 1}
		for _, s := range mine {
			// A stream may fill the link's tail bandwidth: at it, the
			// link carries the stream with probability attain.
			// Behind a sender that waited a share of the time for its
			// link, the stream would run 1/(1-share) as fast unhindered:
			// the rate measured there is no evidence that more fits.
			c := JFClient{Name: s, Rate: rate / max(1e-3, 1-stalled[s]), SLOMs: in.Latency.SLOMs, BandwidthBps: bw[s], MaxUtilization: 1}
			if call.SidesPerBatch && !p.WholeFrames {
				// The batches follow the link: the ceiling is compute's.
				c.BandwidthBps, c.MaxUtilization = math.Inf(1), 0
			}
			pr.Clients = append(pr.Clients, c)
		}
		cur := 0
		for j, v := range call.Variants {
			if v.Name == call.Variant {
				cur = j
			}
		}
		a := p.Anneal
		a.Seed = 1 // deterministic for given estimates
		s := pr.Schedule([]int{cur}, a)
		pick := 0 // nobody served: the smallest rows have the best chance
		if s.Served > 0 {
			pick = s.Workers[0].Variant
		}
		if pick == cur && call.Variant != "" {
			continue
		}
		v := call.Variants[pick]
		pins[call.Call] = v.Name
		var links []string
		for _, s := range mine {
			links = append(links, fmt.Sprintf("%s %.0f kbit/s", s, bw[s]*8/1000))
		}
		by := fmt.Sprintf("over %s (the bandwidth each gives at P%g)", strings.Join(links, ", "), math.Round(attain*1000)/10)
		if call.SidesPerBatch && !p.WholeFrames {
			by = fmt.Sprintf("over %s, a ceiling by the workers' compute (each batch's side follows its link)", strings.Join(links, ", "))
		}
		why = append(why, fmt.Sprintf("%s: %s -> %s (%dx%d) for LATENCY %g ms %s", call.Call, call.Variant, v.Name, v.Side, v.Side,
			in.Latency.SLOMs, by))
	}
	if len(pins) == 0 {
		return nil
	}
	return &Decision{Constraints: Constraints{Variants: pins}, Reason: "jellyfish: " + strings.Join(why, "; ")}
}
