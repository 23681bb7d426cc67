package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/planner/logical"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// DefaultReplanBudget bounds the exact search of a planning with live
// numbers (the optimizer's auto strategy proves its plan optimal within
// it, else keeps the best found, never worse than JellyBean's): the
// control loop may re-plan every second, and live numbers (a link at its
// measured capacity, a model slower than profiled) can make the search far
// harder than the catalog's at submission, up to the 2 s default.
const DefaultReplanBudget = 40 * time.Millisecond

func (c *Coordinator) replanBudget() time.Duration {
	if c.cfg.ReplanBudget > 0 {
		return c.cfg.ReplanBudget
	}
	return DefaultReplanBudget
}

// applyLive puts a policy's live numbers in place of the catalog's and the
// infrastructure's for one planning of a bound query: stream rates and
// model latencies on the bound plan's own copies of its streams and models
// (the catalog they came from is left as it is), tier link capacities on
// inf, which optimize built for this planning.
func applyLive(bound *logical.Plan, inf *infra.Infra, o *control.Overrides) {
	if o == nil {
		return
	}
	logical.Walk(bound.Root, func(n logical.Node) bool {
		switch x := n.(type) {
		case *logical.Scan:
			if x.Stream != nil {
				if r, ok := o.StreamRates[x.Stream.Name]; ok && r > 0 {
					s := *x.Stream
					s.Rate = r
					x.Stream = &s
				}
			}
		case *logical.LateralModel:
			x.Model = liveModel(x.Name, x.Model, o.Models)
		}
		return true
	})
	for _, l := range o.Links {
		if l.Bps <= 0 {
			continue
		}
		mbps := l.Bps * 8 / 1e6
		found := false
		for i, fl := range inf.Links {
			if fl.From == l.From && fl.To == l.To {
				cp := *fl
				cp.BandwidthMbps = mbps
				inf.Links[i], found = &cp, true
			}
		}
		if !found {
			// The pair was priced by the default link: name it now, at the
			// default's price, with its measured capacity.
			nl := &infra.Link{From: l.From, To: l.To, BandwidthMbps: mbps}
			if inf.DefaultLink != nil {
				nl.CostPerGB = inf.DefaultLink.CostPerGB
			}
			inf.Links = append(inf.Links, nl)
		}
	}
}

// liveThroughput is the throughput target of a planning with live
// numbers: a stream measured faster than the query's THROUGHPUT (or the
// script's setting, set) raises it to the stream's rate, or the plan
// would fall behind the stream it was re-planned for.
func liveThroughput(bound *logical.Plan, set float64, o *control.Overrides) float64 {
	if o == nil || len(o.StreamRates) == 0 {
		return set
	}
	target := set
	if target == 0 {
		target = bound.Objectives.Throughput
	}
	raised := false
	logical.Walk(bound.Root, func(n logical.Node) bool {
		if x, ok := n.(*logical.Scan); ok && x.Stream != nil {
			if r := o.StreamRates[x.Stream.Name]; r > target {
				target, raised = r, true
			}
		}
		return true
	})
	if !raised {
		return set
	}
	return target
}

// liveModel is m with the measured times of call's variants on their
// workers (by worker name, which the optimizer prefers to the type).
func liveModel(call string, m *catalog.Model, times []control.ModelTime) *catalog.Model {
	if m == nil {
		return m
	}
	var out *catalog.Model
	for _, t := range times {
		if t.Call != call || t.MsPerItem <= 0 {
			continue
		}
		if out == nil {
			cp := *m
			cp.Variants = slices.Clone(m.Variants)
			out = &cp
		}
		for i, v0 := range out.Variants {
			if v0.Name != t.Variant {
				continue
			}
			cp := *v0
			v := &cp
			out.Variants[i] = v
			v.Latency = maps.Clone(v.Latency)
			if v.Latency == nil {
				v.Latency = map[string]catalog.Latency{}
			}
			for _, w := range t.Workers {
				v.Latency[w] = catalog.Latency{P50: t.MsPerItem, P75: t.MsPerItem, P90: t.MsPerItem}
			}
		}
	}
	if out == nil {
		return m
	}
	return out
}

// assumedOf is what a plan assumed of what the runtime measures, for the
// drift policy: sources' rates, model calls' times per item on their
// workers, and the traffic and capacity of tier pairs.
func assumedOf(p *physical.Plan, ws []deploy.Worker) *control.Assumed {
	if p == nil {
		return nil
	}
	a := &control.Assumed{Tiers: map[string]string{}}
	for _, w := range ws {
		a.Tiers[w.Name] = w.Tier
	}
	for _, s := range p.Sources {
		if s.Stream != "" {
			a.Streams = append(a.Streams, control.AssumedStream{Stream: s.Stream, Rate: s.Rate})
		}
	}
	for _, op := range p.Operators {
		if op.Variant == "" || op.Model == "" || p.Problem == nil {
			continue
		}
		m := control.AssumedModel{Call: op.Name, Variant: op.Variant, Demand: op.Demand}
		var sum float64
		n := 0
		for _, w := range op.Workers {
			m.Workers = append(m.Workers, w.Name)
			if ms, ok := latencyOf(p, op.Name, op.Variant, w.Name, w.Type); ok {
				sum += ms
				n++
			}
		}
		if n > 0 {
			m.MsPerItem = sum / float64(n)
		}
		a.Models = append(a.Models, m)
	}
	for _, l := range p.Links {
		const mib = 1024 * 1024 // the planner's MB
		a.Links = append(a.Links, control.AssumedLink{From: l.From, To: l.To, NeedBps: l.MBps * mib, CapacityBps: l.BandwidthMBps * mib})
	}
	return a
}

// latencyOf is the per-item latency the plan's problem priced variant of
// operator op at on a worker (by name, else by type), as the cost model
// looks it up.
func latencyOf(p *physical.Plan, op, variant, worker, typ string) (float64, bool) {
	for _, o := range p.Problem.Operators {
		if o.Name != op {
			continue
		}
		for _, v := range o.Variants {
			if v.Name != variant {
				continue
			}
			if ms, ok := v.LatencyMs[worker]; ok {
				return ms, true
			}
			ms, ok := v.LatencyMs[typ]
			return ms, ok
		}
	}
	return 0, false
}

// choiceOf is a plan's variant and worker choice as the plan history shows
// it: "classify=mlp-large; model classify@h1, sink@c1, ..." (operators in
// plan order, each with its workers).
func choiceOf(p *deploy.Placement, variants map[string]string) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	keys := slices.Sorted(maps.Keys(variants))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s; ", k, variants[k])
	}
	for i, op := range p.Operators {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(op.Name + "@" + strings.Join(workerNames(p, op), "+"))
	}
	return b.String()
}

func workerNames(p *deploy.Placement, op deploy.OperatorPlan) []string {
	out := make([]string, 0, len(op.Workers))
	for _, w := range op.Workers {
		if w >= 0 && w < len(p.Workers) {
			out = append(out, p.Workers[w])
		}
	}
	sort.Strings(out)
	return out
}

// samePlan says whether two placements, with their variants, run the same
// operators with the same variants on the same workers: a re-plan that
// finds the same plan keeps the query running as it is.
func samePlan(a, b *deploy.Placement, va, vb map[string]string) bool {
	if a == nil || b == nil || len(a.Operators) != len(b.Operators) || !maps.Equal(va, vb) {
		return false
	}
	for i := range a.Operators {
		if a.Operators[i].Name != b.Operators[i].Name || !slices.Equal(workerNames(a, a.Operators[i]), workerNames(b, b.Operators[i])) {
			return false
		}
	}
	return true
}
