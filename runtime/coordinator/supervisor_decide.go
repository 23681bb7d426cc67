package coordinator

import (
	"time"

	"github.com/tierflow/tierflow/runtime/control"
)

// decide (with s.mu held) asks the policies about a running query and
// starts the re-plan one asks for: the SLO policy of a LATENCY query at
// every status report (a link that steps down must be met within the
// report's half second, not the next second: its frames queue and miss
// their deadline meanwhile; the policy holds its own step ups back), the
// others at most once a second (less often after a re-plan kept the plan:
// keptBackoff). registered are the workers the coordinator knows, by name.
func (s *supervisor) decide(now time.Time, registered []string) {
	cfg := &s.c.cfg
	var sp control.Policy
	if s.latency != nil && !cfg.NoSLOPolicy {
		if sp = cfg.SLOPolicy; sp == nil {
			sp = control.DefaultJellyfish
		}
	}
	if sp != nil {
		s.sampleSLO(now)
	}
	if sp == nil && cfg.Policy == nil || s.state != genRunning || !s.replayable || s.info.Estimates == nil {
		return
	}
	second := now.Sub(s.decided) >= time.Second
	if !second && sp == nil {
		return
	}
	if second {
		s.decided = now
	}
	if s.kept.gen == s.info.Generation && now.Before(s.kept.until) {
		return // a re-plan kept this plan lately: back off (keptBackoff)
	}
	var policies control.Policies
	if sp != nil {
		policies = append(policies, sp)
	}
	if second && cfg.Policy != nil {
		policies = append(policies, cfg.Policy)
	}
	if len(policies) == 0 {
		return
	}
	in := control.PolicyInput{Query: s.info.Query, Workers: s.info.Workers, Age: now.Sub(s.planned), Replans: len(s.info.Replans),
		Estimates: *s.info.Estimates, Assumed: s.assumed, Latency: s.latency, Registered: registered}
	d := policies.Decide(in)
	if d == nil {
		return
	}
	s.state = genCuttingOver
	go s.replan(d, s.info.Generation)
}

// keptBackoff holds the policy off a query whose re-plan kept its plan:
// until is when the policy may run again for generation gen, wait the
// back-off that led there (doubling from minKeptBackoff to maxKeptBackoff).
type keptBackoff struct {
	gen   int
	wait  time.Duration
	until time.Time
}

const (
	minKeptBackoff = 2 * time.Second
	maxKeptBackoff = 30 * time.Second
)
