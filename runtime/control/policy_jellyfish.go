package control

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
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
// A call whose adapt step picks each batch's side (LatencyCall.SidesPerBatch,
// the default for a LATENCY query over a size family) follows its link per
// batch, by one rule with nothing to tune per trace (operators/ml's
// sidePlan: a side fits when its frames arrive in time, and its stream
// fits, at the bandwidth the link gives with the query's probability, read
// from the link's measured distribution). Its pinned variant is only a
// ceiling over those sides, and only the workers' compute holds it down
// (the scheduler with the links left out): a change of the link costs no
// cut-over and no frame. A call whose frames all go at its variant's size
// is re-planned by the link (MaxUtilization, StepUpAge, StepUpUtilization).
type Jellyfish struct {
	// MinAge lets a new plan settle (its first seconds replay) and its
	// links show acks before it is judged.
	MinAge time.Duration
	// WholeFrames weighs every frame at its variant's size on the link even
	// where the adapt step picks sides per batch: the ceiling then follows
	// the link by re-plans (the cut-over path, which tests exercise).
	WholeFrames bool
	// A call whose frames all go at its variant's size (no per-batch
	// sides, or WholeFrames) is still re-planned by the link's PlanBps
	// with the margins of before: a source's rows may take MaxUtilization
	// of it, and a step up from a plan the policy chose waits until the
	// plan is StepUpAge old and needs StepUpUtilization. (The tail rule
	// of the batches, tried here too, read host jitter on an unshaped
	// link and a stream's rate just after a cut-over, which its link
	// held back, as evidence: TestJellyfishPerSource flapped and dropped.)
	MaxUtilization    float64
	StepUpAge         time.Duration
	StepUpUtilization float64
	Anneal            JFAnneal
}

// DefaultJellyfish is the policy the coordinator runs for LATENCY queries.
var DefaultJellyfish = Jellyfish{MinAge: time.Second, MaxUtilization: 0.6, StepUpAge: 5 * time.Second, StepUpUtilization: 0.5, Anneal: DefaultJFAnneal}

func (p Jellyfish) Decide(in PolicyInput) *Decision {
	if in.Latency == nil || in.Latency.SLOMs <= 0 || in.Age < p.MinAge || in.Estimates.Samples < 1 {
		return nil
	}
	// One client per source worker: the slowest of its links with acks.
	bw := map[string]float64{}
	for _, l := range in.Estimates.Links {
		if l.AckBandwidthBps <= 0 || l.From == "" || l.From == l.To {
			continue
		}
		v := l.Bandwidth().PlanBps()
		if b, ok := bw[l.From]; !ok || v < b {
			bw[l.From] = v
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
		sided := call.SidesPerBatch && !p.WholeFrames
		for _, s := range mine {
			c := JFClient{Name: s, Rate: rate, SLOMs: in.Latency.SLOMs, BandwidthBps: bw[s], MaxUtilization: p.MaxUtilization}
			if sided {
				// The batches follow the link: the ceiling is compute's.
				c.BandwidthBps, c.MaxUtilization = math.Inf(1), 0
			}
			pr.Clients = append(pr.Clients, c)
		}
		cur, pick, _ := p.schedule(call, pr) // nobody served: 0, the smallest rows have the best chance
		if pick == cur && call.Variant != "" {
			continue
		}
		if !sided && call.Variant != "" && call.Variants[pick].larger(call.Variants[cur]) {
			if pick = p.stepUp(pr, cur, pick, in); pick == cur {
				continue
			}
		}
		v := call.Variants[pick]
		pins[call.Call] = v.Name
		var links []string
		for _, s := range mine {
			links = append(links, fmt.Sprintf("%s %.0f kbit/s", s, bw[s]*8/1000))
		}
		by := "over " + strings.Join(links, ", ")
		if sided {
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

// FirstPlan is what Decide would ask for at the query's first report for
// the calls whose batches follow their link (LatencyCall.SidesPerBatch):
// their ceiling is the workers' compute's alone, which the placement
// already tells, so it is set before the query runs rather than by a
// cut-over once it does. The stream's rate is not measured yet: a row a
// second per source, the rate Decide assumes before one is; a ceiling the
// real rate's compute cannot carry is stepped down at a report. Calls
// whose frames go whole wait for their links' numbers.
func (p Jellyfish) FirstPlan(in *LatencyInput) *Decision {
	if in == nil || in.SLOMs <= 0 || p.WholeFrames {
		return nil
	}
	pins := map[string]string{}
	var why []string
	for _, call := range in.Calls {
		if !call.SidesPerBatch || len(call.Variants) == 0 {
			continue
		}
		pr := &JFProblem{Variants: call.Variants, Workers: 1}
		for i := range max(1, len(call.Sources)) {
			pr.Clients = append(pr.Clients, JFClient{Name: fmt.Sprint(i), Rate: 1, SLOMs: in.SLOMs, BandwidthBps: math.Inf(1)})
		}
		cur, pick, served := p.schedule(call, pr)
		if !served || pick == cur {
			continue
		}
		v := call.Variants[pick]
		pins[call.Call] = v.Name
		why = append(why, fmt.Sprintf("%s: %s -> %s (%dx%d), a ceiling by the workers' compute for LATENCY %g ms (each batch's side follows its link)",
			call.Call, call.Variant, v.Name, v.Side, v.Side, in.SLOMs))
	}
	if len(pins) == 0 {
		return nil
	}
	return &Decision{Constraints: Constraints{Variants: pins}, Reason: "jellyfish, first plan: " + strings.Join(why, "; ")}
}

// schedule is the variant call runs now (cur) and the one the scheduler
// gives its clients pr (pick; 0 when it serves none), deterministic for
// given numbers.
func (p Jellyfish) schedule(call LatencyCall, pr *JFProblem) (cur, pick int, served bool) {
	for j, v := range call.Variants {
		if v.Name == call.Variant {
			cur = j
		}
	}
	s := pr.Schedule([]int{cur}, p.anneal())
	if s.Served == 0 {
		return cur, 0, false
	}
	return cur, s.Workers[0].Variant, true
}

// anneal is p.Anneal seeded for deterministic schedules.
func (p Jellyfish) anneal() JFAnneal {
	a := p.Anneal
	a.Seed = 1
	return a
}

// stepUp is the variant a step up from cur to pick may take: cur while
// a plan the policy chose is younger than StepUpAge, else the largest the
// schedule allows with StepUpUtilization of every link (never below cur).
// The submitted plan is not held: the planner chose it without live
// numbers.
func (p Jellyfish) stepUp(pr *JFProblem, cur, pick int, in PolicyInput) int {
	if in.Replans > 0 && in.Age < p.StepUpAge {
		return cur
	}
	if p.StepUpUtilization <= 0 {
		return pick
	}
	strict := pr.withClients(func(c *JFClient) { c.MaxUtilization = p.StepUpUtilization })
	s := strict.Schedule([]int{cur}, p.anneal())
	if s.Served == 0 || !pr.Variants[s.Workers[0].Variant].larger(pr.Variants[cur]) {
		return cur
	}
	return s.Workers[0].Variant
}

// larger reports whether v is a step up from w: more bytes a row on the
// link, or as many at a larger input side (a call on encoded frames, which
// cross whole whatever the variant: a larger side costs compute only, and
// the budget the link leaves for it is what a step up must wait to see).
func (v JFVariant) larger(w JFVariant) bool {
	return v.Bytes > w.Bytes || v.Bytes == w.Bytes && v.Side > w.Side
}

// withClients is a copy of pr whose clients (copies too) f has changed.
func (pr *JFProblem) withClients(f func(*JFClient)) *JFProblem {
	q := *pr
	q.Clients = append([]JFClient(nil), pr.Clients...)
	for i := range q.Clients {
		f(&q.Clients[i])
	}
	return &q
}
