package policy

import (
	"time"

	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Jellyfish is the latency-SLO policy (control.Jellyfish) on the engine:
// for a query WITH (LATENCY <= x) whose model calls have a zoo of input
// sizes, it picks each call's variant (and with it the input size its rows
// are resized to) from its sources' links, at every status report (a link
// that steps down must be met within the report's half second, not the
// next second: its frames queue and miss their deadline meanwhile; the
// rule holds its own step ups back). Its state is the query's zoo
// (jellyfish_input.go), and it keeps the query's SLO timeline
// (QueryInfo.SLOTimeline).
type Jellyfish struct {
	// Rule decides (nil: control.DefaultJellyfish).
	Rule control.Policy
}

// JellyfishName is the Jellyfish policy's name.
const JellyfishName = "jellyfish"

func (Jellyfish) Name() string     { return JellyfishName }
func (Jellyfish) Cadence() Cadence { return Cadence{Scale: PerQuery, EveryReport: true} }

func (j Jellyfish) Attach(p *Placed) control.Policy {
	in := zooOf(p)
	if in == nil {
		return nil
	}
	rule := j.Rule
	if rule == nil {
		rule = control.DefaultJellyfish
	}
	return &jellyfishState{rule: rule, in: in}
}

// zooOf is what the policy knows of a placed query's model calls: nil
// without a LATENCY bound or a call to adapt. The calls are the plan's
// the workers run (a call per source of a query over several, with the
// sources the placement runs them on, when the optimizer placed it).
func zooOf(p *Placed) *control.LatencyInput {
	if p.Bound == nil || p.Root == nil {
		return nil
	}
	in := latencyInput(p.Root, p.Bound.Objectives.LatencyMs, p.Workers, p.Variants, p.Settings[deploy.AdaptSetting])
	if p.Plan != nil {
		callSources(in, p.Root, p.Placement)
	}
	return in
}

type jellyfishState struct {
	rule control.Policy
	in   *control.LatencyInput
	// sampled is when the SLO timeline last took a sample (Observe).
	sampled time.Time
}

func (s *jellyfishState) Decide(in control.PolicyInput) *control.Decision {
	if s.in == nil {
		return nil
	}
	in.Latency = s.in
	return s.rule.Decide(in)
}

// FirstPlan is the ceiling the rule would set at the first report for a
// call whose batches follow their link (control.Jellyfish.FirstPlan),
// before the query runs.
func (s *jellyfishState) FirstPlan() *control.Decision {
	if s.in == nil {
		return nil
	}
	if f, ok := s.rule.(interface {
		FirstPlan(*control.LatencyInput) *control.Decision
	}); ok {
		return f.FirstPlan(s.in)
	}
	return nil
}

// Placed follows the variants of a new generation; a kept plan runs what
// it ran.
func (s *jellyfishState) Placed(p *Placed) {
	if !p.Kept {
		s.in = zooOf(p)
	}
}

// Observe adds the live estimates of the query's links to its SLO
// timeline, about once a second: also while a re-plan is under way (the
// links keep their bandwidth), and again at the next report when the
// estimates had no acks yet, so that a short run or a query re-planned at
// its first estimate still shows its links.
func (s *jellyfishState) Observe(now time.Time, info *deploy.QueryInfo) {
	if s.in == nil || info.Estimates == nil || len(info.SLOTimeline) >= control.MaxSLOSamples || now.Sub(s.sampled) < time.Second {
		return
	}
	if smp := control.SLOSamples(now.Sub(info.Started).Seconds(), *info.Estimates, s.in); len(smp) > 0 {
		info.SLOTimeline = append(info.SLOTimeline, smp...)
		s.sampled = now
	}
}
