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
	SLOMs float64       `json:"slo_ms"`
	Calls []LatencyCall `json:"calls"`
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
	// is a ceiling, not what every frame costs the link
	// (Jellyfish.SidesUtilization).
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
// twice a second per worker), it takes each source worker's uplink
// bandwidth as the relay's acks estimate it (the slowest of its links: a
// camera has one uplink), maps the sources that feed each
// model call to the call's variants with the scheduler (JFProblem.Schedule:
// DP for the mapping, annealing for the variant; one variant per call, as
// the engine runs one per call, and a call per source when a query reads
// several: LatencyCall.Sources) and asks for a re-plan that pins the
// chosen variant when it is not the one running. The new plan cuts over at the committed
// epoch (the coordinator's re-plan path), so the change of variant and of
// input size happens between epochs and no row is lost.
type Jellyfish struct {
	// MinAge lets a new plan settle (its first seconds replay) and its
	// links show acks before it is judged.
	MinAge time.Duration
	// MaxUtilization caps the share of a link's estimated bandwidth a
	// source's rows may take (JFClient.MaxUtilization).
	MaxUtilization float64
	// A step up to a larger input size waits until the plan is StepUpAge
	// old and needs the larger rows to fit in StepUpUtilization of the
	// link (0: MaxUtilization): a cut-over pauses the stream (a second or
	// so here), and a policy that stepped up as soon as the estimate
	// allowed it flapped on every wobble of the estimate (bench slo: 29
	// re-plans in 30 s for 4 clients, most between fit-20 and fit-28 at
	// the edge of what a link carried).
	// Stepping down is never held back, nor is the submitted plan's first
	// step up. With cut-overs of about 50 ms (the old generation answers
	// its stop with the epoch it committed), a 2-3 s hold still flapped:
	// bench slo on step-heavy.csv, 53-64 re-plans and 3-4% missed against
	// 37 and 1% with 5 s.
	StepUpAge         time.Duration
	StepUpUtilization float64
	// SidesUtilization replaces both caps for a call whose adapt step
	// picks sides per batch (LatencyCall.SidesPerBatch): a down-step of
	// the link is met by the next batch, not by a re-plan, so the ceiling
	// may stand above what the link carries as a stream (each frame at it
	// must still reach the model in time: JFProblem.BudgetMs). bench slo
	// on step-heavy.csv: 0.6/0.5 held the ceiling low after every dip
	// (accuracy 86.5-87.0%, static-smallest's 86.5%); at 1.5, 87.4-87.9%
	// with 20 re-plans instead of 30 and misses under 1.3%. A step up
	// then needs SidesUtilization x StepUpUtilization / MaxUtilization,
	// by the link's one-second mean; a step down only where compute holds
	// the ceiling up (Decide). 0 weighs every frame at its variant's size.
	SidesUtilization float64
	Anneal           JFAnneal
}

// DefaultJellyfish is the policy the coordinator runs for LATENCY queries.
// A source may use dataflow.MaxLinkUtilization of its link (the headroom
// must absorb a drop of the link until the policy has seen it and the
// cut-over is done, two to three seconds), and steps up to a larger input
// size at 50%.
var DefaultJellyfish = Jellyfish{MinAge: time.Second, MaxUtilization: dataflow.MaxLinkUtilization, StepUpAge: 5 * time.Second, StepUpUtilization: 0.5,
	SidesUtilization: 1.5, Anneal: DefaultJFAnneal}

func (p Jellyfish) Decide(in PolicyInput) *Decision {
	if in.Latency == nil || in.Latency.SLOMs <= 0 || in.Age < p.MinAge || in.Estimates.Samples < 1 {
		return nil
	}
	// One client per source worker: the slowest of its links with acks,
	// by the bandwidth a plan takes (dataflow.LinkBandwidth.PlanBps), and
	// by the one-second mean for a ceiling over per-batch sides (the
	// batches follow the latest acks themselves).
	bw, mean := map[string]float64{}, map[string]float64{}
	for _, l := range in.Estimates.Links {
		if l.AckBandwidthBps <= 0 || l.From == "" || l.From == l.To {
			continue
		}
		v := l.Bandwidth()
		if b, ok := bw[l.From]; !ok || v.PlanBps() < b {
			bw[l.From] = v.PlanBps()
		}
		if b, ok := mean[l.From]; !ok || v.Mean < b {
			mean[l.From] = v.Mean
		}
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
		rate := 1.0
		for _, o := range in.Estimates.Operators {
			if o.Operator == "model "+call.Call && o.InputRate > 0 {
				rate = o.InputRate / float64(len(mine))
			}
		}
		pp, linkBps := p, bw
		if call.SidesPerBatch && p.SidesUtilization > 0 {
			// The ceiling follows the link's one-second mean, not its
			// latest acks: the adapt step meets a fall at the next batch,
			// and a ceiling that followed the acks re-planned at every
			// fall of a link that flapped (42 cut-overs in 32 s of 0.4 s
			// steps, each costing about a frame).
			linkBps = mean
			// The step up keeps its margin under the cap (0.5 to 0.6 by
			// default): at one threshold a link's wobble flapped the
			// ceiling at every report.
			pp.MaxUtilization, pp.StepUpUtilization = p.SidesUtilization, p.SidesUtilization
			if p.StepUpUtilization > 0 && p.MaxUtilization > 0 {
				pp.StepUpUtilization = p.SidesUtilization * p.StepUpUtilization / p.MaxUtilization
			}
		}
		pr := &JFProblem{Variants: call.Variants, Workers: 1}
		for _, s := range mine {
			pr.Clients = append(pr.Clients, JFClient{Name: s, Rate: rate, SLOMs: in.Latency.SLOMs, BandwidthBps: linkBps[s], MaxUtilization: pp.MaxUtilization})
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
		if call.Variant != "" && call.SidesPerBatch && p.SidesUtilization > 0 && call.Variants[pick].Bytes < call.Variants[cur].Bytes {
			// A fall of the link is the adapt step's: it sends the next
			// batches small and they run on the variants of their size.
			// The ceiling steps down only where the links are not what
			// holds it up (the workers' compute): every cut-over costs
			// its stream about a frame.
			free := pr.withClients(func(c *JFClient) { c.BandwidthBps = math.Inf(1) })
			if fs := free.Schedule([]int{cur}, a); fs.Served > 0 && call.Variants[fs.Workers[0].Variant].Bytes >= call.Variants[cur].Bytes {
				continue
			}
		}
		if call.Variant != "" && call.Variants[pick].Bytes > call.Variants[cur].Bytes {
			if pick = pp.stepUp(pr, cur, pick, in, a); pick == cur {
				continue
			}
		}
		v := call.Variants[pick]
		pins[call.Call] = v.Name
		var links []string
		for _, c := range pr.Clients {
			links = append(links, fmt.Sprintf("%s %.0f kbit/s", c.Name, c.BandwidthBps*8/1000))
		}
		why = append(why, fmt.Sprintf("%s: %s -> %s (%dx%d) for LATENCY %g ms over %s", call.Call, call.Variant, v.Name, v.Side, v.Side,
			in.Latency.SLOMs, strings.Join(links, ", ")))
	}
	if len(pins) == 0 {
		return nil
	}
	return &Decision{Constraints: Constraints{Variants: pins}, Reason: "jellyfish: " + strings.Join(why, "; ")}
}

// stepUp is the variant a step up from cur to pick may take: cur while
// a plan the policy chose is younger than StepUpAge, else the largest the
// schedule allows with StepUpUtilization of every link (never below cur).
// The submitted plan is not held: the planner chose it without live
// numbers (the smallest variant, with nothing but a LATENCY bound), and
// holding it kept the stream on the smallest input size for its first
// StepUpAge whatever the link carried.
func (p Jellyfish) stepUp(pr *JFProblem, cur, pick int, in PolicyInput, a JFAnneal) int {
	if in.Replans > 0 && in.Age < p.StepUpAge {
		return cur
	}
	if p.StepUpUtilization <= 0 {
		return pick
	}
	strict := pr.withClients(func(c *JFClient) { c.MaxUtilization = p.StepUpUtilization })
	s := strict.Schedule([]int{cur}, a)
	if s.Served == 0 || pr.Variants[s.Workers[0].Variant].Bytes <= pr.Variants[cur].Bytes {
		return cur
	}
	return s.Workers[0].Variant
}

// withClients is a copy of pr whose clients (copies too) f has changed:
// the same problem asked with a stricter cap, or with unbounded links.
func (pr *JFProblem) withClients(f func(*JFClient)) *JFProblem {
	q := *pr
	q.Clients = append([]JFClient(nil), pr.Clients...)
	for i := range q.Clients {
		f(&q.Clients[i])
	}
	return &q
}
